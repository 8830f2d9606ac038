#include <memory>

#include "cli/common.hpp"
#include "topoplan/error.hpp"
#include "topoplan/report.hpp"

namespace topoplan::cli {
namespace {

struct EvaluateArgs {
  InputOptions in;
  PlanOptions plan;
  OutputOptions out;
};

int run_evaluate(const EvaluateArgs& a) {
  Resolved r = resolve_plan(a.in, a.plan);
  PlanError err = check_plan(r.in.cluster, r.in.model, r.in.job, r.plan);
  if (err != PlanError::none)
    throw InputError(describe(err, r.in.cluster, r.in.model, r.in.job, r.plan));
  Evaluation e = evaluate(r.in.cluster, r.in.model, r.in.job, r.plan, r.mapping, r.in.cal);
  RunContext ctx{r.in.cluster, r.in.model, r.in.job, r.in.cal};
  write_output(a.out.path, a.out.format == "json" ? evaluation_json(ctx, r.plan, e)
                                                  : evaluation_text(ctx, r.plan, e));
  return 0;
}

}  // namespace

Runner register_evaluate(CLI::App& cmd) {
  auto a = std::make_shared<EvaluateArgs>();
  add_input_options(cmd, a->in);
  add_plan_options(cmd, a->plan);
  add_output_options(cmd, a->out, {"table", "json"});
  return [a] { return run_evaluate(*a); };
}

}  // namespace topoplan::cli
