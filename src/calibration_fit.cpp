// Choosing the fitted constants on a set of runs (calibrate --fit): coordinate descent over
// the calibration table's keys.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "topoplan/calibration_runs.hpp"
#include "topoplan/error.hpp"

namespace topoplan {

std::vector<FittedConstant> default_fitted_constants() {
  // key, start (filled from the calibration), value, range searched
  return {{"gemm_efficiency.ampere", 0, 0, 0.4, 0.9},
          {"gemm_efficiency.hopper", 0, 0, 0.4, 0.9},
          {"gemm_efficiency_fp8.hopper", 0, 0, 0.2, 0.9},
          {"gemm_efficiency_fp8.blackwell_ultra", 0, 0, 0.2, 0.9},
          {"gemm_efficiency_fp4.blackwell", 0, 0, 0.1, 0.9},
          {"gemm_efficiency_fp4.blackwell_ultra", 0, 0, 0.1, 0.9},
          {"attention_efficiency_fa2.hopper", 0, 0, 0.2, 0.8},
          {"elementwise_hidden_passes", 0, 0, 8, 11},
          {"decode_layer_overhead_us", 0, 0, 0, 200},
          {"decode_collective_overhead_us", 0, 0, 0, 100},
          {"decode_layer_overhead_us.fastertransformer", 0, 0, 0, 400},
          {"decode_collective_overhead_us.fastertransformer", 0, 0, 0, 100},
          {"decode_layer_overhead_us.fastertransformer-triton", 0, 0, 0, 400},
          {"request_overhead_ms.fastertransformer-triton", 0, 0, 0, 300},
          {"moe_layer_host_ms", 0, 0, 0, 50},
          {"moe_routed_copy_bytes", 0, 0, 0, 400},
          {"step_overhead_ms", 0, 0, 0, 2000}};
}

namespace {

double* entry_value(Calibration& cal, const std::string& key, double& scale) {
  for (auto& e : calibration_entries(cal))
    if (e.key == key) {
      scale = e.scale;
      return e.value;
    }
  throw_input("--fit", "", fmt::format("no calibration constant '{}'", key));
}

/// Sets a constant given in the table's unit.
void set_entry(Calibration& cal, const std::string& key, double v) {
  double scale = 1;
  double* value = entry_value(cal, key, scale);
  *value = v / scale;
}

/// The rows a fit minimises the error over: those of `corpus` that `keep` accepts.
struct FitRows {
  const RowFilter& keep;
  const RunCorpus& corpus;
};

/// The kept rows' results with constant `key` set to `v` (table units): every kept row, or
/// (`only` given) only those `only` marks, in the order of the kept rows.
std::vector<CalibrationResult> fit_results(Calibration cal, const std::string& key, double v,
                                           const FitRows& rows,
                                           const std::vector<char>* only = nullptr) {
  set_entry(cal, key, v);
  if (!only) return run_calibration_where(cal, rows.keep, rows.corpus);
  std::size_t kept = 0;
  const RowFilter some = [&](const CalibrationResult& r) {
    if (rows.keep && !rows.keep(r)) return false;
    return (*only)[kept++] != 0;
  };
  return run_calibration_where(cal, some, rows.corpus);
}

/// The error over the kept rows as one constant varies. Rows whose prediction is the same at
/// both ends of its range do not read it (another architecture's efficiency, serving overheads
/// for a training row): they keep their error, and only the others are predicted again. The
/// summary runs over every kept row in corpus order, so the figure is the one a full pass gives.
class KeyScan {
 public:
  /// Predicts every kept row at both ends, `lo` and `hi` (table units).
  KeyScan(const Calibration& cal, const std::string& key, double lo, double hi, const FitRows& rows)
      : cal_(cal), key_(key), rows_(rows) {
    base_ = fit_results(cal_, key_, lo, rows_);
    lo_err_ = summarize(base_).all.mean;
    const auto hi_rows = fit_results(cal_, key_, hi, rows_);
    hi_err_ = summarize(hi_rows).all.mean;
    responsive_.resize(base_.size());
    for (std::size_t i = 0; i < base_.size(); ++i)
      responsive_[i] = hi_rows[i].predicted != base_[i].predicted;
  }
  [[nodiscard]] double lo_error() const { return lo_err_; }
  [[nodiscard]] double hi_error() const { return hi_err_; }

