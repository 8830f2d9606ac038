#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <thread>

#include "cli/common.hpp"
#include "cli/progress.hpp"
#include "topoplan/error.hpp"
#include "topoplan/html_report.hpp"
#include "topoplan/inference_report.hpp"
#include "topoplan/report.hpp"
#include "topoplan/search.hpp"

namespace topoplan::cli {
namespace {

struct PlanArgs {
  InputOptions in;
  InferenceOptions inf;
  OutputOptions out;
  ChoiceOptions choice;
  int tp = 0, pp = 0, dp = 0, cp = 0, ep = 0, micro_batch = 0, vpp = 0, top = 10;
  int expert_tp = 0;
  int max_tp = 0, max_cp = kDefaultMaxCp, max_ep = 0, max_pp = 0;
  int threads = 0;
  std::int64_t first_stage_layers = 0, last_stage_layers = 0;  ///< 0: topoplan's split
  std::int64_t max_plans = 500'000'000;
  bool variants = false;
  bool search_split = true;
  bool place = false;
  std::string order;
};

int run_inference_plan(const PlanArgs& a) {
  InputOptions io = a.in;
  io.inference = true;
  Inputs in = load_inputs(io);
  InferenceJob job = inference_job(io, a.inf);
  InferenceSearchOptions opt;
  opt.fixed[Dim::tp] = a.tp;
  opt.fixed[Dim::pp] = a.pp;
  opt.fixed[Dim::dp] = a.dp;
  opt.fixed[Dim::ep] = a.ep;
  if (!a.order.empty()) opt.order = parse_order(a.order, "--order");
  opt.objective = parse_objective(a.inf.objective, "--objective");
  opt.max_token_latency = a.inf.max_token_latency_ms / 1e3;
  opt.max_ttft = a.inf.max_ttft_ms / 1e3;
  opt.top_k = a.top;
  InferenceSearchResult r =
      with_flag_names([&] { return search_inference(in.cluster, in.model, job, in.cal, opt); });
  InferenceContext ctx{in.cluster, in.model, job, in.cal};
  write_output(a.out.path, a.out.format == "json" ? inference_search_json(ctx, r, opt.objective)
                                                  : inference_search_text(ctx, r, opt.objective));
  return r.top.empty() ? 1 : 0;
}

int run_plan(const PlanArgs& a) {
  reject_unused_flags(a.in, a.inf.enabled);
  if (a.inf.enabled && a.out.format == "html")
    throw_input("--format", "", "html: applies to training plans only");
  if (a.inf.enabled) return run_inference_plan(a);
  Inputs in = load_inputs(a.in);
  SearchOptions opt;
  opt.fixed[Dim::tp] = a.tp;
  opt.fixed[Dim::pp] = a.pp;
  opt.fixed[Dim::dp] = a.dp;
  opt.fixed[Dim::cp] = a.cp;
  opt.fixed[Dim::ep] = a.ep;
  opt.max[Dim::tp] = a.max_tp;
  opt.max[Dim::cp] = a.max_cp;
  opt.max[Dim::ep] = a.max_ep;
  opt.max[Dim::pp] = a.max_pp;
  opt.expert_tp = a.expert_tp;
  if (a.expert_tp > 0 && !in.model.spec.moe())
    throw_input("--expert-tp", "", fmt::format("{} has no experts", in.model.spec.name));
  opt.threads = a.threads > 0 ? a.threads
                              : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  ProgressBar bar;
  if (bar.enabled()) opt.progress = [&bar](double f, std::int64_t n) { bar.update(f, n); };
  if (a.micro_batch > in.job.global_batch)
    throw_input("--micro-batch", "",
                fmt::format("expected at most the global batch ({} sequences), got {}",
                            in.job.global_batch, a.micro_batch));
  opt.micro_batch = a.micro_batch;
  opt.vpp = a.vpp;
  opt.first_stage_layers = a.first_stage_layers;
  opt.last_stage_layers = a.last_stage_layers;
  if (!a.order.empty()) opt.order = parse_order(a.order, "--order");
  opt.top_k = a.top;
  opt.distinct = !a.variants;
  opt.search_split = a.search_split;
  opt.place = a.place;
  opt.zero = a.choice.zero;
  if (!a.choice.recompute.empty())
    opt.recompute = parse_recompute(a.choice.recompute, "--recompute");
  if (a.choice.sp_on || a.choice.sp_off) opt.sequence_parallel = a.choice.sp_on;
  apply_stack_choices(a.in, a.choice, opt.zero, opt.sequence_parallel);
  if (a.max_plans < 0)
    throw_input("--max-plans", "",
                fmt::format("expected 0 (no limit) or a positive integer, got {}", a.max_plans));
  opt.max_plans = a.max_plans;
  opt.stop = &stop_requested();
  SearchResult r = with_flag_names([&] {
    try {
      return search(in.cluster, in.model, in.job, in.cal, opt);
    } catch (const SearchTooLarge& e) {
      throw InputError(fmt::format(
          "--max-plans: this search could cost up to {} plans (at most about {:.2g} s on one "
          "core), over the limit of {}; narrow it: fix a degree (--tp, --pp, --cp, --ep, --dp) or "
          "--micro-batch, cap one (--max-tp, --max-pp, --max-cp, --max-ep), fix --order, --vpp, "
          "--zero or --recompute; or raise --max-plans (0: no limit)",
          e.bound, e.seconds_on_one_core(), e.limit));
    }
  });
  bar.finish();
  spdlog::debug("searched: {} plans costed, {} pruned for memory, of at most {}", r.evaluated,
                r.out_of_memory, r.plans_upper_bound);
  const RunContext ctx = in.run();
  write_output(a.out.path, a.out.format == "json"   ? plan_report_json(ctx, r)
                           : a.out.format == "html" ? plan_report_html(ctx, r)
                                                    : plan_report_text(ctx, r));
  return r.top.empty() ? 1 : 0;
}

}  // namespace

Runner register_plan(CLI::App& cmd) {
  auto a = std::make_shared<PlanArgs>();
  add_input_options(cmd, a->in);
  for (auto [flag, value, what] : {std::tuple{"--tp", &a->tp, "tensor-parallel degree"},
                                   {"--pp", &a->pp, "pipeline-parallel degree"},
                                   {"--dp", &a->dp, "data-parallel degree"},
                                   {"--cp", &a->cp, "context-parallel degree"},
                                   {"--ep", &a->ep, "expert-parallel degree (MoE)"}})
    cmd.add_option(flag, *value, fmt::format("fix the {} (default: searched)", what));
  cmd.add_option("--expert-tp", a->expert_tp,
                 "fix the experts' tensor-parallel degree: each plan's experts use min(this, tp), "
                 "which must divide tp; 1 lets EP span the TP ranks (Megatron-core's MoE parallel "
                 "folding). Default: searched, tp and 1 for each plan (a value at least the "
                 "largest tp keeps it equal to tp, Megatron's default)");
  for (auto [flag, value, dim] : {std::tuple{"--max-tp", &a->max_tp, "tp"},
                                  {"--max-ep", &a->max_ep, "ep"},
                                  {"--max-pp", &a->max_pp, "pp"}})
    cmd.add_option(flag, *value, fmt::format("search {} up to this", dim));
  cmd.add_option("--max-cp", a->max_cp,
                 "search cp up to this (and while each rank keeps >= 2048 tokens per sequence)")
      ->capture_default_str();
  cmd.add_option("--threads", a->threads,
                 "worker threads (default: every core); same result for any");
  cmd.add_option("--max-plans", a->max_plans,
                 "refuse a search that could cost more plans than this, before it runs, and say "
                 "how to narrow it (0: no limit)")
      ->capture_default_str();
  cmd.add_option("--micro-batch", a->micro_batch, "fix the micro-batch size (default: searched)");
  cmd.add_option("--vpp", a->vpp, "fix the virtual pipeline stages per rank (default: searched)");
  cmd.add_option("--first-stage-layers", a->first_stage_layers,
                 "layers on the first pipeline stage of every plan (Megatron-LM's "
                 "--decoder-first-pipeline-num-layers; plans it does not fit are left out)");
  cmd.add_option("--last-stage-layers", a->last_stage_layers,
                 "layers on the last pipeline stage (--decoder-last-pipeline-num-layers)");
  cmd.add_flag("--search-split,!--no-search-split", a->search_split,
               "also try moving layers from the last pipeline stage (logits, multi-token "
               "prediction) to the first when the last is the slowest (pp 3 and more; on by "
               "default since session 30, --no-search-split for Megatron-LM's even split only)");
  cmd.add_option("--order", a->order, "fix the order string, e.g. tp-dp-pp (default: searched)");
  add_choice_options(cmd, a->choice, true);
  add_inference_options(cmd, a->inf, true);
  cmd.add_option("--top", a->top, "how many plans to list")->capture_default_str();
  cmd.add_flag("--place", a->place,
               "place ranks with the placement search even when no GPU is down: every TP group "
               "inside one server (with --gpus N, on N of the GPUs); on by itself with GPUs down");
  cmd.add_flag("--variants", a->variants,
               "list every variant, not only the best of each degrees and micro-batch");
  add_output_options(cmd, a->out, {"table", "json", "html"});
  return [a] { return run_plan(*a); };
}

}  // namespace topoplan::cli
