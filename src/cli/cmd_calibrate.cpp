#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/common.hpp"
#include "topoplan/calibration_runs.hpp"

namespace topoplan::cli {
namespace {

struct CalibrateArgs {
  std::string calibration;
  std::string runs;
  bool constants = false;
  bool fit = false;
  bool cross_validate = false;
  std::vector<std::string> fit_keys;
  std::string fit_output;
  std::string explain;
  OutputOptions out;
};

/// The fitted constants: start, value, range; then the error table with them.
std::string fit_text(const CalibrationFit& f, const std::string& format) {
  const bool md = format == "markdown";
  std::string out = md ? "| constant | built in | fitted | range searched |\n|---|---|---|---|\n"
                       : fmt::format("{:<34} {:>10} {:>10}  {}\n", "constant", "built in", "fitted",
                                     "range searched");
  for (const auto& k : f.constants)
    out += md ? fmt::format("| `{}` | {:.4g} | {:.4g} | {:.4g} - {:.4g} |\n", k.key, k.start,
                            k.value, k.lo, k.hi)
              : fmt::format("{:<34} {:>10.4g} {:>10.4g}  {:.4g} - {:.4g}\n", k.key, k.start,
                            k.value, k.lo, k.hi);
  out += fmt::format("{}fit rows' mean absolute error: {:.2f}% built in, {:.2f}% fitted\n\n",
                     md ? "\n" : "", 100 * f.fit_error_before, 100 * f.fit_error_after);
  return out;
}

/// `--fit-output FILE`: the fitted constants as a calibration file for --calibration.
void write_fitted(const CalibrationFit& f, const std::string& path) {
  nlohmann::ordered_json j;
  for (const auto& k : f.constants) j[k.key] = k.value;
  write_output(path, j.dump(2) + "\n");
}

/// The constants --fit chooses, or the --fit-keys subset of them.
std::vector<FittedConstant> fit_keys(const CalibrateArgs& a) {
  std::vector<FittedConstant> keys = default_fitted_constants();
  if (a.fit_keys.empty()) return keys;
  std::vector<FittedConstant> chosen;
  for (const auto& k : a.fit_keys) {
    auto it = std::find_if(keys.begin(), keys.end(), [&](auto& c) { return c.key == k; });
    if (it == keys.end())
      throw_input("--fit-keys", "",
                  fmt::format("expected constants calibrate --fit chooses, got '{}'", k));
    chosen.push_back(*it);
  }
  return chosen;
}

int run_calibrate(const CalibrateArgs& a) {
  Calibration cal;
  if (!a.calibration.empty()) apply_calibration_file(a.calibration, cal);
  const RunCorpus corpus = a.runs.empty() ? builtin_runs() : load_runs_file(a.runs);
  std::string text;
  if (a.constants) {
    const bool md = a.out.format == "markdown";
    if (md) text += "| key | value | unit | source |\n|---|---|---|---|\n";
    for (const auto& e : calibration_entries(cal)) {
      const double v = *e.value * e.scale;
      text += md ? fmt::format("| `{}` | {:.4g} | {} | {} |\n", e.key, v, e.unit, e.source)
                 : fmt::format("{:<34} {:>10.4g}  {:<30} {}\n", e.key, v, e.unit, e.source);
    }
  } else if (!a.explain.empty()) {
    text = run_explanation_report(explain_run(cal, a.explain, corpus), cal, a.out.format);
  } else if (a.cross_validate) {
    const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    text = cross_validation_report(cross_validate(cal, fit_keys(a), threads, {}, corpus),
                                   a.out.format);
  } else if (a.fit) {
    const CalibrationFit f = fit_calibration(cal, fit_keys(a), corpus);
    if (!a.fit_output.empty()) write_fitted(f, a.fit_output);
    const auto rows = run_calibration(f.cal, false, corpus);
    text = a.out.format == "json"
               ? calibration_report(rows, "json")
               : fit_text(f, a.out.format) + calibration_report(rows, a.out.format);
  } else {
    text = calibration_report(run_calibration(cal, false, corpus), a.out.format);
  }
  write_output(a.out.path, text);
  return 0;
}

}  // namespace

Runner register_calibrate(CLI::App& cmd) {
  auto a = std::make_shared<CalibrateArgs>();
  cmd.add_option("--calibration", a->calibration, "JSON file overriding calibration constants");
  auto* runs = cmd.add_option(
      "--runs", a->runs,
      "your own measured runs (topoplan.calibration-runs/v1, the format of "
      "configs/calibration/runs.json) instead of the published ones: the error table, --fit, "
      "--cross-validate and --explain then use them");
  auto* constants = cmd.add_flag("--constants", a->constants,
                                 "print the constants table instead of the error table");
  auto* fit =
      cmd.add_flag("--fit", a->fit,
                   "choose the fitted constants on the fit rows (held-back rows are never looked "
                   "at), then print the error table with them");
  auto* cross =
      cmd.add_flag("--cross-validate", a->cross_validate,
                   "leave one family of runs out at a time (a paper, a benchmark suite): fit the "
                   "constants on every other family's rows, fit and held back alike, predict the "
                   "family left out; print each family's error and the whole")
          ->excludes(fit);
  cmd.add_option("--fit-keys", a->fit_keys, "with --fit or --cross-validate: only these constants")
      ->delimiter(',');
  cmd.add_option("--fit-output", a->fit_output,
                 "with --fit: write the fitted constants as a --calibration file")
      ->needs(fit);
  cmd.add_option("--explain", a->explain,
                 "one run's prediction explained: the plan its search found, with evaluate's "
                 "breakdown of where the step goes (NAME: the run's name, or a part of it one "
                 "name contains)")
      ->excludes(fit)
      ->excludes(cross)
      ->excludes(constants);
  constants->excludes(fit)->excludes(cross)->excludes(runs);
  add_output_options(cmd, a->out, {"table", "markdown", "json"});
  return [a] { return run_calibrate(*a); };
}

}  // namespace topoplan::cli