  /// Mean absolute error with the constant at `v` (table units).
  [[nodiscard]] double error(double v) const {
    std::vector<CalibrationResult> all = base_;
    const auto changed = fit_results(cal_, key_, v, rows_, &responsive_);
    std::size_t next = 0;
    for (std::size_t i = 0; i < all.size(); ++i)
      if (responsive_[i]) all[i] = changed[next++];
    return summarize(all).all.mean;
  }

 private:
  const Calibration& cal_;
  const std::string& key_;
  const FitRows& rows_;
  std::vector<CalibrationResult> base_;
  std::vector<char> responsive_;
  double lo_err_ = 0, hi_err_ = 0;
};

/// Best value of one constant in [lo, hi]: a 21-point grid, then golden-section search on the
/// grid cell around the best point. Ties keep the lower value. No row responding to it (every
/// grid point's error the same): the constant keeps its value, marked unconstrained.
double fit_one(const Calibration& cal, FittedConstant& k, const FitRows& rows) {
  constexpr int kGrid = 20;
  const double lo = k.lo, hi = k.hi;
  const KeyScan scan(cal, k.key, lo, lo + (hi - lo) * kGrid / kGrid, rows);
  double best = lo, best_err = scan.lo_error(), worst_err = best_err;
  for (int i = 1; i <= kGrid; ++i) {
    const double v = lo + (hi - lo) * i / kGrid;
    const double err = i == kGrid ? scan.hi_error() : scan.error(v);
    worst_err = std::max(worst_err, err);
    if (err < best_err) best = v, best_err = err;
  }
  k.constrained = worst_err > best_err;
  if (!k.constrained) return k.value;
  const double cell = (hi - lo) / kGrid;
  double a = std::max(lo, best - cell), b = std::min(hi, best + cell);
  const double g = (std::sqrt(5.0) - 1) / 2;
  double c = b - g * (b - a), d = a + g * (b - a);
  double fc = scan.error(c), fd = scan.error(d);
  for (int i = 0; i < 16; ++i) {
    if (fc <= fd) {
      b = d, d = c, fd = fc, c = b - g * (b - a), fc = scan.error(c);
    } else {
      a = c, c = d, fc = fd, d = a + g * (b - a), fd = scan.error(d);
    }
  }
  const double refined = fc <= fd ? c : d;
  return std::min(fc, fd) < best_err ? refined : best;
}

}  // namespace

CalibrationFit fit_calibration(const Calibration& start, std::vector<FittedConstant> keys,
                               const RunCorpus& corpus) {
  return fit_calibration(
      start, std::move(keys), [](const CalibrationResult& r) { return !r.held_out; }, corpus);
}

CalibrationFit fit_calibration(const Calibration& start, std::vector<FittedConstant> keys,
                               const RowFilter& wanted, const RunCorpus& corpus) {
  // A row shown but not checked counts in no error (summarize): the fit never predicts it.
  const RowFilter keep = [&](const CalibrationResult& r) {
    return r.checked && (!wanted || wanted(r));
  };
  const FitRows rows{keep, corpus};
  CalibrationFit out;
  out.cal = start;
  for (auto& k : keys) {
    double scale = 1;
    k.start = *entry_value(out.cal, k.key, scale) * scale;
    k.value = k.start;
  }
  out.fit_error_before = summarize(run_calibration_where(out.cal, keep, corpus)).all.mean;
  constexpr int kRounds = 3;
  for (int round = 0; round < kRounds; ++round)
    for (auto& k : keys) {
      k.value = fit_one(out.cal, k, rows);
      set_entry(out.cal, k.key, k.value);
    }
  out.fit_error_after = summarize(run_calibration_where(out.cal, keep, corpus)).all.mean;
  out.constants = std::move(keys);
  return out;
}

}  // namespace topoplan
