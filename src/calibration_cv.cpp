// Leave-one-family-out cross-validation of the fitted constants (calibrate --cross-validate).
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <nlohmann/json.hpp>
#include <thread>

#include "topoplan/calibration_runs.hpp"

namespace topoplan {
namespace {

/// An empty filter takes every row.
bool accepts(const RowFilter& rows, const CalibrationResult& r) { return !rows || rows(r); }

/// The families in the order their first row appears in the corpus.
std::vector<std::string> families(const RowFilter& rows, const RunCorpus& corpus) {
  std::vector<std::string> out;
  static_cast<void>(run_calibration_where(
      Calibration{},
      [&](const CalibrationResult& r) {
        if (accepts(rows, r) && std::find(out.begin(), out.end(), r.family) == out.end())
          out.push_back(r.family);
        return false;  // nothing to predict: the names are all it needs
      },
      corpus));
  return out;
}

CrossValidationFold run_fold(const Calibration& start, const std::vector<FittedConstant>& keys,
                             const std::string& family, const RowFilter& rows,
                             const RunCorpus& corpus) {
  CrossValidationFold fold;
  fold.family = family;
  const CalibrationFit fit = fit_calibration(
      start, keys,
      [&](const CalibrationResult& r) { return accepts(rows, r) && r.family != family; }, corpus);
  fold.constants = fit.constants;
  fold.rows = run_calibration_where(
      fit.cal, [&](const CalibrationResult& r) { return accepts(rows, r) && r.family == family; },
      corpus);
  fold.error = summarize(fold.rows).all;
  return fold;
}

}  // namespace

CrossValidation cross_validate(const Calibration& start, const std::vector<FittedConstant>& keys,
                               int threads, const RowFilter& rows, const RunCorpus& corpus) {
  const std::vector<std::string> names = families(rows, corpus);
  CrossValidation cv;
  cv.folds.resize(names.size());
  std::atomic<std::size_t> next{0};
  // A fold that throws (a bad --calibration file) stops the others; the first error is rethrown
  // here, on the calling thread.
  std::vector<std::exception_ptr> errors(names.size());
  auto work = [&] {
    for (std::size_t i = next++; i < names.size(); i = next++) {
      try {
        cv.folds[i] = run_fold(start, keys, names[i], rows, corpus);
      } catch (...) {
        errors[i] = std::current_exception();
        next = names.size();
      }
    }
  };
  std::vector<std::thread> pool;
  const int n = std::clamp(threads, 1, static_cast<int>(std::max<std::size_t>(1, names.size())));
  for (int t = 1; t < n; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
  std::vector<CalibrationResult> all;
  for (const auto& f : cv.folds) all.insert(all.end(), f.rows.begin(), f.rows.end());
  cv.error = summarize(all).all;
  return cv;
}

namespace {

/// The fitted constants no other family's row responds to: this fold keeps their built-in
/// values, which were chosen with the family's own rows in view.
std::string unconstrained(const CrossValidationFold& f) {
  std::string out;
  for (const auto& k : f.constants)
    if (!k.constrained) out += (out.empty() ? "" : ", ") + k.key;
  return out;
}

}  // namespace

std::string cross_validation_report(const CrossValidation& cv, const std::string& format) {
  std::vector<CalibrationResult> set_by_others;  // the folds whose every constant others set
  for (const auto& f : cv.folds)
    if (unconstrained(f).empty())
      set_by_others.insert(set_by_others.end(), f.rows.begin(), f.rows.end());
  const ErrorSummary predicted = summarize(set_by_others).all;
  if (format == "json") {
    nlohmann::ordered_json j;
    j["schema"] = "topoplan.cross_validation/v1";
    j["mean_abs_error"] = cv.error.mean;
    j["max_abs_error"] = cv.error.worst;
    j["runs"] = cv.error.runs;
    j["predicted_mean_abs_error"] = predicted.mean;
    j["predicted_max_abs_error"] = predicted.worst;
    j["predicted_runs"] = predicted.runs;
    auto folds = nlohmann::ordered_json::array();
    for (const auto& f : cv.folds) {
      nlohmann::ordered_json o{{"family", f.family},
                               {"runs", f.error.runs},
                               {"mean_abs_error", f.error.mean},
                               {"max_abs_error", f.error.worst}};
      auto constants = nlohmann::ordered_json::object();
      auto alone = nlohmann::ordered_json::array();
      for (const auto& k : f.constants) {
        constants[k.key] = k.value;
        if (!k.constrained) alone.push_back(k.key);
      }
      o["constants"] = constants;
      o["unconstrained"] = alone;
      folds.push_back(o);
    }
    j["folds"] = folds;
    return j.dump(2) + "\n";
  }
  const bool md = format == "markdown";
  std::string out =
      md ? "| family left out | runs | mean error | worst | constants only it sets |\n"
           "|---|---|---|---|---|\n"
         : fmt::format("{:<34} {:>5} {:>11} {:>8}  {}\n", "family left out", "runs", "mean error",
                       "worst", "constants only it sets");
  for (const auto& f : cv.folds) {
    const std::string alone = unconstrained(f);
    out += md ? fmt::format("| {} | {} | {:.2f}% | {:.2f}% | {} |\n", f.family, f.error.runs,
                            100 * f.error.mean, 100 * f.error.worst,
                            alone.empty() ? "" : "`" + alone + "`")
              : fmt::format("{:<34} {:>5} {:>10.2f}% {:>7.2f}%  {}\n", f.family, f.error.runs,
                            100 * f.error.mean, 100 * f.error.worst, alone);
  }
  out += fmt::format(
      "{}leave-one-family-out: {} runs; mean absolute error {:.2f}%, worst {:.2f}%\n"
      "{}families no constant depends on alone: {} runs; mean absolute error {:.2f}%, worst "
      "{:.2f}%\n",
      md ? "\n" : "", cv.error.runs, 100 * cv.error.mean, 100 * cv.error.worst, md ? "\n" : "",
      predicted.runs, 100 * predicted.mean, 100 * predicted.worst);
  return out;
}

}  // namespace topoplan
