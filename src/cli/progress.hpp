#pragma once
/// A progress bar on stderr for searches that run longer than a second, only when stderr is a
/// terminal (never in pipes, files or CI logs).
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>

namespace topoplan::cli {

class ProgressBar {
 public:
  ProgressBar()
      : enabled_(::isatty(STDERR_FILENO) == 1), start_(std::chrono::steady_clock::now()) {}
  [[nodiscard]] bool enabled() const { return enabled_; }
  void update(double fraction, std::int64_t plans) {
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (s < 1.0) return;
    const int width = 30, done = static_cast<int>(fraction * width);
    fmt::print(stderr, "\r[{:#<{}}{:<{}}] {:3.0f}%  {} plans  {:.1f} s", "", done, "", width - done,
               100 * fraction, plans, s);
    std::fflush(stderr);
    shown_ = true;
  }
  void finish() {
    if (shown_) fmt::print(stderr, "\r{:<80}\r", "");
  }

 private:
  bool enabled_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace topoplan::cli
