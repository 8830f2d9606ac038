#pragma once
/// The published measurements topoplan is checked against (configs/calibration/runs.json,
/// compiled in): each is re-predicted with the current calibration and compared.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "topoplan/calibration.hpp"
#include "topoplan/cost_model.hpp"
#include "topoplan/inference.hpp"
#include "topoplan/topology.hpp"

namespace topoplan {

/// What a published run measured: a training step, serving (prefill and decode), or one
/// collective.
enum class RunKind : std::uint8_t { training, inference, collective };
[[nodiscard]] const char* to_string(RunKind k);
/// A run's precision class: FP8, NVFP4 or MXFP8 training (or FP8 weights when serving), else
/// 16-bit.
enum class Precision : std::uint8_t { bits16, fp8, nvfp4, mxfp8 };
/// "16-bit", "fp8", "nvfp4" or "mxfp8".
[[nodiscard]] const char* precision_name(Precision p);
/// The class of a training dtype, or of a serving run's weights.
[[nodiscard]] Precision precision_of(Dtype d);

struct CalibrationResult {
  std::string name;
  std::string source;
  std::string family;  ///< the publication or benchmark suite it comes from (cross-validation)
  std::string metric;  ///< hardware_tflops_per_gpu, iteration_time_s, busbw_GBps, time_us
  double measured = 0;
  double predicted = 0;
  bool checked = true;  ///< counted in the accuracy claim (false: shown, with the reason)
  /// Held back: not looked at while the constants were chosen, so its error is a prediction.
  bool held_out = false;
  std::string note;  ///< the plan found, or why a row is not checked
  RunKind kind = RunKind::training;
  Arch arch = Arch::ampere;  ///< of the run's GPUs
  Precision precision = Precision::bits16;
  bool moe = false;   ///< the model has routed experts
  std::string model;  ///< the model's name (its preset, or the config's "name")
  [[nodiscard]] double error() const { return predicted / measured - 1.0; }
  /// The error signed by speed: + when topoplan predicts the run faster than published (more
  /// throughput, or less time for a time metric: `_s`, `_ms`, `_us`), - when slower.
  [[nodiscard]] double speed_error() const;
};

/// Mean and worst absolute relative error over a set of checked runs, and their bias.
struct ErrorSummary {
  int runs = 0;
  double mean = 0;
  double worst = 0;
  /// Mean CalibrationResult::speed_error(): + when topoplan predicts the runs faster than
  /// published on average.
  double bias = 0;
  /// Counts one run: its error's absolute value into the mean and the worst, its speed error
  /// into the bias.
  void add(const CalibrationResult& r);
};
/// All checked runs; those the constants were chosen on; those held back from that.
struct CalibrationSummary {
  ErrorSummary all, fit, held_out;
  /// Held-back runs shown but not checked (a model gap named in their why_not_checked), and all
  /// held-back runs counted together: what the held-back figure would be with them.
  ErrorSummary held_out_not_checked, held_out_all;
};
[[nodiscard]] CalibrationSummary summarize(const std::vector<CalibrationResult>& r);

/// The held-back, checked runs of one regime: kind, GPU architecture, precision and model type
/// (the narrowest band `evaluate` and `plan` print as their expected error).
struct RegimeSummary {
  RunKind kind = RunKind::training;
  Arch arch = Arch::ampere;
  Precision precision = Precision::bits16;
  bool moe = false;
  ErrorSummary held_out;  ///< with its bias
};
/// One entry per regime with a held-back, checked run, ordered by kind, architecture, precision
/// and model type (dense first), each in its enum's order.
[[nodiscard]] std::vector<RegimeSummary> summarize_by_regime(
    const std::vector<CalibrationResult>& r);
/// "training, hopper, fp8, dense": a regime as the expected-error lines name it.
[[nodiscard]] std::string regime_name(RunKind kind, Arch arch, Precision precision, bool moe);

/// The runs a report re-predicts: topoplan.calibration-runs/v1 JSON, the format of
/// configs/calibration/runs.json, and the name its input errors cite.
struct RunCorpus {
  std::string text;
  std::string source;
};
/// The published runs compiled in (configs/calibration/runs.json).
[[nodiscard]] const RunCorpus& builtin_runs();
/// A user's own runs (calibrate --runs FILE), in the same format; read here, checked as each
/// report walks it (InputError naming the file and the JSON path).
[[nodiscard]] RunCorpus load_runs_file(const std::string& path);
/// A warning for each key of the runs format's objects (a row, its job, plan, inference and
/// measured) that it does not know, naming the closest known key (a likely typo): once per file,
/// where load_runs_file reads it.
void warn_unknown_run_keys(const RunCorpus& corpus);

/// Re-predicts every run of `corpus` with `cal` (only the fit rows with `fit_rows_only`).
[[nodiscard]] std::vector<CalibrationResult> run_calibration(
    const Calibration& cal, bool fit_rows_only = false, const RunCorpus& corpus = builtin_runs());
/// Which rows to predict: called with a row's name, source, family and role filled in, before
/// its prediction (a row it rejects costs nothing).
using RowFilter = std::function<bool(const CalibrationResult&)>;
/// Re-predicts the runs of `corpus` that `keep` accepts.
[[nodiscard]] std::vector<CalibrationResult> run_calibration_where(
    const Calibration& cal, const RowFilter& keep, const RunCorpus& corpus = builtin_runs());

/// One row re-predicted, with what the prediction came from (calibrate --explain): a training
/// row's cluster, model, job, the plan its search found and that plan's evaluation; a serving
/// row's the same with the serving job and evaluation; a collective row's result alone.
struct RunExplanation {
  CalibrationResult result;
  std::optional<Cluster> cluster;
  std::optional<Model> model;
  std::optional<JobSpec> job;           ///< training
  std::optional<InferenceJob> serving;  ///< inference
  Plan plan;
  std::optional<Evaluation> eval;             ///< training
  std::optional<InferenceEval> serving_eval;  ///< inference
};
/// The row named `name`, or the one row whose name contains it (InputError naming the matches
/// when none or several do), re-predicted with `cal`.
[[nodiscard]] RunExplanation explain_run(const Calibration& cal, const std::string& name,
                                         const RunCorpus& corpus = builtin_runs());
/// calibrate --explain's output: the row (name, set, source, published and predicted figures)
/// and the prediction's breakdown as evaluate prints it; "json": topoplan.calibration-run/v1, the
/// row under "run" and evaluate's JSON (training or serving; null for a collective) under
/// "prediction". `cal` is the calibration the row was re-predicted with.
[[nodiscard]] std::string run_explanation_report(const RunExplanation& x, const Calibration& cal,
                                                 const std::string& format);

/// One constant `fit_calibration` chose: where it started and where it ended, in table units.
struct FittedConstant {
  std::string key;
  double start = 0;
  double value = 0;
  double lo = 0, hi = 0;  ///< the range searched
  /// False when no selected row's error moves with it: the fit keeps its start value.
  bool constrained = true;
};

struct CalibrationFit {
  Calibration cal;  ///< the start with the fitted constants set
  std::vector<FittedConstant> constants;
  double fit_error_before = 0, fit_error_after = 0;  ///< mean |error| over the fit rows
};

/// The constants `calibrate --fit` chooses by default (the matrix-multiply efficiencies, the
/// element-wise traffic, the serving runtimes' overheads, the per-step host work), each with the
/// range searched.
[[nodiscard]] std::vector<FittedConstant> default_fitted_constants();

/// Chooses `keys` (calibration table keys) to minimise the mean absolute error over the *fit*
/// rows only; held-back rows are never evaluated. Coordinate descent: per key a grid over its
/// range, then a golden-section refinement around the best point; three rounds. Deterministic.
[[nodiscard]] CalibrationFit fit_calibration(const Calibration& start,
                                             std::vector<FittedConstant> keys,
                                             const RunCorpus& corpus = builtin_runs());
/// The same, minimising the mean absolute error over the checked rows `rows` accepts.
[[nodiscard]] CalibrationFit fit_calibration(const Calibration& start,
                                             std::vector<FittedConstant> keys,
                                             const RowFilter& rows,
                                             const RunCorpus& corpus = builtin_runs());

/// One family left out: the constants fitted on every other family's rows (fit and held back
/// alike), then its own rows predicted with them.
struct CrossValidationFold {
  std::string family;
  std::vector<CalibrationResult> rows;  ///< this family's rows, predicted by the other families
  ErrorSummary error;                   ///< over its checked rows
  std::vector<FittedConstant> constants;
};
struct CrossValidation {
  std::vector<CrossValidationFold> folds;  ///< in the order the families first appear
  ErrorSummary error;                      ///< over every checked row, each from its own fold
};
/// Leave-one-family-out cross-validation of `keys` (calibrate --cross-validate) over the rows
/// `rows` accepts (every row when empty) of `corpus`. Deterministic; folds run on up to
/// `threads` threads (the result does not depend on it).
[[nodiscard]] CrossValidation cross_validate(const Calibration& start,
                                             const std::vector<FittedConstant>& keys,
                                             int threads = 1, const RowFilter& rows = {},
                                             const RunCorpus& corpus = builtin_runs());
/// The per-family table: "table", "markdown" or "json".
[[nodiscard]] std::string cross_validation_report(const CrossValidation& cv,
                                                  const std::string& format);

/// The error table: "table" (aligned text), "markdown" (for the README) or "json".
[[nodiscard]] std::string calibration_report(const std::vector<CalibrationResult>& r,
                                             const std::string& format);

}  // namespace topoplan
