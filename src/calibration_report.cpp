// The calibration's error table: each run's measured and predicted figure, and the fit and
// held-back summaries (calibrate's text, markdown and JSON).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <string_view>
#include <tuple>

#include "topoplan/calibration_runs.hpp"

namespace topoplan {

void ErrorSummary::add(const CalibrationResult& r) {
  const double e = std::abs(r.error());
  mean = (mean * runs + e) / (runs + 1);
  worst = std::max(worst, e);
  bias = (bias * runs + r.speed_error()) / (runs + 1);
  ++runs;
}

CalibrationSummary summarize(const std::vector<CalibrationResult>& r) {
  CalibrationSummary s;
  for (const auto& x : r) {
    if (x.held_out) s.held_out_all.add(x);
    if (x.held_out && !x.checked) s.held_out_not_checked.add(x);
    if (!x.checked) continue;
    s.all.add(x);
    (x.held_out ? s.held_out : s.fit).add(x);
  }
  return s;
}

double CalibrationResult::speed_error() const {
  const std::string_view m = metric;
  const bool time = m.ends_with("_s") || m.ends_with("_ms") || m.ends_with("_us");
  return time ? measured / predicted - 1.0 : error();
}

std::string regime_name(RunKind kind, Arch arch, Precision precision, bool moe) {
  return fmt::format("{}, {}, {}, {}", to_string(kind), to_string(arch), precision_name(precision),
                     moe ? "MoE" : "dense");
}

std::vector<RegimeSummary> summarize_by_regime(const std::vector<CalibrationResult>& r) {
  std::map<std::tuple<RunKind, Arch, Precision, bool>, std::vector<const CalibrationResult*>> by;
  for (const auto& x : r)
    if (x.checked && x.held_out) by[{x.kind, x.arch, x.precision, x.moe}].push_back(&x);
  std::vector<RegimeSummary> out;
  for (const auto& [key, rows] : by) {
    RegimeSummary g;
    std::tie(g.kind, g.arch, g.precision, g.moe) = key;
    for (const CalibrationResult* x : rows) g.held_out.add(*x);
    out.push_back(g);
  }
  return out;
}

namespace {

/// The held-back error by regime, after the summaries (text and markdown).
std::string regime_table(const std::vector<RegimeSummary>& groups, bool md) {
  std::string out;
  if (md) {
    out += "\n| held back, by regime | runs | mean error | worst | bias |\n|---|---|---|---|---|\n";
    for (const auto& g : groups)
      out += fmt::format("| {} | {} | {:.2f}% | {:.2f}% | {:+.1f}% |\n",
                         regime_name(g.kind, g.arch, g.precision, g.moe), g.held_out.runs,
                         100 * g.held_out.mean, 100 * g.held_out.worst, 100 * g.held_out.bias);
    return out;
  }
  out += fmt::format("\n{:<45} {:>5} {:>11} {:>8} {:>7}\n", "held back, by regime", "runs",
                     "mean error", "worst", "bias");
  for (const auto& g : groups)
    out += fmt::format("{:<45} {:>5} {:>10.2f}% {:>7.2f}% {:>+6.1f}%\n",
                       regime_name(g.kind, g.arch, g.precision, g.moe), g.held_out.runs,
                       100 * g.held_out.mean, 100 * g.held_out.worst, 100 * g.held_out.bias);
  return out +
         "(bias: mean signed error, + = topoplan predicts these runs faster than published)\n";
}

std::string summary_line(const char* what, const ErrorSummary& e) {
  return fmt::format("{}: {} runs; mean absolute error {:.2f}%, worst {:.2f}%", what, e.runs,
                     100 * e.mean, 100 * e.worst);
}

}  // namespace

std::string calibration_report(const std::vector<CalibrationResult>& r, const std::string& format) {
  const CalibrationSummary sum = summarize(r);
  const int n = sum.all.runs;
  const double mean = sum.all.mean, worst = sum.all.worst;
  if (format == "json") {
    nlohmann::ordered_json j;
    j["schema"] = "topoplan.calibration/v1";
    j["mean_abs_error"] = mean;
    j["max_abs_error"] = worst;
    j["fit_mean_abs_error"] = sum.fit.mean;
    j["fit_max_abs_error"] = sum.fit.worst;
    j["held_out_mean_abs_error"] = sum.held_out.mean;
    j["held_out_max_abs_error"] = sum.held_out.worst;
    // Since session 32: the held-back runs shown but not checked, and every held-back run.
    j["held_out_not_checked_runs"] = sum.held_out_not_checked.runs;
    j["held_out_not_checked_mean_abs_error"] = sum.held_out_not_checked.mean;
    j["held_out_not_checked_max_abs_error"] = sum.held_out_not_checked.worst;
    j["held_out_all_mean_abs_error"] = sum.held_out_all.mean;
    j["held_out_all_max_abs_error"] = sum.held_out_all.worst;
    auto regimes = nlohmann::ordered_json::array();
    for (const auto& g : summarize_by_regime(r))
      regimes.push_back({{"kind", to_string(g.kind)},
                         {"arch", to_string(g.arch)},
                         {"precision", precision_name(g.precision)},
                         {"moe", g.moe},
                         {"runs", g.held_out.runs},
                         {"mean_abs_error", g.held_out.mean},
                         {"max_abs_error", g.held_out.worst},
                         {"bias", g.held_out.bias}});
    j["held_out_by_regime"] = regimes;
    auto rows = nlohmann::ordered_json::array();
    for (const auto& x : r)
      rows.push_back({{"name", x.name},
                      {"metric", x.metric},
                      {"measured", x.measured},
                      {"predicted", x.predicted},
                      {"error", x.error()},
                      {"checked", x.checked},
                      {"held_out", x.held_out},
                      {"note", x.note},
                      {"source", x.source},
                      {"family", x.family},
                      {"kind", to_string(x.kind)},
                      {"arch", to_string(x.arch)},
                      {"precision", precision_name(x.precision)},
                      {"moe", x.moe}});
    j["runs"] = rows;
    return j.dump(2) + "\n";
  }
  std::string out;
  const bool md = format == "markdown";
  if (md) {
    out += "| run | set | metric | published | topoplan | error | plan found / note |\n";
    out += "|---|---|---|---|---|---|---|\n";
  } else {
    out += fmt::format("{:<62} {:<9} {:<24} {:>10} {:>10} {:>8}  {}\n", "run", "set", "metric",
                       "published", "topoplan", "error", "plan found / note");
  }
  for (const auto& x : r) {
    const std::string err = fmt::format("{:+.1f}%{}", 100 * x.error(), x.checked ? "" : " *");
    const char* set = x.held_out ? "held back" : "fit";
    if (md)
      out += fmt::format("| {} | {} | {} | {:.4g} | {:.4g} | {} | {} |\n", x.name, set, x.metric,
                         x.measured, x.predicted, err, x.note);
    else
      out += fmt::format("{:<62} {:<9} {:<24} {:>10.4g} {:>10.4g} {:>8}  {}\n", x.name, set,
                         x.metric, x.measured, x.predicted, err, x.note);
  }
  out += fmt::format("{}checked runs: {}; mean absolute error {:.2f}%, worst {:.2f}%{}\n",
                     md ? "\n" : "\n", n, 100 * mean, 100 * worst,
                     md ? " (* = shown, not checked)" : "  (* = shown, not checked)");
  out += fmt::format("{}{}\n{}{}\n", md ? "\n" : "", summary_line("fit", sum.fit), md ? "\n" : "",
                     summary_line("held back", sum.held_out));
  if (sum.held_out_not_checked.runs > 0)
    out += fmt::format(
        "{}{} (* above); counted with them, held back: mean {:.2f}%, worst {:.2f}%\n",
        md ? "\n" : "", summary_line("held back, not checked", sum.held_out_not_checked),
        100 * sum.held_out_all.mean, 100 * sum.held_out_all.worst);
  return out + regime_table(summarize_by_regime(r), md);
}

}  // namespace topoplan
