#include <fmt/format.h>

#include <memory>

#include "cli/common.hpp"
#include "topoplan/cluster_svg.hpp"
#include "topoplan/error.hpp"
#include "topoplan/html_report.hpp"
#include "topoplan/inference_report.hpp"
#include "topoplan/report.hpp"

namespace topoplan::cli {
namespace {

struct EvaluateArgs {
  InputOptions in;
  InferenceOptions inf;
  PlanOptions plan;
  OutputOptions out;
};

int run_inference_evaluate(const EvaluateArgs& a) {
  if (a.out.format == "html" || a.out.format == "svg")
    throw_input("--format", "", fmt::format("{}: applies to training plans only", a.out.format));
  InputOptions io = a.in;
  io.inference = true;
  Resolved r = resolve_plan(io, a.plan);
  InferenceJob job = inference_job(io, a.inf, r.serving);
  PlanError err = check_inference_plan(r.in.cluster, r.in.model, r.plan);
  if (err != PlanError::none) throw_plan_error(err, r);
  InferenceEval e = evaluate_inference(r.in.cluster, r.in.model, job, r.plan, r.mapping, r.in.cal);
  InferenceContext ctx{r.in.cluster, r.in.model, job, r.in.cal};
  write_output(a.out.path, a.out.format == "json" ? inference_json(ctx, r.plan, e)
                                                  : inference_text(ctx, r.plan, e));
  return 0;
}

int run_evaluate(const EvaluateArgs& a) {
  reject_unused_flags(a.in, a.inf.enabled);
  if (a.inf.enabled) return run_inference_evaluate(a);
  Resolved r = resolve_plan(a.in, a.plan);
  PlanError err = check_plan(r.in.cluster, r.in.model, r.in.job, r.plan);
  if (err != PlanError::none) throw_plan_error(err, r);
  Evaluation e = evaluate(r.in.cluster, r.in.model, r.in.job, r.plan, r.mapping, r.in.cal);
  const RunContext ctx = r.in.run();
  const std::string& f = a.out.format;
  // GPUs down: the placement search's (or the rank file's) devices, said in the report.
  PlacementStats placed;
  if (r.placement) placed = *r.placement;
  placed.step_time = e.step_time;
  placed.order_kept = r.placement ? r.placement->order_kept : true;
  placed.idle = r.in.cluster.usable_count() - static_cast<int>(r.plan.world());
  const bool down = r.in.cluster.has_down_gpus();
  if (f == "table") {
    std::string text = evaluation_text(ctx, r.plan, e);
    if (r.in.cluster.mixed())
      text += "\n" + stages_text(ctx, r.plan, r.mapping, e.step_time, 0) + "\n";
    if (down && r.placement) text += "\n" + placement_text(ctx, r.plan, placed) + "\n";
    if (down && !r.placement)
      text += fmt::format("\nplacement: {} of {} usable GPUs, as the rank file gives them\n",
                          r.plan.world(), r.in.cluster.usable_count());
    write_output(a.out.path, text);
    return 0;
  }
  write_output(a.out.path,
               f == "json" && down ? evaluation_json(ctx, r.plan, e, r.mapping, placed)
               : f == "json"       ? evaluation_json(ctx, r.plan, e)
               : f == "html"
                   ? evaluation_html(ctx, r.plan, r.mapping, e)
                   : draw_cluster(ctx.cluster, r.plan, r.mapping, dim_to_show(r.plan, e)).svg);
  return 0;
}

}  // namespace

Runner register_evaluate(CLI::App& cmd) {
  auto a = std::make_shared<EvaluateArgs>();
  add_plan_under_test_options(cmd, a->in, a->plan, &a->inf);
  add_output_options(cmd, a->out, {"table", "json", "html", "svg"});
  return [a] { return run_evaluate(*a); };
}

}  // namespace topoplan::cli
