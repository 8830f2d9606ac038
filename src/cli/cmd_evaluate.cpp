#include <memory>

#include <fmt/format.h>

#include "cli/common.hpp"
#include "topoplan/error.hpp"
#include "topoplan/report.hpp"

namespace topoplan::cli {
namespace {

struct EvaluateArgs {
  InputOptions in;
  OutputOptions out;
  ChoiceOptions choice;
  int tp = 1, pp = 1, dp = 0, micro_batch = 1;
  std::string order = "tp-cp-ep-dp-pp";
};

int run_evaluate(const EvaluateArgs& a) {
  Inputs in = load_inputs(a.in);
  Plan p;
  p[Dim::tp] = a.tp;
  p[Dim::pp] = a.pp;
  for (auto [flag, v] : {std::pair{"--tp", a.tp}, std::pair{"--pp", a.pp}})
    if (v < 1) throw_input(flag, "", fmt::format("expected a positive integer, got {}", v));
  if (a.dp > 0) {
    p[Dim::dp] = a.dp;
  } else {
    const std::int64_t n = in.cluster.gpu_count();
    if (n % (static_cast<std::int64_t>(a.tp) * a.pp) != 0)
      throw_input("--tp/--pp", "",
                  fmt::format("tp {} x pp {} does not divide the cluster's {} GPUs", a.tp, a.pp, n));
    p[Dim::dp] = static_cast<int>(n / (a.tp * a.pp));
  }
  p.micro_batch = a.micro_batch;
  p.order = parse_order(a.order, "--order");
  if (a.choice.zero >= 0 || a.choice.zero < -1) p.zero = a.choice.zero;
  if (!a.choice.recompute.empty()) p.recompute = parse_recompute(a.choice.recompute, "--recompute");
  p.sequence_parallel = a.choice.sp_on;
  PlanError err = check_plan(in.cluster, in.model, in.job, p);
  if (err != PlanError::none) throw InputError(describe(err, in.cluster, in.model, in.job, p));
  Evaluation e = evaluate(in.cluster, in.model, in.job, p, Mapping::from_order(p), in.cal);
  RunContext ctx{in.cluster, in.model, in.job, in.cal};
  write_output(a.out, a.out.format == "json" ? evaluation_json(ctx, p, e)
                                             : evaluation_text(ctx, p, e));
  return 0;
}

}  // namespace

Runner register_evaluate(CLI::App& cmd) {
  auto a = std::make_shared<EvaluateArgs>();
  add_input_options(cmd, a->in);
  cmd.add_option("--tp", a->tp, "tensor-parallel degree")->capture_default_str();
  cmd.add_option("--pp", a->pp, "pipeline-parallel degree")->capture_default_str();
  cmd.add_option("--dp", a->dp, "data-parallel degree (default: GPUs / (tp x pp))");
  cmd.add_option("--micro-batch", a->micro_batch, "micro-batch size")->capture_default_str();
  cmd.add_option("--order", a->order, "Megatron order string, leftmost varies fastest")
      ->capture_default_str();
  add_choice_options(cmd, a->choice, false);
  add_output_options(cmd, a->out);
  return [a] { return run_evaluate(*a); };
}

}  // namespace topoplan::cli
