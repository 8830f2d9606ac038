#include "topoplan/inference.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "topoplan/error.hpp"
#include "topoplan/search.hpp"

namespace topoplan {

Objective parse_objective(const std::string& s, const std::string& what) {
  if (s == "latency") return Objective::latency;
  if (s == "throughput") return Objective::throughput;
  throw_input(what, "", fmt::format("expected latency or throughput, got '{}'", s));
}

const char* to_string(Objective o) { return o == Objective::latency ? "latency" : "throughput"; }

PlanError check_inference_plan(const Cluster& c, const Model& m, const Plan& p) {
  if (p[Dim::cp] != 1) return PlanError::unsupported_dim;  // CP is for training here
  if (p.world() != c.gpu_count()) return PlanError::world_mismatch;
  if (p[Dim::ep] > 1) {  // experts spread over the same TP rank of ep replicas
    if (!m.spec.moe()) return PlanError::ep_dense;
    if (m.spec.experts % p[Dim::ep] != 0) return PlanError::ep_experts;
    if (p[Dim::dp] % p[Dim::ep] != 0) return PlanError::ep_dp;
  }
  const int tp = p[Dim::tp];
  if (m.spec.heads % tp != 0) return PlanError::tp_heads;
  if (m.spec.kv_heads % tp != 0 && tp % m.spec.kv_heads != 0) return PlanError::tp_kv_heads;
  if (m.spec.ffn % tp != 0) return PlanError::tp_ffn;
  if (p[Dim::pp] > m.spec.layers) return PlanError::pp_layers;
  return PlanError::none;
}

InferenceEval evaluate_inference(const Cluster& c, const Model& m, const InferenceJob& j,
                                 const Plan& p, const Mapping& map, const Calibration& cal) {
  InferenceEval e;
  const Fabric fab = make_fabric(c, cal);
  const auto& k = m.counts;
  const auto& gpu = c.gpu();
  const int tp = p[Dim::tp], pp = p[Dim::pp];
  e.replicas = p[Dim::dp];
  for (Dim d : kDefaultOrder) e.shapes[d] = dimension_shape(c, map, d);
  const GroupShape& tp_shape = e.shapes[Dim::tp];
  const GroupShape& pp_shape = e.shapes[Dim::pp];

  const double layers = static_cast<double>(m.spec.layers);
  const double stage_layers = static_cast<double>((m.spec.layers + pp - 1) / pp);
  const double h = static_cast<double>(m.spec.hidden);
  const double act_bytes = 2.0;  // activations stay 16-bit
  const double w_bytes = dtype_bytes(j.weight_dtype);
  const double kv_bytes = dtype_bytes(j.kv_dtype);
  const double peak = j.weight_dtype == Dtype::fp8 && gpu.peak_flops_fp8 > 0 ? gpu.peak_flops_fp8
                                                                             : gpu.peak_flops;
  const double gemm = peak * cal.gemm_efficiency[static_cast<int>(gpu.arch)];
  const double hbm = gpu.hbm_bandwidth * cal.hbm_efficiency;
  const double kv_split =
      k.kv_cache_split ? std::min<double>(tp, static_cast<double>(m.spec.kv_heads)) : 1.0;
  // KV cache per token per layer on one GPU: K and V for its share of the KV heads (MLA: the
  // whole compressed latent on every TP rank).
  const double kv_token_layer = k.kv_cache_elems * kv_bytes / kv_split;
  const int ep = p[Dim::ep];
  const double expert_layer = static_cast<double>(k.layer_expert_params);  // routed, per layer
  const double dense_layer = static_cast<double>(k.layer_params) - expert_layer;
  // Held per GPU: dense weights split over tp, routed experts over ep x tp.
  const double layer_weights = (dense_layer / tp + expert_layer / (tp * ep)) * w_bytes;
  const double head_weights = static_cast<double>(m.spec.vocab * m.spec.hidden) / tp * w_bytes;

  auto tp_all_reduce = [&](double bytes) {
    if (tp <= 1) return CollectiveCost{};
    CollectiveCost best = all_reduce(fab, tp_shape, bytes);
    CollectiveCost one = one_shot_all_reduce(fab, tp_shape, bytes);
    if (one.time < best.time) best = one;
    best.time += cal.decode_collective_overhead;
    return best;
  };
  auto hop = [&](double bytes) { return pp > 1 ? send_recv(fab, pp_shape.span_tier, bytes).time : 0.0; };

  // Prefill: the whole batch's prompts through every stage in turn.
  const double batch = static_cast<double>(j.batch);
  const double prompt = static_cast<double>(j.prompt_len);
  const double tokens = batch * prompt;
  const double n_min = std::min({k.q_dim / tp, k.min_ffn / tp, tokens});
  const double rate = gemm * n_min / (n_min + cal.gemm_half_dim);
  const double fwd_flops =  // causal attention: a prompt token sees prompt/2 keys on average
      tokens * (layers * (k.layer_matmul_flops + k.layer_attention_flops_per_seq * prompt / 2) +
                k.logits_flops) / tp;
  const double elem = tokens * layers *
                      (cal.elementwise_hidden_passes * h + (m.spec.gated_mlp ? 3.0 : 2.0) *
                                                               k.active_ffn / tp) *
                      act_bytes / hbm;
  e.prefill.compute = fwd_flops / rate + elem;
  e.prefill.overhead = layers * cal.decode_layer_overhead;
  const CollectiveCost prefill_ar = tp_all_reduce(tokens * h * act_bytes);
  e.prefill.tp = 2.0 * layers * prefill_ar.time;
  e.prefill.pp = (pp - 1) * hop(tokens * h * act_bytes);
  e.ttft = e.prefill.total();

  // Decode: pp stages work on pp micro-batches of batch/pp sequences at once; one sequence's
  // token passes every stage. Per stage: read its weights and its micro-batch's KV cache (or
  // compute, if longer), the per-layer overhead, 2 all-reduces per layer.
  const double micro = std::max(1.0, batch / pp);
  const double context = prompt + static_cast<double>(j.output_len) / 2.0;
  const double stage_weights = stage_layers * layer_weights + head_weights;  // last stage: head
  // Read per step: dense weights, and of the experts only those the step's tokens activate (the
  // EP group serves ep micro-batches; each token picks top_k experts).
  double expert_read_fraction = 1.0;
  if (m.spec.moe())
    expert_read_fraction = std::min(1.0, ep * micro * static_cast<double>(m.spec.top_k) /
                                             static_cast<double>(m.spec.experts));
  const double stage_read = stage_layers * (dense_layer / tp + expert_read_fraction * expert_layer / (tp * ep)) * w_bytes +
                            head_weights;
  const double stage_kv = micro * context * stage_layers * kv_token_layer;
  const double stage_flops =
      micro * (stage_layers * (k.layer_matmul_flops + k.layer_attention_flops_per_seq * context) +
               k.logits_flops) / tp;
  const double decode_rate = gemm * std::min(1.0, micro / (micro + cal.gemm_half_dim));
  const double stage_memory = std::max((stage_read + stage_kv) / hbm, stage_flops / decode_rate);
  const CollectiveCost decode_ar = tp_all_reduce(micro * h * act_bytes);
  e.tp_algorithm = decode_ar.algorithm;
  e.decode.memory = pp * stage_memory;
  e.weight_read = pp * stage_read / hbm;
  e.kv_read = pp * stage_kv / hbm;
  e.decode.overhead = layers * cal.decode_layer_overhead;
  e.decode.tp = 2.0 * layers * decode_ar.time;
  e.decode.pp = (pp - 1) * hop(micro * h * act_bytes);
  // EP: every MoE layer dispatches each token's hidden vector to its top_k experts and combines
  // the results: 2 all-to-alls per MoE layer per step (prefill: over the prompt's tokens).
  if (ep > 1 && k.moe_layers > 0) {
    const GroupShape& g = e.shapes[Dim::ep];
    const double topk = static_cast<double>(m.spec.top_k);
    const double moe_layers = static_cast<double>(k.moe_layers);
    e.decode.ep = 2.0 * moe_layers *
                  (all_to_all(fab, g, micro * topk * h * act_bytes).time + cal.decode_collective_overhead);
    e.prefill.ep = 2.0 * moe_layers * all_to_all(fab, g, tokens / tp * topk * h * act_bytes).time;
    e.ttft = e.prefill.total();
  }
  e.token_latency = e.decode.total();
  e.end_to_end = e.ttft + (static_cast<double>(j.output_len) - 1) * e.token_latency;
  e.tokens_per_s = batch * static_cast<double>(j.output_len) / e.end_to_end;
  e.tokens_per_s_per_gpu = e.tokens_per_s / (tp * pp);
  e.decode_tokens_per_s = batch / e.token_latency;
  e.comm_share = (e.decode.tp + e.decode.pp + e.decode.ep) / e.token_latency;

  // Memory per GPU on the most loaded stage: weights, KV cache for the batch at full length,
  // the prefill's activations and logits, and the reserve.
  e.memory_weights = stage_weights;
  e.memory_kv = batch * (prompt + static_cast<double>(j.output_len)) * stage_layers * kv_token_layer;
  const double prefill_act = tokens * (4.0 * h + 2.0 * k.active_ffn / tp) * act_bytes;
  const double logits = batch * static_cast<double>(m.spec.vocab) / tp * 4.0;
  e.memory_other = prefill_act + logits + cal.reserved_bytes;
  e.fits = e.memory_total() <= gpu.memory_bytes;
  return e;
}

bool inference_ranks_before(const InferenceCandidate& a, const InferenceCandidate& b, Objective o) {
  if (a.eval.fits != b.eval.fits) return a.eval.fits;
  if (o == Objective::latency) {
    if (a.eval.token_latency != b.eval.token_latency)
      return a.eval.token_latency < b.eval.token_latency;
    if (a.eval.ttft != b.eval.ttft) return a.eval.ttft < b.eval.ttft;
  } else if (a.eval.tokens_per_s_per_gpu != b.eval.tokens_per_s_per_gpu) {
    return a.eval.tokens_per_s_per_gpu > b.eval.tokens_per_s_per_gpu;
  }
  Candidate ca{a.plan, {}}, cb{b.plan, {}};
  ca.eval.fits = cb.eval.fits = true;
  return ranks_before(ca, cb);  // the training tie-break on the plan
}

InferenceSearchResult search_inference(const Cluster& c, const Model& m, const InferenceJob& j,
                                       const Calibration& cal, const InferenceSearchOptions& opt) {
  InferenceSearchResult r;
  const int n = c.gpu_count();
  for (Dim d : {Dim::tp, Dim::pp, Dim::dp}) {
    const int v = opt.fixed[d];
    if (v < 0 || (v > 0 && n % v != 0))
      throw_input(fmt::format("--{}", to_string(d)), "",
                  fmt::format("{} does not divide the cluster's {} GPUs", v, n));
  }
  auto before = [&](const InferenceCandidate& a, const InferenceCandidate& b) {
    return inference_ranks_before(a, b, opt.objective);
  };
  for (int tp = 1; tp <= n; ++tp) {
    if (n % tp || (opt.fixed[Dim::tp] && tp != opt.fixed[Dim::tp])) continue;
    for (int pp = 1; pp <= n / tp; ++pp) {
      if ((n / tp) % pp) continue;
      const int dp = n / tp / pp;
      if ((opt.fixed[Dim::pp] && pp != opt.fixed[Dim::pp]) ||
          (opt.fixed[Dim::dp] && dp != opt.fixed[Dim::dp]))
        continue;
      std::vector<int> eps{1};
      if (m.spec.moe())
        for (int ep = 2; ep <= dp; ++ep)
          if (dp % ep == 0 && m.spec.experts % ep == 0) eps.push_back(ep);
      const int fixed_ep = opt.fixed[Dim::ep];
      for (int ep : eps) {
      if (fixed_ep && ep != fixed_ep) continue;
      Plan base;
      base[Dim::tp] = tp;
      base[Dim::pp] = pp;
      base[Dim::dp] = dp;
      base[Dim::ep] = ep;
      if (check_inference_plan(c, m, base) != PlanError::none) continue;
      const std::vector<Order> orders =
          opt.order ? std::vector<Order>{*opt.order} : distinct_orders(base);
      for (const Order& o : orders) {
        if (ep > 1) {
          Plan q = base;
          q.order = o;
          if (expert_pp_mismatch(q)) continue;
        }
        InferenceCandidate cand{base, {}};
        cand.plan.order = o;
        cand.eval = evaluate_inference(c, m, j, cand.plan, Mapping::from_order(cand.plan), cal);
        ++r.evaluated;
        if (!cand.eval.fits) {
          ++r.out_of_memory;
          continue;
        }
        if ((opt.max_token_latency > 0 && cand.eval.token_latency > opt.max_token_latency) ||
            (opt.max_ttft > 0 && cand.eval.ttft > opt.max_ttft)) {
          ++r.over_bounds;
          continue;
        }
        auto at = std::upper_bound(r.top.begin(), r.top.end(), cand, before);
        r.top.insert(at, cand);
        if (static_cast<int>(r.top.size()) > std::max(1, opt.top_k)) r.top.pop_back();
      }
      }
    }
  }
  return r;
}

}  // namespace topoplan
