#include "topoplan/inference_report.hpp"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "detail/json_output.hpp"
#include "detail/report_json.hpp"
#include "topoplan/report.hpp"
#include "topoplan/units.hpp"

namespace topoplan {
namespace {

using nlohmann::ordered_json;

using detail::sig;

double ms(double s) { return sig(s * 1e3); }

std::string header(const InferenceContext& ctx) {
  const auto& c = ctx.cluster;
  return fmt::format("{} on {} x {} ({} x {}), prompt {}, output {}, batch {}, weights {}, KV {}",
                     ctx.model.spec.name, c.spec().nodes, c.spec().name, c.gpu_count(),
                     c.gpu().name, ctx.job.prompt_len, ctx.job.output_len, ctx.job.batch,
                     to_string(ctx.job.weight_dtype), to_string(ctx.job.kv_dtype));
}

}  // namespace

std::vector<std::string> explain_token(const InferenceContext& ctx, const Plan& p,
                                       const InferenceEval& e) {
  std::vector<std::string> out;
  const double t = e.token_latency;
  const auto pct = [&](double v) { return 100.0 * v / t; };
  const int layers = static_cast<int>(ctx.model.spec.layers);
  // A token passes the pp stages one after another, each reading its share: the read per token
  // divides by tp only; pp raises throughput (pp micro-batches in flight), not latency.
  out.push_back(fmt::format("reading weights and KV cache: {:.3f} ms ({:.0f}%) - divided by tp{}",
                            e.decode.memory * 1e3, pct(e.decode.memory),
                            p[Dim::pp] > 1 ? fmt::format("; the {} pipeline stages read one after "
                                                         "another",
                                                         p[Dim::pp])
                                           : ""));
  out.push_back(
      fmt::format("per-layer launch overhead: {:.3f} ms ({:.0f}%) - {} layers, not divided by tp",
                  e.decode.overhead * 1e3, pct(e.decode.overhead), layers));
  if (p[Dim::tp] > 1)
    out.push_back(fmt::format(
        "tp all-reduces: {:.3f} ms ({:.0f}%) - {} per token ({} per layer), "
        "{:.1f} us each on {} ({}), latency-bound",
        e.decode.tp * 1e3, pct(e.decode.tp), 2 * layers, 2, e.decode.tp / (2.0 * layers) * 1e6,
        span_name(ctx.cluster, e.shapes[Dim::tp]), collective_name(e.tp_algorithm, e.tp_protocol)));
  if (p[Dim::pp] > 1)
    out.push_back(fmt::format("pp hops: {:.3f} ms ({:.0f}%) - {} per token", e.decode.pp * 1e3,
                              pct(e.decode.pp), p[Dim::pp] - 1));
  if (p[Dim::ep] > 1)
    out.push_back(fmt::format("ep all-to-alls: {:.3f} ms ({:.0f}%) - 2 per MoE layer on {}",
                              e.decode.ep * 1e3, pct(e.decode.ep),
                              span_name(ctx.cluster, e.shapes[Dim::ep])));
  return out;
}

std::string inference_text(const InferenceContext& ctx, const Plan& p, const InferenceEval& e) {
  std::string out = "topoplan evaluate --inference: " + header(ctx) + "\n";
  out += fmt::format("plan: {}, {} replica{}, order {}\n\n", degrees_string(p, false), e.replicas,
                     e.replicas == 1 ? "" : "s", short_order_string(p));
  out += fmt::format("time to first token {:.2f} ms   per token {:.3f} ms   end to end {:.2f} ms\n",
                     e.ttft * 1e3, e.token_latency * 1e3, e.end_to_end * 1e3);
  out += fmt::format(
      "tokens/s per replica {:.1f}   per GPU {:.1f}   communication {:.0f}% of each "
      "token\n",
      e.tokens_per_s, e.tokens_per_s_per_gpu, 100 * e.comm_share);
  out += fmt::format("memory {:.1f} of {:.1f} GiB per GPU (weights {:.1f}, KV cache {:.1f}): {}\n",
                     units::to_GiB(e.memory_total()), units::to_GiB(ctx.cluster.gpu().memory_bytes),
                     units::to_GiB(e.memory_weights), units::to_GiB(e.memory_kv),
                     e.fits ? "fits" : "DOES NOT FIT");
  out += detail::accuracy_line(detail::band_for(ctx)) + "\n\n";
  out += "each generated token (the parts add up to the per-token time)\n";
  for (const auto& line : explain_token(ctx, p, e)) out += "  - " + line + "\n";
  out += fmt::format(
      "\nfirst token: compute {:.2f} ms, overhead {:.2f} ms, tp {:.2f} ms, pp {:.2f} ms, "
      "ep {:.2f} ms\n",
      e.prefill.compute * 1e3, e.prefill.overhead * 1e3, e.prefill.tp * 1e3, e.prefill.pp * 1e3,
      e.prefill.ep * 1e3);
  return out;
}

std::string inference_json(const InferenceContext& ctx, const Plan& p, const InferenceEval& e) {
  ordered_json j = detail::to_json(ctx, p, e);
  j["expected_error"] = detail::accuracy_json(detail::band_for(ctx));
  return j.dump(2) + "\n";
}

std::string inference_search_text(const InferenceContext& ctx, const InferenceSearchResult& r,
                                  Objective o) {
  std::string out = "topoplan plan --inference: " + header(ctx) + "\n";
  out +=
      fmt::format("objective: {}; costed {} plans ({} do not fit, {} over the latency bounds)\n\n",
                  to_string(o), r.evaluated, r.out_of_memory, r.over_bounds);
  if (r.top.empty()) return out + "no plan fits within the bounds\n";
  out += fmt::format(
      "{:>4} {:>4} {:>4} {:>4} {:>8}  {:<10} {:>9} {:>10} {:>10} {:>11} {:>9} {:>6} {:>8}  {:<7}\n",
      "rank", "tp", "pp", "ep", "replicas", "order", "TTFT ms", "token ms", "e2e ms", "tok/s/repl",
      "tok/s/GPU", "comm", "mem GiB", "tp on");
  int rank = 1;
  for (const auto& c : r.top) {
    const auto& e = c.eval;
    out += fmt::format(
        "{:>4} {:>4} {:>4} {:>4} {:>8}  {:<10} {:>9.2f} {:>10.3f} {:>10.2f} {:>11.1f} {:>9.1f} "
        "{:>5.0f}% {:>8.1f}  {:<7}\n",
        rank++, c.plan[Dim::tp], c.plan[Dim::pp], c.plan[Dim::ep], e.replicas,
        short_order_string(c.plan), e.ttft * 1e3, e.token_latency * 1e3, e.end_to_end * 1e3,
        e.tokens_per_s, e.tokens_per_s_per_gpu, 100 * e.comm_share, units::to_GiB(e.memory_total()),
        span_name(ctx.cluster, e.shapes[Dim::tp]));
  }
  out += fmt::format("\n{}\n", detail::accuracy_line(detail::band_for(ctx)));
  out += "\nwhy #1: each generated token\n";
  for (const auto& line : explain_token(ctx, r.top.front().plan, r.top.front().eval))
    out += "  - " + line + "\n";
  return out;
}

std::string inference_search_json(const InferenceContext& ctx, const InferenceSearchResult& r,
                                  Objective o) {
  ordered_json j;
  j["schema"] = kInferenceSearchSchema;
  j["objective"] = to_string(o);
  j["candidates_evaluated"] = r.evaluated;
  j["out_of_memory"] = r.out_of_memory;
  j["over_bounds"] = r.over_bounds;
  auto plans = ordered_json::array();
  for (const auto& c : r.top) plans.push_back(detail::to_json(ctx, c.plan, c.eval));
  j["plans"] = plans;
  j["expected_error"] = detail::accuracy_json(detail::band_for(ctx));
  return j.dump(2) + "\n";
}

nlohmann::ordered_json detail::to_json(const InferenceContext& ctx, const Plan& p,
                                       const InferenceEval& e) {
  const auto& c = ctx.cluster;
  ordered_json j;
  detail::put_inputs(j, kInferenceSchema, c, ctx.model);
  j["workload"] = {{"prompt_len", ctx.job.prompt_len},
                   {"output_len", ctx.job.output_len},
                   {"batch", ctx.job.batch},
                   {"weight_dtype", to_string(ctx.job.weight_dtype)},
                   {"kv_dtype", to_string(ctx.job.kv_dtype)},
                   {"runtime", to_string(ctx.job.runtime)}};
  j["tp"] = p[Dim::tp];
  j["pp"] = p[Dim::pp];
  j["ep"] = p[Dim::ep];
  j["dp"] = p[Dim::dp];
  j["replicas"] = e.replicas;
  j["order"] = order_string(p.order);
  j["fits"] = e.fits;
  j["ttft_ms"] = ms(e.ttft);
  j["token_latency_ms"] = ms(e.token_latency);
  j["end_to_end_ms"] = ms(e.end_to_end);
  j["tokens_per_s"] = sig(e.tokens_per_s);
  j["tokens_per_s_per_gpu"] = sig(e.tokens_per_s_per_gpu);
  j["decode_tokens_per_s"] = sig(e.decode_tokens_per_s);
  j["comm_share"] = sig(e.comm_share);
  j["decode_ms"] = {{"memory", ms(e.decode.memory)}, {"weights_read", ms(e.weight_read)},
                    {"kv_read", ms(e.kv_read)},      {"overhead", ms(e.decode.overhead)},
                    {"tp", ms(e.decode.tp)},         {"pp", ms(e.decode.pp)},
                    {"ep", ms(e.decode.ep)}};
  j["prefill_ms"] = {{"compute", ms(e.prefill.compute)},
                     {"overhead", ms(e.prefill.overhead)},
                     {"tp", ms(e.prefill.tp)},
                     {"pp", ms(e.prefill.pp)},
                     {"ep", ms(e.prefill.ep)}};
  j["tp_algorithm"] = to_string(e.tp_algorithm);
  j["tp_protocol"] = detail::protocol_json(e.tp_protocol);
  j["tiers"] = {{"tp", span_name(c, e.shapes[Dim::tp])},
                {"pp", span_name(c, e.shapes[Dim::pp])},
                {"ep", span_name(c, e.shapes[Dim::ep])}};
  j["memory_gib"] = {{"weights", sig(units::to_GiB(e.memory_weights))},
                     {"kv_cache", sig(units::to_GiB(e.memory_kv))},
                     {"other", sig(units::to_GiB(e.memory_other))},
                     {"total", sig(units::to_GiB(e.memory_total()))},
                     {"capacity", sig(units::to_GiB(c.gpu().memory_bytes))}};
  return j;
}

}  // namespace topoplan
