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
  // The held-back, checked rows of the kind, and the same model's rows shown but not checked.
  const auto gap = [&](const CalibrationResult& r) {
    return !r.checked && !want.model.empty() && r.model == want.model;
  };
  const std::vector<CalibrationResult> all =
      run_calibration_where(Calibration{}, [&](const CalibrationResult& r) {
        return r.kind == want.kind && ((r.held_out && r.checked) || gap(r));
      });
  std::vector<CalibrationResult> rows;
  AccuracyBand out;
  int same_model = 0;  // the model's own checked runs
  for (const auto& r : all) {
    if (gap(r)) {
      out.known_gap.add(r);  // checked or not
      continue;
    }
    if (!want.model.empty() && r.model == want.model) ++same_model;
    rows.push_back(r);
  }
  out.measured = true;
  if (out.known_gap.runs > 0) {
    out.model = want.model;
    out.model_checked_runs = same_model;
  }
  // Narrowest first: kind, architecture, precision and model type; kind, architecture and model
  // type; kind and model type; kind. Dense runs say nothing of an MoE model's error (its
  // all-to-all and expert layers), nor the reverse.
  for (int level = 0; level < 4; ++level) {
    std::vector<CalibrationResult> picked;
    for (const auto& r : rows)
      if ((level >= 2 || r.arch == want.arch) && (level >= 1 || r.precision == want.precision) &&
          (level >= 3 || r.moe == want.moe))
        picked.push_back(r);
    if (level == 0) {
      out.basis = regime_name(want.kind, want.arch, want.precision, want.moe);
      out.wanted = out.basis;
    } else {
      out.basis = to_string(want.kind);
      if (level < 2) out.basis = fmt::format("{}, {}", out.basis, to_string(want.arch));
      if (level < 3) out.basis = fmt::format("{}, {}", out.basis, want.moe ? "MoE" : "dense");
    }
    out.held_out = summarize(picked).all;
    if (out.held_out.runs >= kMinBandRuns) break;
  }
  return out;
}

}  // namespace

AccuracyBand accuracy_band(const Regime& r, const Calibration& cal) {
  if (!is_builtin(cal)) return {};
  static std::mutex mu;
  static std::map<std::tuple<RunKind, Arch, Precision, bool, std::string>, AccuracyBand> cache;
  const std::lock_guard<std::mutex> lock(mu);
  const auto key = std::make_tuple(r.kind, r.arch, r.precision, r.moe, r.model);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, measure(r)).first;
  return it->second;
}

}  // namespace topoplan
