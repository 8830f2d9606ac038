#include "topoplan/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "detail/json_output.hpp"
#include "detail/report_json.hpp"
#include "topoplan/export.hpp"
#include "topoplan/stage_balance.hpp"
#include "topoplan/units.hpp"

namespace topoplan {
namespace {

using detail::sig;
using nlohmann::ordered_json;

std::string thousands(double v) {
  auto s = fmt::format("{:.0f}", v);
  std::string out;
  int n = 0;
  for (auto it = s.rbegin(); it != s.rend(); ++it) {
    if (n && n % 3 == 0 && *it != '-') out.insert(out.begin(), ',');
    out.insert(out.begin(), *it);
    ++n;
  }
  return out;
}

std::string pct(double part, double whole) {
  return fmt::format("{:5.1f}%", whole > 0 ? 100.0 * part / whole : 0.0);
}

}  // namespace

AccuracyBand detail::band_for(const RunContext& ctx) {
  return accuracy_band({RunKind::training, ctx.cluster.gpu().arch, precision_of(ctx.job.dtype),
                        ctx.model.spec.moe(), ctx.model.spec.name},
                       ctx.cal);
}

AccuracyBand detail::band_for(const InferenceContext& ctx) {
  return accuracy_band(
      {RunKind::inference, ctx.cluster.gpu().arch, precision_of(ctx.job.weight_dtype),
       ctx.model.spec.moe(), ctx.model.spec.name},
      ctx.cal);
}

namespace {

/// The expected-error line's clause on a model whose published runs the corpus shows but does not
/// check: some configurations (its other runs are checked), or the whole model. "" when none.
std::string known_gap_clause(const AccuracyBand& b) {
  if (b.known_gap.runs == 0) return "";
  const std::string kind = b.basis.substr(0, b.basis.find(','));
  const double mean = 100.0 * b.known_gap.mean, worst = 100.0 * b.known_gap.worst;
  if (b.model_checked_runs > 0)
    return fmt::format(
        "; but topoplan missed {} of the {} published {} runs of {} by {:.1f}% on average, "
        "{:.1f}% at worst (shown, not checked; its other {} are checked): compare your "
        "configuration with those runs (topoplan calibrate) before trusting its step time",
        b.known_gap.runs, b.known_gap.runs + b.model_checked_runs, kind, b.model, mean, worst,
        b.model_checked_runs);
  return fmt::format(
      "; but topoplan missed the {} published {} run{} of {} by {:.1f}% on average, {:.1f}% at "
      "worst (shown, not checked): its step times for this model are not to be trusted",
      b.known_gap.runs, kind, b.known_gap.runs == 1 ? "" : "s", b.model, mean, worst);
}

}  // namespace

std::string detail::accuracy_line(const AccuracyBand& b) {
  if (!b.measured)
    return "expected error: not measured for these calibration constants (topoplan calibrate "
           "--calibration FILE measures them)";
  const std::string gap = known_gap_clause(b);
  return fmt::format(
      "expected error: {:.1f}% mean, {:.1f}% worst, {:.1f}% {} on average, on the {} published {} "
      "runs held back from the fit{} (topoplan calibrate){}",
      100.0 * b.held_out.mean, 100.0 * b.held_out.worst, 100.0 * std::abs(b.held_out.bias),
      b.held_out.bias >= 0 ? "fast" : "slow", b.held_out.runs, b.basis,
      b.wanted == b.basis
          ? std::string()
          : fmt::format("; fewer than {} checked {} runs, so widened", kMinBandRuns, b.wanted),
      gap);
}

ordered_json detail::accuracy_json(const AccuracyBand& b) {
  if (!b.measured) return nullptr;
  ordered_json j;
  j["basis"] = b.basis;
  j["requested_basis"] = b.wanted;
  j["held_back_runs"] = b.held_out.runs;
  j["mean_abs_error"] = sig(b.held_out.mean, 4);
  j["worst_abs_error"] = sig(b.held_out.worst, 4);
  j["bias"] = sig(b.held_out.bias, 4);
  if (b.known_gap.runs == 0) {
    j["known_gap"] = nullptr;
  } else {
    ordered_json g;
    g["model"] = b.model;
    g["runs"] = b.known_gap.runs;
    g["mean_abs_error"] = sig(b.known_gap.mean, 4);
    g["worst_abs_error"] = sig(b.known_gap.worst, 4);
    g["checked_runs"] = b.model_checked_runs;  // since session 32
    j["known_gap"] = g;
  }
  return j;
}

std::string span_name(const Cluster& c, const GroupShape& g) {
  if (g.size <= 1 || g.span_tier < 0) return "-";
  return c.tier_name(g.span_tier);
}

std::string infeasible_reason(const RunContext& ctx, const Evaluation& e) {
  if (e.fits) return "";
  return fmt::format("needs {:.1f} GiB per GPU; the {} has {:.1f} GiB",
                     units::to_GiB(e.memory.total()), ctx.cluster.gpu().name,
                     units::to_GiB(ctx.cluster.gpu().memory_bytes));
}

std::string context_line(const RunContext& ctx) {
  const auto& c = ctx.cluster;
  const std::string gpus =
      ctx.job.gpus > 0 && ctx.job.gpus < c.gpu_count()
          ? fmt::format("{} of {} x {}", ctx.job.gpus, c.gpu_count(), c.gpu().name)
          : fmt::format("{} x {}", c.gpu_count(), c.gpu().name);
  const std::string down =
      !c.spec().down.empty() ? fmt::format(", {} down", c.spec().down.size()) : std::string();
  // Multi-token prediction, when the job trains it (the model's own count, or --mtp-layers).
  const std::string mtp = ctx.model.spec.mtp_layers > 0
                              ? fmt::format(", MTP {}", ctx.model.spec.mtp_layers)
                              : std::string();
  return fmt::format("{} on {} x {} ({}{}), seq {}, global batch {}, {}{}", ctx.model.spec.name,
                     c.spec().nodes, c.spec().name, gpus, down, ctx.job.seq_len,
                     ctx.job.global_batch, to_string(ctx.job.dtype), mtp);
}

std::vector<std::string> explain_winner(const RunContext& ctx, const SearchResult& r) {
  std::vector<std::string> out;
  if (r.top.empty()) return out;
  const Candidate& w = r.top.front();
  const auto& c = ctx.cluster;
  for (Dim d : {Dim::tp, Dim::cp, Dim::ep, Dim::pp, Dim::dp}) {
    if (w.plan[d] <= 1) continue;
    const double exposed = exposed_comm(w.eval, d);
    out.push_back(fmt::format("{} = {}: groups span {}, {:.3f} s exposed per step ({:.1f}% of it)",
                              to_string(d), w.plan[d], span_name(c, w.eval.shapes[d]), exposed,
                              100.0 * exposed / w.eval.step_time));
  }
  // An explicit split (given, or found by the split search): the layers per stage and the
  // Megatron-LM flags export writes for it.
  if (sets_first_last_split(w.plan)) {
    out.push_back(fmt::format("layers per stage {} (Megatron-LM{})",
                              split_string(w.plan, ctx.model.spec.layers),
                              megatron_pipeline_args(w.plan, ctx.model.spec)));
  }
  // The experts' TP, folded or not: the same plan with the other choice.
  if (const auto& o = r.other_expert_tp) {
    const bool folded = folds_experts(w.plan);
    const double pct = 100.0 * (o->eval.step_time / w.eval.step_time - 1.0);
    const std::string cost = o->eval.fits
                                 ? fmt::format("{:.3f} s per step, {:.1f}% {}", o->eval.step_time,
                                               std::abs(pct), pct >= 0 ? "slower" : "faster")
                                 : "does not fit (" + infeasible_reason(ctx, o->eval) + ")";
    out.push_back(folded ? fmt::format("expert tp = {}: EP spans the TP ranks (MoE parallel "
                                       "folding); with expert tp = tp the same plan takes {}",
                                       expert_tp_of(w.plan), cost)
                         : fmt::format("expert tp = tp = {}: folded (expert tp 1, EP over the TP "
                                       "ranks) the same plan takes {}",
                                       w.plan[Dim::tp], cost));
  }
  // The same degrees laid out the worst way (found by the search): what the mapping is worth.
  if (r.worst_order) {
    const Candidate& worst = *r.worst_order;
    std::string where;
    for (Dim d : {Dim::tp, Dim::cp, Dim::ep, Dim::pp, Dim::dp}) {
      if (w.plan[d] <= 1) continue;
      where += fmt::format("{}{} on {}", where.empty() ? "" : ", ", to_string(d),
                           span_name(c, worst.eval.shapes[d]));
    }
    out.push_back(
        fmt::format("the same degrees with order {} put {}: {:.2f} s per step, {:.2f}x "
                    "slower",
                    short_order_string(worst.plan), where, worst.eval.step_time,
                    worst.eval.step_time / w.eval.step_time));
  }
  for (std::size_t k = 1; k < r.top.size(); ++k) {
    const Candidate& o = r.top[k];
    if (o.plan.degree == w.plan.degree && o.plan.micro_batch == w.plan.micro_batch) continue;
    const double slower = 100.0 * (o.eval.step_time / w.eval.step_time - 1.0);
    out.push_back(
        fmt::format("the best plan with other degrees or micro-batch, {} micro-batch {} ({}, "
                    "ZeRO-{}, recompute {}, sp {}), is {:.{}f}% slower",
                    degrees_string(o.plan), o.plan.micro_batch, short_order_string(o.plan),
                    o.plan.zero, recompute_string(o.plan), o.plan.sequence_parallel ? "on" : "off",
                    slower, slower < 1.0 ? 2 : 1));
    break;
  }
  return out;
}

std::string stages_text(const RunContext& ctx, const Plan& p, const Mapping& map, double step_time,
                        double even_split_step_time) {
  const std::vector<const GpuSpec*> gpus = stage_gpus(ctx.cluster, p, map);
  const StageLayers split = split_of(p, ctx.model.spec.layers);
  std::string stages;
  for (int i = 0; i < p[Dim::pp]; ++i) {
    // Runs of stages on one GPU type: "a100-80gb x 2 (12 12 layers)".
    int k = i;
    while (k + 1 < p[Dim::pp] &&
           gpus[static_cast<std::size_t>(k + 1)] == gpus[static_cast<std::size_t>(i)])
      ++k;
    std::string layers;
    for (int s2 = i; s2 <= k; ++s2)
      layers += fmt::format("{}{}", layers.empty() ? "" : " ", layers_on_stage(p, split, s2));
    stages += fmt::format("{}{} x {} ({} layers)", stages.empty() ? "" : ", ",
                          gpus[static_cast<std::size_t>(i)]->name, k - i + 1, layers);
    i = k;
  }
  std::string out = "mixed GPUs: pipeline stages on " + stages;
  if (even_split_step_time > 0)
    out += fmt::format(
        "; this split balances them: {:.3f} s per step, against {:.3f} s for the "
        "same plan with the default split, which ignores the difference ({:.1f}% "
        "faster)",
        step_time, even_split_step_time, 100.0 * (1.0 - step_time / even_split_step_time));
  return out;
}

std::string placement_text(const RunContext& ctx, const Plan& p, const PlacementStats& s) {
  const Cluster& c = ctx.cluster;
  std::string out = fmt::format("placement: {} of {} usable GPUs", p.world(), c.usable_count());
  if (!c.spec().down.empty())
    out += fmt::format(" ({} down: {})", c.spec().down.size(),
                       devices_string(c.spec(), c.spec().down));
  if (c.absent_count() > 0)
    out += fmt::format(" ({} slots absent: smaller servers or leaf padding)", c.absent_count());
  if (s.idle > 0)
    out += fmt::format(", {} idle ({}; the degrees multiply to {})", s.idle,
                       devices_string(c.spec(), s.idle_devices, 4), p.world());
  if (s.order_kept)
    return out + fmt::format(
                     "; the best order string over the usable GPUs ({}) was the best of "
                     "{} placements costed",
                     s.best_order, s.candidates);
  return out + fmt::format(
                   "; explicit placement, every TP group inside one server: {:.1f}% "
                   "faster than the best order string over the usable GPUs ({}, {:.3f} "
                   "s{}); {} placements costed",
                   100.0 * s.gain(), s.best_order, s.order_step_time,
                   c.mixed() ? ", both with the default layer split" : "", s.candidates);
}

namespace {

/// The ranked plans, one row each: degrees, choices, step time, throughput, memory, and where
/// each dimension's groups sit (a column per dimension any listed plan uses).
std::string plans_table(const RunContext& ctx, const std::vector<Candidate>& top) {
  std::string out;
  std::vector<Dim> tiers;
  for (Dim d : {Dim::tp, Dim::cp, Dim::ep, Dim::pp, Dim::dp})
    for (const auto& cand : top)
      if (cand.plan[d] > 1) {
        tiers.push_back(d);
        break;
      }
  // The experts' TP: a column only when a listed plan folds it below tp.
  const bool etp_column = std::any_of(
      top.begin(), top.end(), [](const Candidate& cand) { return folds_experts(cand.plan); });
  out += fmt::format("{:>4} {:>4} {:>3} {:>3} ", "rank", "tp", "cp", "ep");
  if (etp_column) out += fmt::format("{:>3} ", "etp");
  // The first and last stages' layers: a column only when a listed plan sets them (the split
  // search moves layers off the last stage; the others run topoplan's split).
  const bool split_column = std::any_of(top.begin(), top.end(), [](const Candidate& cand) {
    return sets_first_last_split(cand.plan);
  });
  out += fmt::format("{:>4} {:>5} {:>4} {:>3}  ", "pp", "dp", "mb", "vpp");
  if (split_column) out += fmt::format("{:>7}  ", "split");
  // The recompute column is as wide as its longest entry ("none+layernorm,moe_act").
  std::size_t rc_width = 9;
  for (const auto& cand : top) rc_width = std::max(rc_width, recompute_string(cand.plan).size());
  out +=
      fmt::format("{:<14} {:>4} {:<{}} {:>3}  {:>9} {:>11} {:>8} {:>6} {:>8} ", "order", "zero",
                  "recompute", rc_width, "sp", "step s", "tokens/s", "TFLOP/s", "MFU", "mem GiB");
  for (Dim d : tiers) out += fmt::format(" {:<7}", fmt::format("{} on", to_string(d)));
  out += "\n";
  int rank = 1;
  for (const auto& cand : top) {
    const auto& e = cand.eval;
    out += fmt::format("{:>4} {:>4} {:>3} {:>3} ", rank++, cand.plan[Dim::tp], cand.plan[Dim::cp],
                       cand.plan[Dim::ep]);
    if (etp_column)
      out += fmt::format("{:>3} ", cand.plan[Dim::ep] > 1 ? std::to_string(expert_tp_of(cand.plan))
                                                          : std::string("-"));
    out += fmt::format("{:>4} {:>5} {:>4} {:>3}  ", cand.plan[Dim::pp], cand.plan[Dim::dp],
                       cand.plan.micro_batch, cand.plan.vpp);
    if (split_column) out += fmt::format("{:>7}  ", split_cell(cand.plan, ctx.model.spec.layers));
    out += fmt::format("{:<14} {:>4} {:<{}} {:>3}  {:>9.3f} {:>11} {:>8.1f} {:>5.1f}% {:>8.1f} ",
                       short_order_string(cand.plan), cand.plan.zero, recompute_string(cand.plan),
                       rc_width, cand.plan.sequence_parallel ? "on" : "-", e.step_time,
                       thousands(e.tokens_per_s), units::to_TFLOPs(e.model_flops_per_gpu),
                       100.0 * e.mfu, units::to_GiB(e.memory.total()));
    for (Dim d : tiers) out += fmt::format(" {:<7}", span_name(ctx.cluster, e.shapes[d]));
    out += "\n";
  }
  return out;
}

}  // namespace

std::string plan_report_text(const RunContext& ctx, const SearchResult& r) {
  std::string out = "topoplan plan: " + context_line(ctx) + "\n";
  out += fmt::format("costed {} plans; {} more do not fit in memory", r.evaluated, r.out_of_memory);
  std::int64_t rejected = 0;
  for (const auto& [why, n] : r.rejected) rejected += n;
  if (rejected) {
    out += fmt::format("; {} rejected before costing:", rejected);
    std::string sep = " ";
    for (const auto& [why, n] : r.rejected) {
      out += fmt::format("{}{} {}", sep, n, why);
      sep = ", ";
    }
  }
  out += "\n\n";
  if (r.top.empty() && !r.closest_unfit) {  // nothing even reached memory: say why
    return out +
           "no valid plan: no factorization of these GPUs passes the rules above (with a "
           "large cluster and a small global batch, data parallelism cannot use every GPU: "
           "try --gpus, a larger --global-batch, or fix --tp/--cp/--pp)\n";
  }
  if (r.top.empty()) {
    out += "no plan fits in memory";
    if (r.closest_unfit)
      out += fmt::format("; the closest, {} micro-batch {}, {}",
                         degrees_string(r.closest_unfit->plan), r.closest_unfit->plan.micro_batch,
                         infeasible_reason(ctx, r.closest_unfit->eval));
    return out + "\n";
  }
  out += plans_table(ctx, r.top);
  out += fmt::format("\n{}\n", detail::accuracy_line(detail::band_for(ctx)));
  out += "\nwhy #1 wins:\n";
  for (const auto& line : explain_winner(ctx, r)) out += "  - " + line + "\n";
  const Candidate& w = r.top.front();
  if (w.placement) out += placement_text(ctx, w.plan, *w.placement) + "\n";
  if (ctx.cluster.mixed()) {
    const Mapping map =
        w.devices.empty() ? Mapping::from_order(w.plan) : Mapping::with_devices(w.plan, w.devices);
    out += stages_text(ctx, w.plan, map, w.eval.step_time, w.even_split_step_time) + "\n";
    if (const auto& b = r.best_even_split)
      out += fmt::format(
          "side by side: #1 ({} micro-batch {}, layers per stage as above) {:.3f} s per step; the "
          "best plan with the default split, which ignores the difference ({} micro-batch {}, "
          "{}), {:.3f} s: #1 is {:.1f}% faster\n",
          degrees_string(w.plan), w.plan.micro_batch, w.eval.step_time, degrees_string(b->plan),
          b->plan.micro_batch, short_order_string(b->plan), b->eval.step_time,
          100.0 * (1.0 - w.eval.step_time / b->eval.step_time));
  }
  return out;
}

std::string plan_report_json(const RunContext& ctx, const SearchResult& r) {
  ordered_json j;
  j["schema"] = kSearchSchema;
  j["candidates_evaluated"] = r.evaluated;
  j["out_of_memory"] = r.out_of_memory;
  ordered_json rej = ordered_json::object();
  for (const auto& [why, n] : r.rejected) rej[why] = n;
  j["rejected"] = rej;
  ordered_json plans = ordered_json::array();
  for (const auto& cand : r.top) {
    ordered_json pj = detail::to_json(ctx, cand.plan, cand.eval);
    if (cand.placement)
      pj["placement"] = detail::placement_json(ctx, cand.plan, cand.devices, *cand.placement);
    if (cand.even_split_step_time > 0)
      pj["even_split_step_time_s"] = detail::sig(cand.even_split_step_time);
    plans.push_back(std::move(pj));
  }
  j["plans"] = plans;
  j["explanation"] = explain_winner(ctx, r);
  j["expected_error"] = detail::accuracy_json(detail::band_for(ctx));
  if (r.closest_unfit)
    j["closest_unfit"] = detail::to_json(ctx, r.closest_unfit->plan, r.closest_unfit->eval);
  return j.dump(2) + "\n";
}

std::string evaluation_json(const RunContext& ctx, const Plan& p, const Evaluation& e) {
  ordered_json j = detail::to_json(ctx, p, e);
  j["expected_error"] = detail::accuracy_json(detail::band_for(ctx));
  return j.dump(2) + "\n";
}

std::string evaluation_json(const RunContext& ctx, const Plan& p, const Evaluation& e,
                            const Mapping& map, const PlacementStats& s) {
  ordered_json j = detail::to_json(ctx, p, e);
  std::vector<int> devices(static_cast<std::size_t>(p.world()));
  for (std::int64_t r = 0; r < p.world(); ++r) devices[static_cast<std::size_t>(r)] = map.device(r);
  j["placement"] = detail::placement_json(ctx, p, devices, s);
  j["expected_error"] = detail::accuracy_json(detail::band_for(ctx));
  return j.dump(2) + "\n";
}

std::string evaluation_text(const RunContext& ctx, const Plan& p, const Evaluation& e) {
  const auto& c = ctx.cluster;
  std::string out = "topoplan evaluate: " + context_line(ctx) + "\n";
  out += fmt::format(
      "plan: {}, micro-batch {}, vpp {}, order {}{} ({} "
      "microbatches per pipeline per step)\n      ZeRO-{}, recompute {}, sequence "
      "parallelism {}\n\n",
      degrees_string(p), p.micro_batch, p.vpp, order_string(p.order),
      split_clause(p, ctx.model.spec.layers), e.microbatches, p.zero,
      p.offload_layers > 0
          ? fmt::format("none ({} layers' activations offloaded to host memory)", p.offload_layers)
          : recompute_string(p, ctx.job.recompute_modules),
      p.sequence_parallel ? "on" : "off");
  out += fmt::format(
      "step time {:.3f} s   tokens/s {}   model TFLOP/s per GPU {:.1f}   MFU "
      "{:.1f}%{}\n",
      e.step_time, thousands(e.tokens_per_s), units::to_TFLOPs(e.model_flops_per_gpu), 100 * e.mfu,
      low_precision_linear(ctx.job.dtype)
          ? fmt::format(" ({:.1f}% of the {} peak)", 100 * e.mfu_format_peak,
                        format_peak_name(ctx.job.dtype))
          : std::string());
  out += fmt::format("memory {:.1f} of {:.1f} GiB per GPU: {}\n", units::to_GiB(e.memory.total()),
                     units::to_GiB(c.gpu().memory_bytes),
                     e.fits ? "fits" : "DOES NOT FIT (" + infeasible_reason(ctx, e) + ")");
  out += detail::accuracy_line(detail::band_for(ctx)) + "\n\n";
  out += "where the time goes (critical path; the parts add up to the step time)\n";
  const double T = e.step_time;
  auto row = [&](const char* name, double v) {
    out += fmt::format("  {:<22} {:>10.3f} s  {}\n", name, v, pct(v, T));
  };
  row("compute", e.time.compute);
  row("  of it matmul", e.compute.matmul);
  row("  of it element-wise", e.compute.elementwise);
  row("tp communication", e.time.tp);
  if (p[Dim::cp] > 1) row("cp k/v exchange", e.time.cp);
  if (p[Dim::ep] > 1) row("ep all-to-all", e.time.ep);
  row("pp sends (fill, drain)", e.time.pp);
  row("pipeline bubble", e.time.bubble);
  row("dp communication", e.time.dp);
  row("optimizer step", e.time.optimizer);
  if (p.offload_layers > 0) row("activation offload", e.time.offload);
  if (e.time.host > 0) row("per-step host work", e.time.host);
  if (e.time.moe_host > 0) row("moe host-bound wait", e.time.moe_host);
  row("step time", e.time.total());
  out += "\ncommunication per dimension\n";
  out += fmt::format("  {:<4} {:>6}  {:<8} {:>10}  {:<17} {:>10} {:>10}\n", "dim", "degree",
                     "spans", "per server", "algorithm", "total s", "exposed s");
  for (Dim d : {Dim::tp, Dim::cp, Dim::ep, Dim::pp, Dim::dp}) {
    if (p[d] <= 1) continue;
    const GroupShape& g = e.shapes[d];
    const int per_server = g.span_tier > 0 ? g.per_domain[0] : g.size;
    out +=
        fmt::format("  {:<4} {:>6}  {:<8} {:>10}  {:<17} {:>10.3f} {:>10.3f}\n", to_string(d), p[d],
                    span_name(c, g), per_server, collective_name(e.algorithms[d], e.protocols[d]),
                    total_comm(e, d), exposed_comm(e, d));
  }
  if (p[Dim::ep] > 1) {
    out += "  ep all-to-all by tier (transfer per step; the tiers run at once):";
    for (int k = 0; k <= e.shapes[Dim::ep].span_tier; ++k)
      out += fmt::format(" {} {:.3f} s", c.tier_name(k), e.ep_per_tier[k]);
    out += "\n";
  }
  out += "\nmemory per GPU, most loaded pipeline stage (GiB)\n";
  out += fmt::format(
      "  weights {:.1f}  gradients {:.1f}  optimizer {:.1f}  activations {:.1f}  "
      "other {:.1f}  total {:.1f}\n",
      units::to_GiB(e.memory.weights), units::to_GiB(e.memory.gradients),
      units::to_GiB(e.memory.optimizer), units::to_GiB(e.memory.activations),
      units::to_GiB(e.memory.other), units::to_GiB(e.memory.total()));
  return out;
}

nlohmann::ordered_json detail::placement_json(const RunContext& ctx, const Plan& p,
                                              const std::vector<int>& devices,
                                              const PlacementStats& s) {
  const Cluster& c = ctx.cluster;
  ordered_json j;
  j["gpus"] = p.world();
  j["usable_gpus"] = c.usable_count();
  j["idle_gpus"] = s.idle;
  j["order_string_step_time_s"] = sig(s.order_step_time);
  j["best_order_string"] = s.best_order;
  j["gain"] = sig(s.gain(), 4);
  j["candidates"] = s.candidates;
  const int per = c.gpus_per_server();
  ordered_json ranks = ordered_json::array();
  for (std::int64_t r = 0; r < p.world(); ++r) {
    const int d = devices.empty() ? static_cast<int>(r) : devices[static_cast<std::size_t>(r)];
    ranks.push_back(ordered_json::array({d / per, d % per}));
  }
  j["ranks"] = ranks;
  return j;
}

nlohmann::ordered_json detail::to_json(const RunContext& ctx, const Plan& p, const Evaluation& e) {
  const auto& c = ctx.cluster;
  ordered_json j;
  detail::put_inputs(j, kPlanSchema, c, ctx.model);
  j["job"] = detail::job_json(ctx.job);
  detail::put_plan_fields(j, p, e.microbatches);
  j["fits"] = e.fits;
  std::string why = infeasible_reason(ctx, e);
  j["infeasible_reason"] = why.empty() ? ordered_json(nullptr) : ordered_json(why);
  j["step_time_s"] = sig(e.step_time);
  j["tokens_per_s"] = sig(e.tokens_per_s);
  j["model_tflops_per_gpu"] = sig(units::to_TFLOPs(e.model_flops_per_gpu));
  j["mfu"] = sig(e.mfu, 4);
  j["mfu_format_peak"] = sig(e.mfu_format_peak, 4);
  j["memory_gib_per_gpu"] = sig(units::to_GiB(e.memory.total()), 4);
  j["compute_split"] = {{"matmul_s", sig(e.compute.matmul)},
                        {"elementwise_s", sig(e.compute.elementwise)}};
  j["breakdown"] = {{"compute_s", sig(e.time.compute)}, {"tp_exposed_s", sig(e.time.tp)},
                    {"cp_exposed_s", sig(e.time.cp)},   {"ep_exposed_s", sig(e.time.ep)},
                    {"pp_exposed_s", sig(e.time.pp)},   {"bubble_s", sig(e.time.bubble)},
                    {"dp_exposed_s", sig(e.time.dp)},   {"optimizer_s", sig(e.time.optimizer)}};
  if (p.offload_layers > 0) j["breakdown"]["offload_exposed_s"] = sig(e.time.offload);
  if (e.time.host > 0) j["breakdown"]["step_overhead_s"] = sig(e.time.host);
  if (e.time.moe_host > 0) j["breakdown"]["moe_host_wait_s"] = sig(e.time.moe_host);
  ordered_json comm = ordered_json::object();
  for (Dim d : kDefaultOrder) {
    if (p[d] <= 1) continue;
    comm[to_string(d)] = {{"degree", p[d]},
                          {"tier", span_name(c, e.shapes[d])},
                          {"algorithm", to_string(e.algorithms[d])},
                          {"protocol", detail::protocol_json(e.protocols[d])},
                          {"total_s", sig(total_comm(e, d))},
                          {"exposed_s", sig(exposed_comm(e, d))}};
  }
  if (p[Dim::ep] > 1) {
    ordered_json tiers = ordered_json::object();
    for (int k = 0; k <= e.shapes[Dim::ep].span_tier; ++k)
      tiers[c.tier_name(k)] = sig(e.ep_per_tier[k]);
    comm["ep"]["all_to_all_by_tier_s"] = tiers;
  }
  j["communication"] = comm;
  j["memory_gib"] = {{"weights", sig(units::to_GiB(e.memory.weights), 4)},
                     {"gradients", sig(units::to_GiB(e.memory.gradients), 4)},
                     {"optimizer", sig(units::to_GiB(e.memory.optimizer), 4)},
                     {"activations", sig(units::to_GiB(e.memory.activations), 4)},
                     {"other", sig(units::to_GiB(e.memory.other), 4)},
                     {"capacity", sig(units::to_GiB(c.gpu().memory_bytes), 4)}};
  return j;
}

}  // namespace topoplan
