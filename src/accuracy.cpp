#include "topoplan/accuracy.hpp"

#include <fmt/format.h>

#include <map>
#include <mutex>
#include <tuple>
#include <vector>

namespace topoplan {

bool is_builtin(const Calibration& cal) {
  Calibration mine = cal, builtin;
  const auto a = calibration_entries(mine), b = calibration_entries(builtin);
  for (std::size_t i = 0; i < a.size(); ++i)
    if (*a[i].value != *b[i].value) return false;
  return true;
}

namespace {

AccuracyBand measure(const Regime& want) {
  const std::vector<CalibrationResult> rows = run_calibration_where(
      Calibration{},
      [&](const CalibrationResult& r) { return r.held_out && r.checked && r.kind == want.kind; });
  AccuracyBand out;
  out.measured = true;
  // Narrowest first: kind, architecture, precision and model type; kind, architecture and model
  // type; kind and model type; kind. Dense runs say nothing of an MoE model's error (its
  // all-to-all and expert layers), nor the reverse.
  for (int level = 0; level < 4; ++level) {
    std::vector<CalibrationResult> picked;
    for (const auto& r : rows)
      if ((level >= 2 || r.arch == want.arch) && (level >= 1 || r.precision == want.precision) &&
          (level >= 3 || r.moe == want.moe))
        picked.push_back(r);
    out.basis = to_string(want.kind);
    if (level < 2) out.basis = fmt::format("{}, {}", out.basis, to_string(want.arch));
    if (level < 1) out.basis = fmt::format("{}, {}", out.basis, precision_name(want.precision));
    if (level < 3) out.basis = fmt::format("{}, {}", out.basis, want.moe ? "MoE" : "dense");
    if (level == 0) out.wanted = out.basis;
    out.held_out = summarize(picked).all;
    if (out.held_out.runs >= kMinBandRuns) break;
  }
  return out;
}

}  // namespace

AccuracyBand accuracy_band(const Regime& r, const Calibration& cal) {
  if (!is_builtin(cal)) return {};
  static std::mutex mu;
  static std::map<std::tuple<RunKind, Arch, Precision, bool>, AccuracyBand> cache;
  const std::lock_guard<std::mutex> lock(mu);
  const auto key = std::make_tuple(r.kind, r.arch, r.precision, r.moe);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, measure(r)).first;
  return it->second;
}

}  // namespace topoplan
