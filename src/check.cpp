#include "topoplan/check.hpp"

#include <fmt/format.h>

#include "topoplan/report.hpp"
#include "topoplan/units.hpp"

namespace topoplan {
namespace {

std::string sample_group(const Mapping& m, Dim d) {
  auto groups = m.groups(d);
  const auto& g = groups.front();
  std::string s;
  for (std::size_t i = 0; i < g.size() && i < 4; ++i) s += fmt::format("{}{}", i ? "," : "", g[i]);
  if (g.size() > 4) s += fmt::format(",...,{}", g.back());
  return "ranks " + s;
}

std::string where(const Cluster& c, const GroupShape& g) {
  if (g.span_tier <= 0) return fmt::format("{} (inside one server)", span_name(c, g));
  return fmt::format("{} ({} GPU{} per server)", span_name(c, g), g.per_domain[0],
                     g.per_domain[0] == 1 ? "" : "s");
}

std::string plan_words(const Plan& p, std::int64_t layers) {
  // Enough to run it again: the interleaving and an uneven split when it has them.
  const std::string vpp = p.vpp > 1 ? fmt::format(" vpp {}", p.vpp) : "";
  return fmt::format("{} micro-batch {}{} ({}, ZeRO-{}, recompute {}, sp {}{})", degrees_string(p),
                     p.micro_batch, vpp, short_order_string(p), p.zero, recompute_string(p),
                     p.sequence_parallel ? "on" : "off", split_clause(p, layers));
}

/// A tier rule fires only when an order that keeps d's groups on a faster tier is materially
/// faster by the cost model (step time below 1 / (1 + tier_min_gain) of this one's): keeping a
/// group inside a server is a means, not an end, and it can cost the other dimensions more.
void tier_findings(const RunContext& ctx, const Plan& plan, const Mapping& mapping,
                   const Evaluation& e, const std::vector<Candidate>& alts, const CheckOptions& opt,
                   std::vector<Finding>& findings) {
  const auto& c = ctx.cluster;
  for (Dim d : {Dim::tp, Dim::cp, Dim::ep}) {
    if (plan[d] <= 1) continue;
    const Candidate* keep = nullptr;  // the fastest order with a smaller span for d
    for (const auto& alt : alts)
      if (alt.eval.shapes[d].span_tier < e.shapes[d].span_tier &&
          (!keep || ranks_before(alt, *keep)))
        keep = &alt;
    if (!keep || !(e.step_time > (1.0 + opt.tier_min_gain) * keep->eval.step_time)) continue;
    std::string msg =
        fmt::format("{} groups of {} (first: {}) span {}; order {} keeps them on {}", to_string(d),
                    plan[d], sample_group(mapping, d), where(c, e.shapes[d]),
                    short_order_string(keep->plan), where(c, keep->eval.shapes[d]));
    const double mine = exposed_comm(e, d), best = exposed_comm(keep->eval, d);
    if (mine > 0 && best > 0)
      msg += fmt::format(": {} communication {:.1f}x slower ({:.2f} s vs {:.2f} s per step)",
                         to_string(d), mine / best, mine, best);
    msg += fmt::format("; step time {:.3f} s vs {:.3f} s", e.step_time, keep->eval.step_time);
    findings.push_back({fmt::format("{}-tier", to_string(d)), Severity::error, msg});
  }
}

}  // namespace

const char* to_string(Severity s) { return s == Severity::error ? "error" : "warning"; }

bool CheckResult::passed() const {
  for (const auto& f : findings)
    if (f.severity == Severity::error) return false;
  return true;
}

namespace {

/// MoE plans: the experts' other TP choice when clearly faster, and MoE layers that wait on
/// their host.
void moe_findings(const RunContext& ctx, const Plan& plan, const Evaluation& e,
                  const CheckOptions& opt, std::vector<Finding>& findings) {
  const Cluster& c = ctx.cluster;
  // The experts' other TP choice (folded over the TP ranks or not), when clearly faster.
  if (const auto alt = with_other_expert_tp(c, ctx.model, ctx.job, ctx.cal, plan);
      alt && alt->eval.fits && alt->eval.step_time < (1.0 - opt.tier_min_gain) * e.step_time)
    findings.push_back(
        {"expert-tp", Severity::warning,
         fmt::format("expert tp {0} (--expert-tp {0}) takes {1:.3f} s per step, {2:.1f}% faster "
                     "than expert tp {3}: {4}",
                     expert_tp_of(alt->plan), alt->eval.step_time,
                     100.0 * (1.0 - alt->eval.step_time / e.step_time), expert_tp_of(plan),
                     folds_experts(alt->plan)
                         ? "fold the experts over the TP ranks (Megatron-core MoE parallel folding)"
                         : "keep the experts' TP at tp")});

  // MoE layers launched eagerly that wait on their host for more than the gain threshold.
  if (e.time.moe_host > opt.tier_min_gain * e.step_time)
    findings.push_back(
        {"moe-host-bound", Severity::warning,
         fmt::format("MoE layers wait {:.3f} s per step on the host ({:.1f}% of it): launched "
                     "eagerly, each MoE layer's host time ({:.1f} ms) outlasts its GPU work at "
                     "micro-batch {}; --cuda-graphs or a larger micro-batch hides it",
                     e.time.moe_host, 100.0 * e.time.moe_host / e.step_time,
                     ctx.cal.moe_layer_host * 1e3, plan.micro_batch)});
}

}  // namespace

CheckResult run_check(const RunContext& ctx, const Plan& plan, const Mapping& mapping,
                      const CheckOptions& opt) {
  CheckResult r;
  r.plan = plan;
  const auto& c = ctx.cluster;
  PlanError err = check_plan(c, ctx.model, ctx.job, plan);
  if (err != PlanError::none) {
    r.findings.push_back(
        {"invalid-degrees", Severity::error, describe(err, c, ctx.model, ctx.job, plan)});
    return r;
  }
  const Evaluation e = evaluate(c, ctx.model, ctx.job, plan, mapping, ctx.cal);
  r.eval = e;

  // Every order of the same degrees and choices, evaluated once.
  std::vector<Candidate> alts;
  for (const Order& o : distinct_orders(plan)) {
    Candidate alt{plan, {}, {}, {}, 0};
    alt.plan.order = o;
    alt.eval = evaluate(c, ctx.model, ctx.job, alt.plan, Mapping::from_order(alt.plan), ctx.cal);
    alts.push_back(alt);
    if (!r.best_same_degrees || ranks_before(alt, *r.best_same_degrees)) r.best_same_degrees = alt;
  }

  tier_findings(ctx, plan, mapping, e, alts, opt, r.findings);

  moe_findings(ctx, plan, e, opt, r.findings);

  const GroupShape& tp = e.shapes[Dim::tp];
  for (Dim d : {Dim::pp, Dim::dp}) {
    const GroupShape& g = e.shapes[d];
    if (plan[Dim::tp] > 1 && plan[d] > 1 && tp.span_tier > g.span_tier)
      r.findings.push_back(
          {"inverted-hierarchy", Severity::warning,
           fmt::format("tp traffic (4 collectives per layer per microbatch) crosses {} while {} "
                       "traffic stays on {}: put tp innermost in the order",
                       span_name(c, tp), to_string(d), span_name(c, g))});
  }

  if (!e.fits) r.findings.push_back({"memory", Severity::error, infeasible_reason(ctx, e)});

  if (r.best_same_degrees && e.step_time > opt.max_slowdown * r.best_same_degrees->eval.step_time)
    r.findings.push_back(
        {"mapping-slowdown", Severity::error,
         fmt::format("step time {:.3f} s is {:.2f}x the {:.3f} s of order {} with the same "
                     "degrees (limit {:.2f}x)",
                     e.step_time, e.step_time / r.best_same_degrees->eval.step_time,
                     r.best_same_degrees->eval.step_time,
                     short_order_string(r.best_same_degrees->plan), opt.max_slowdown)});

  SearchOptions all;
  all.top_k = 1;
  all.search_split = true;  // plan's default: the best plan plan lists first
  all.zero = opt.best_zero;
  all.sequence_parallel = opt.best_sequence_parallel;
  SearchResult best = search(c, ctx.model, ctx.job, ctx.cal, all);
  if (!best.top.empty()) {
    r.best_overall = best.top.front();
    const double b = r.best_overall->eval.step_time;
    if (e.step_time > opt.max_gap * b)
      r.findings.push_back(
          {"gap-to-best", Severity::error,
           fmt::format("step time {:.3f} s is {:.2f}x the best plan topoplan finds, {}: {:.3f} s "
                       "(limit {:.2f}x)",
                       e.step_time, e.step_time / b,
                       plan_words(r.best_overall->plan, ctx.model.spec.layers), b, opt.max_gap)});
  }
  return r;
}

CheckResult run_inference_check(const InferenceContext& ctx, const Plan& plan,
                                const Mapping& mapping, const CheckOptions& opt) {
  CheckResult r;
  r.plan = plan;
  const auto& c = ctx.cluster;
  PlanError err = check_inference_plan(c, ctx.model, plan);
  if (err != PlanError::none) {
    JobSpec none;
    r.findings.push_back(
        {"invalid-degrees", Severity::error, describe(err, c, ctx.model, none, plan)});
    return r;
  }
  const InferenceEval e = evaluate_inference(c, ctx.model, ctx.job, plan, mapping, ctx.cal);
  r.inference = e;
  std::vector<InferenceCandidate> alts;
  const InferenceCandidate* best = nullptr;
  for (const Order& o : distinct_orders(plan)) {
    InferenceCandidate alt{plan, {}};
    alt.plan.order = o;
    alt.eval =
        evaluate_inference(c, ctx.model, ctx.job, alt.plan, Mapping::from_order(alt.plan), ctx.cal);
    alts.push_back(alt);
  }
  for (const auto& alt : alts)
    if (!best || inference_ranks_before(alt, *best, Objective::latency)) best = &alt;
  if (best) r.best_same_degrees_serving = *best;
  constexpr Dim i = Dim::tp;
  if (plan[Dim::tp] > 1) {
    const InferenceCandidate* keep = nullptr;  // the fastest order with a smaller TP span
    for (const auto& alt : alts)
      if (alt.eval.shapes[i].span_tier < e.shapes[i].span_tier &&
          (!keep || inference_ranks_before(alt, *keep, Objective::latency)))
        keep = &alt;
    if (keep && e.token_latency > (1.0 + opt.tier_min_gain) * keep->eval.token_latency)
      r.findings.push_back(
          {"tp-tier", Severity::error,
           fmt::format(
               "tp groups of {} (first: {}) span {}; order {} keeps them on {}: every token "
               "pays {} all-reduces, {:.3f} ms instead of {:.3f} ms ({:.1f}x)",
               plan[Dim::tp], sample_group(mapping, Dim::tp), where(c, e.shapes[i]),
               short_order_string(keep->plan), where(c, keep->eval.shapes[i]),
               2 * ctx.model.spec.layers, e.decode.tp * 1e3, keep->eval.decode.tp * 1e3,
               e.decode.tp / keep->eval.decode.tp)});
  }
  if (!e.fits)
    r.findings.push_back(
        {"memory", Severity::error,
         fmt::format("needs {:.1f} GiB per GPU (KV cache {:.1f}); the {} has {:.1f} GiB",
                     e.memory_total() / units::kGiB, e.memory_kv / units::kGiB, c.gpu().name,
                     c.gpu().memory_bytes / units::kGiB)});
  if (best && e.token_latency > opt.max_slowdown * best->eval.token_latency)
    r.findings.push_back(
        {"mapping-slowdown", Severity::error,
         fmt::format(
             "{:.3f} ms per token is {:.2f}x the {:.3f} ms of order {} with the same degrees "
             "(limit {:.2f}x)",
             e.token_latency * 1e3, e.token_latency / best->eval.token_latency,
             best->eval.token_latency * 1e3, short_order_string(best->plan), opt.max_slowdown)});
  InferenceSearchOptions all;
  all.top_k = 1;
  InferenceSearchResult overall = search_inference(c, ctx.model, ctx.job, ctx.cal, all);
  if (!overall.top.empty()) {
    const auto& b = overall.top.front();
    r.best_overall_serving = b;
    if (e.token_latency > opt.max_gap * b.eval.token_latency)
      r.findings.push_back(
          {"gap-to-best", Severity::error,
           fmt::format("{:.3f} ms per token is {:.2f}x the best plan, {} ({}): {:.3f} ms "
                       "(limit {:.2f}x)",
                       e.token_latency * 1e3, e.token_latency / b.eval.token_latency,
                       degrees_string(b.plan, false), short_order_string(b.plan),
                       b.eval.token_latency * 1e3, opt.max_gap)});
  }
  return r;
}

std::vector<Dim> failing_tier_dims(const CheckResult& r) {
  std::vector<Dim> out;
  for (const Finding& f : r.findings)
    for (Dim d : {Dim::tp, Dim::cp, Dim::ep})
      if (f.severity == Severity::error && f.rule == std::string(to_string(d)) + "-tier")
        out.push_back(d);
  return out;
}

}  // namespace topoplan
