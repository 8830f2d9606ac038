#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "topoplan/calibration_runs.hpp"
#include "topoplan/inference_report.hpp"
#include "topoplan/report.hpp"

namespace topoplan {

std::string run_explanation_report(const RunExplanation& x, const Calibration& cal,
                                   const std::string& format) {
  const CalibrationResult& r = x.result;
  const char* set = r.held_out ? "held back" : "fit";
  // What the prediction came from, as evaluate shows it (a collective row: its note alone).
  std::string plan;
  if (x.eval) {
    const RunContext ctx{*x.cluster, *x.model, *x.job, cal};
    plan = format == "json" ? evaluation_json(ctx, x.plan, *x.eval)
                            : evaluation_text(ctx, x.plan, *x.eval);
  } else if (x.serving_eval) {
    const InferenceContext ctx{*x.cluster, *x.model, *x.serving, cal};
    plan = format == "json" ? inference_json(ctx, x.plan, *x.serving_eval)
                            : inference_text(ctx, x.plan, *x.serving_eval);
  }
  if (format == "json") {
    nlohmann::ordered_json j;
    j["schema"] = "topoplan.calibration-run/v1";
    j["run"] = {{"name", r.name},           {"set", r.held_out ? "held_out" : "fit"},
                {"metric", r.metric},       {"measured", r.measured},
                {"predicted", r.predicted}, {"error", r.error()},
                {"checked", r.checked},     {"note", r.note},
                {"source", r.source},       {"family", r.family}};
    j["prediction"] = plan.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json::parse(plan);
    return j.dump(2) + "\n";
  }
  return fmt::format(
      "calibration run: {} ({})\nsource: {}\npublished {} {:.4g}; topoplan {:.4g} ({:+.1f}%{}); "
      "{}\n\n{}",
      r.name, set, r.source, r.metric, r.measured, r.predicted, 100 * r.error(),
      r.checked ? "" : ", not checked", r.note, plan);
}

}  // namespace topoplan
