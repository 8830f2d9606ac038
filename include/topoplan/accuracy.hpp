#pragma once
/// How far off topoplan's predictions are for a run like the one being planned: the error it makes
/// on published runs of the same kind that were held back from fitting its constants.
#include <string>

#include "topoplan/calibration_runs.hpp"

namespace topoplan {

/// The kind of run a prediction is for.
struct Regime {
  RunKind kind = RunKind::training;
  Arch arch = Arch::ampere;
  Precision precision = Precision::bits16;
  bool moe = false;   ///< a model with routed experts
  std::string model;  ///< the model's name: its own published runs that are not checked, if any
};

struct AccuracyBand {
  /// False with a calibration other than the built-in one: the held-back rows measure the
  /// built-in constants only (`topoplan calibrate --calibration FILE` measures others).
  bool measured = false;
  std::string basis;  ///< which runs: "training, hopper, fp8", widened to "training, hopper" ...
  /// The narrowest basis, the one asked for ("training, blackwell, mxfp8, MoE"): different from
  /// `basis` when too few held-back runs of that regime were checked and the band widened.
  std::string wanted;
  ErrorSummary held_out;
  /// The same model's published runs that the corpus shows but does not check (a gap it names,
  /// `why_not_checked`): their error, whatever the band above says. No runs: no known gap.
  ErrorSummary known_gap;
  std::string model;  ///< whose runs `known_gap` counts
  /// With a known gap: the same model's held-back runs that are checked (its other
  /// configurations, counted in their bands): the gap is in some configurations, not all.
  int model_checked_runs = 0;
};

/// Fewest held-back runs a band stands on before it is widened.
inline constexpr int kMinBandRuns = 3;

/// The held-back, checked runs of the same kind, GPU architecture, precision and model type (with
/// experts or dense); with fewer than kMinBandRuns of them, of the same kind, architecture and
/// model type; then of the same kind and model type; then of the same kind. With them, the error on
/// the runs of the same kind and model (`Regime::model`) shown but not checked. Predicted with the
/// built-in constants, once per regime per process.
[[nodiscard]] AccuracyBand accuracy_band(const Regime& r, const Calibration& cal);

/// True when every constant of `cal` is the built-in value.
[[nodiscard]] bool is_builtin(const Calibration& cal);

}  // namespace topoplan
