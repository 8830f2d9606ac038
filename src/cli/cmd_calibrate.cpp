#include <fmt/format.h>

#include <memory>

#include "cli/common.hpp"
#include "topoplan/calibration_runs.hpp"

namespace topoplan::cli {
namespace {

struct CalibrateArgs {
  std::string calibration;
  bool constants = false;
  OutputOptions out;
};

int run_calibrate(const CalibrateArgs& a) {
  Calibration cal;
  if (!a.calibration.empty()) apply_calibration_file(a.calibration, cal);
  std::string text;
  if (a.constants) {
    const bool md = a.out.format == "markdown";
    if (md) text += "| key | value | unit | source |\n|---|---|---|---|\n";
    for (const auto& e : calibration_entries(cal)) {
      const double v = *e.value * e.scale;
      text += md ? fmt::format("| `{}` | {:.4g} | {} | {} |\n", e.key, v, e.unit, e.source)
                 : fmt::format("{:<34} {:>10.4g}  {:<30} {}\n", e.key, v, e.unit, e.source);
    }
  } else {
    text = calibration_report(run_calibration(cal), a.out.format);
  }
  write_output(a.out.path, text);
  return 0;
}

}  // namespace

Runner register_calibrate(CLI::App& cmd) {
  auto a = std::make_shared<CalibrateArgs>();
  cmd.add_option("--calibration", a->calibration, "JSON file overriding calibration constants");
  cmd.add_flag("--constants", a->constants, "print the constants table instead of the error table");
  add_output_options(cmd, a->out, {"table", "markdown", "json"});
  return [a] { return run_calibrate(*a); };
}

}  // namespace topoplan::cli
