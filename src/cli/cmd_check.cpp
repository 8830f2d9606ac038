#include <fmt/format.h>

#include <memory>

#include "cli/common.hpp"
#include "topoplan/check_report.hpp"
#include "topoplan/cluster_svg.hpp"
#include "topoplan/error.hpp"
#include "topoplan/html_report.hpp"
#include "topoplan/report.hpp"

namespace topoplan::cli {
namespace {

struct CheckArgs {
  InputOptions in;
  InferenceOptions inf;
  PlanOptions plan;
  OutputOptions out;
  CheckOptions rules;
};

int run_check_cmd(const CheckArgs& a) {
  if (!(a.rules.max_slowdown >= 1.0))
    throw_input("--max-slowdown", "",
                fmt::format("expected a ratio >= 1, got {}", a.rules.max_slowdown));
  if (!(a.rules.max_gap >= 1.0))
    throw_input("--max-gap", "", fmt::format("expected a ratio >= 1, got {}", a.rules.max_gap));
  if (!(a.rules.tier_min_gain >= 0.0 && a.rules.tier_min_gain <= 10.0))
    throw_input("--tier-min-gain", "",
                fmt::format("expected a fraction from 0 to 10, got {}", a.rules.tier_min_gain));
  InputOptions io = a.in;
  io.inference = a.inf.enabled;
  reject_unused_flags(a.in, a.inf.enabled);
  Resolved r = resolve_plan(io, a.plan);
  const std::string& f = a.out.format;
  CheckResult res;
  std::string text;
  if (a.inf.enabled) {
    if (f == "html" || f == "svg")
      throw_input("--format", "", fmt::format("{}: applies to training checks only", f));
    InferenceJob job = inference_job(io, a.inf, r.serving);
    InferenceContext ctx{r.in.cluster, r.in.model, job, r.in.cal};
    res = run_inference_check(ctx, r.plan, r.mapping, a.rules);
    text = f == "json" ? check_json(ctx, res) : f == "text" ? check_text(ctx, res) : "";
  } else {
    const RunContext ctx = r.in.run();
    CheckOptions rules = a.rules;
    // The best plan is one the user's stack runs: what --stack fixes (and no flag overrode).
    apply_stack_choices(a.in, a.plan.choice, rules.best_zero, rules.best_sequence_parallel);
    res = run_check(ctx, r.plan, r.mapping, rules);
    text = f == "json" ? check_json(ctx, res) : f == "text" ? check_text(ctx, res) : "";
    if (f == "text" && r.placement && res.eval) {  // GPUs down: where the ranks went
      PlacementStats placed = *r.placement;
      placed.step_time = res.eval->step_time;
      // After the header lines, so that the verdict stays the last line.
      const std::size_t gap = text.find("\n\n");
      text.insert(gap == std::string::npos ? text.size() : gap + 1,
                  placement_text(ctx, r.plan, placed) + "\n");
    }
    if (f == "html") text = check_html(ctx, res, r.mapping);
    if (f == "svg" && res.eval) {
      const std::vector<Dim> failing = failing_tier_dims(res);
      text = draw_cluster(ctx.cluster, res.plan, r.mapping,
                          dim_to_show(res.plan, *res.eval, failing), failing)
                 .svg;
    }
  }
  if (f == "github") text = check_github(res);
  if (f == "junit") text = check_junit(res);
  write_output(a.out.path, text);
  return res.passed() ? 0 : 1;
}

}  // namespace

Runner register_check(CLI::App& cmd) {
  auto a = std::make_shared<CheckArgs>();
  add_plan_under_test_options(cmd, a->in, a->plan, &a->inf);
  cmd.add_option("--max-slowdown", a->rules.max_slowdown,
                 "fail when the step time exceeds this x the best mapping of the same degrees")
      ->capture_default_str();
  cmd.add_option("--max-gap", a->rules.max_gap,
                 "fail when the step time exceeds this x the best plan overall")
      ->capture_default_str();
  cmd.add_option("--tier-min-gain", a->rules.tier_min_gain,
                 "the tier rules fire only when the order they suggest is faster by more than "
                 "this fraction")
      ->capture_default_str();
  add_output_options(cmd, a->out, {"text", "json", "github", "junit", "html", "svg"});
  return [a] { return run_check_cmd(*a); };
}

}  // namespace topoplan::cli
