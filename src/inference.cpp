#include "topoplan/inference.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "topoplan/error.hpp"
#include "topoplan/gemm.hpp"
#include "topoplan/search.hpp"

namespace topoplan {

Objective parse_objective(const std::string& s, const std::string& what) {
  if (s == "latency") return Objective::latency;
  if (s == "throughput") return Objective::throughput;
  throw_input(what, "", fmt::format("expected latency or throughput, got '{}'", s));
}

const char* to_string(Objective o) { return o == Objective::latency ? "latency" : "throughput"; }

namespace {
constexpr std::array<const char*, kRuntimes> kRuntimeNames{"tensorrt-llm", "fastertransformer",
                                                           "fastertransformer-triton"};
}  // namespace

Dtype parse_serving_dtype(const std::string& s, const std::string& what) {
  const Dtype d = parse_dtype(s, what);
  if (d == Dtype::nvfp4 || d == Dtype::mxfp8)
    throw_input(what, "",
                fmt::format("expected bf16, fp16 or fp8 when serving, got '{}' (a training format "
                            "here: {} serving is not modelled)",
                            to_string(d), d == Dtype::nvfp4 ? "FP4" : "MXFP8"));
  return d;
}

Runtime parse_runtime(const std::string& s, const std::string& what) {
  for (int i = 0; i < kRuntimes; ++i)
    if (s == kRuntimeNames[i]) return static_cast<Runtime>(i);
  throw_input(what, "",
              fmt::format("expected tensorrt-llm, fastertransformer or fastertransformer-triton, "
                          "got '{}'",
                          s));
}

const char* to_string(Runtime r) { return kRuntimeNames[static_cast<int>(r)]; }

bool has_one_shot_all_reduce(Runtime r) { return r == Runtime::tensorrt_llm; }

PlanError check_inference_plan(const Cluster& c, const Model& m, const Plan& p) {
  if (p[Dim::cp] != 1) return PlanError::unsupported_dim;  // CP is for training here
  if (p.world() != c.gpu_count()) return PlanError::world_mismatch;
  // Experts spread over the same TP rank of ep replicas; TP may replicate the KV heads.
  for (PlanError e : {ep_rule(m.spec, p[Dim::ep], p[Dim::dp]), tp_rule(m.spec, p[Dim::tp], true)})
    if (e != PlanError::none) return e;
  if (p[Dim::pp] > m.spec.layers) return PlanError::pp_layers;
  return PlanError::none;
}

namespace {

/// What the parts of a serving step share: the groups on the fabric, the rates, and the per-GPU
/// sizes of the weights and the KV cache.
struct Serving {
  const Model& m;
  const InferenceJob& j;
  const Calibration& cal;
  Fabric fab;
  GroupShape tp_shape, pp_shape, ep_shape;
  int tp = 1, pp = 1, ep = 1;
  double layers = 0, stage_layers = 0, h = 0;
  double act_bytes = 2.0;  ///< activations stay 16-bit
  double w_bytes = 0, gemm = 0, hbm = 0;
  bool fp8_weights = false;   ///< FP8 weights on FP8 tensor cores
  Arch arch = Arch::hopper;   ///< the GPU's architecture: which FP8 GEMM rule applies (gemm.hpp)
  double kv_token_layer = 0;  ///< KV cache bytes per token per layer on one GPU
  double dense_layer = 0, expert_layer = 0;    ///< parameters per layer (routed experts apart)
  double layer_weights = 0, head_weights = 0;  ///< bytes held per GPU
  double batch = 0, prompt = 0, tokens = 0;    ///< prefill: batch x prompt tokens
  double micro = 0;                            ///< decode: sequences per pipeline micro-batch
  double layer_overhead = 0, collective_overhead = 0;  ///< the runtime's fixed costs, seconds
  bool custom_all_reduce = true;                       ///< has_one_shot_all_reduce(runtime)

  /// A TP all-reduce in the serving loop: the cheaper of NCCL's choice and one-shot, plus the
  /// calibrated per-collective overhead.
  [[nodiscard]] CollectiveCost tp_all_reduce(double bytes) const {
    if (tp <= 1) return CollectiveCost{};
    CollectiveCost best = all_reduce(fab, tp_shape, bytes);
    if (custom_all_reduce) {
      CollectiveCost one = one_shot_all_reduce(fab, tp_shape, bytes);
      if (one.time < best.time) best = one;
    }
    best.time += collective_overhead;
    return best;
  }
  /// Of the routed experts' weights, the share `n_tokens` tokens activate (top_k experts each).
  [[nodiscard]] double expert_read_fraction(double n_tokens) const {
    if (!m.spec.moe()) return 1.0;
    return std::min(
        1.0, n_tokens * static_cast<double>(m.spec.top_k) / static_cast<double>(m.spec.experts));
  }
  /// Bytes of weights `n_layers` layers read per GPU (dense split over tp, experts over tp x ep,
  /// a `fraction` of them), plus the output layer's.
  [[nodiscard]] double weights_read(double n_layers, double fraction) const {
    return n_layers * (dense_layer / tp + fraction * expert_layer / (tp * ep)) * w_bytes +
           head_weights;
  }
  [[nodiscard]] double hop(double bytes) const {
    return pp > 1 ? send_recv(fab, pp_shape.span_tier, bytes).time : 0.0;
  }
};

Serving make_serving(const Cluster& c, const Model& m, const InferenceJob& j, const Plan& p,
                     const DimArray<GroupShape>& shapes, const Calibration& cal) {
  Serving s{m, j, cal, make_fabric(c, cal), {}, {}, {}};
  const auto& k = m.counts;
  const auto& gpu = c.gpu();
  s.tp = p[Dim::tp];
  s.pp = p[Dim::pp];
  s.ep = p[Dim::ep];
  s.tp_shape = shapes[Dim::tp];
  s.pp_shape = shapes[Dim::pp];
  s.ep_shape = shapes[Dim::ep];
  s.layers = static_cast<double>(m.spec.layers);
  s.stage_layers = static_cast<double>(topoplan::stage_layers(m.spec.layers, s.pp).max());
  s.h = static_cast<double>(m.spec.hidden);
  s.w_bytes = dtype_bytes(j.weight_dtype);
  // FP8 weights on FP8 tensor cores run at the FP8 GEMM efficiency (the one training fits).
  const int arch = static_cast<int>(gpu.arch);
  s.arch = gpu.arch;
  s.fp8_weights = j.weight_dtype == Dtype::fp8 && gpu.peak_flops_fp8 > 0;
  s.gemm = s.fp8_weights ? gpu.peak_flops_fp8 * cal.gemm_efficiency_fp8[arch]
                         : gpu.peak_flops * cal.gemm_efficiency[arch];
  s.hbm = gpu.hbm_bandwidth * cal.hbm_efficiency;
  // K and V for this GPU's share of the KV heads (MLA: the whole latent on every TP rank).
  const double kv_split =
      k.kv_cache_split ? std::min<double>(s.tp, static_cast<double>(m.spec.kv_heads)) : 1.0;
  s.kv_token_layer = k.kv_cache_elems * dtype_bytes(j.kv_dtype) / kv_split;
  s.expert_layer = static_cast<double>(k.layer_expert_params);
  s.dense_layer = static_cast<double>(k.layer_params) - s.expert_layer;
  // Held per GPU: dense weights split over tp, routed experts over ep x tp.
  s.layer_weights = (s.dense_layer / s.tp + s.expert_layer / (s.tp * s.ep)) * s.w_bytes;
  s.head_weights = static_cast<double>(m.spec.vocab * m.spec.hidden) / s.tp * s.w_bytes;
  s.batch = static_cast<double>(j.batch);
  s.prompt = static_cast<double>(j.prompt_len);
  s.tokens = s.batch * s.prompt;
  s.micro = std::max(1.0, s.batch / s.pp);
  s.layer_overhead = cal.decode_layer_overhead[static_cast<int>(j.runtime)];
  s.collective_overhead = cal.decode_collective_overhead[static_cast<int>(j.runtime)];
  s.custom_all_reduce = has_one_shot_all_reduce(j.runtime);
  return s;
}

/// Prefill: the whole batch's prompts through every stage in turn. Each weight matrix is read
/// from HBM at least once per forward pass: a short prompt's multiplies (M = its tokens, 2 M
/// FLOPs per weight read) are bound by that read, not by the tensor cores (the roofline; at the
/// calibrated rates, prompts under about 115 tokens in FP8 and 165 in bf16 on an H100).
PrefillBreakdown prefill(const Serving& s) {
  const auto& k = s.m.counts;
  const double n_min = std::min({k.q_dim / s.tp, k.min_ffn / s.tp, s.tokens});
  const double size = n_min / (n_min + s.cal.gemm_half_dim);
  const double rate = s.gemm * size;
  const double linear_flops = s.tokens * (s.layers * k.layer_matmul_flops + k.logits_flops) / s.tp;
  // causal attention: a prompt token sees prompt/2 keys on average (fewer in sliding layers)
  const double attention_flops = s.tokens * s.layers * k.layer_attention_flops_per_seq * s.prompt /
                                 2 * attention_span_factor(k, s.prompt) / s.tp;
  const double weight_read = s.weights_read(s.layers, s.expert_read_fraction(s.tokens)) / s.hbm;
  const double elem = s.tokens * s.layers *
                      (s.cal.elementwise_hidden_passes * s.h +
                       (s.m.spec.gated_mlp ? 3.0 : 2.0) * k.active_ffn / s.tp) *
                      s.act_bytes / s.hbm;
  PrefillBreakdown out;
  // FP8 weights: each GEMM's forward at its shape, as training's (gemm.hpp).
  const double linear_time =
      s.fp8_weights
          ? linear_flops *
                fp8_linear_pass_times(s.arch, s.m, s.tp, s.tokens, 1.0, s.cal, s.gemm, size).forward
          : linear_flops / rate;
  out.compute = std::max(linear_time, weight_read) + attention_flops / rate + elem;
  out.overhead =
      s.layers * s.layer_overhead + s.cal.request_overhead[static_cast<int>(s.j.runtime)];
  out.tp = 2.0 * s.layers * s.tp_all_reduce(s.tokens * s.h * s.act_bytes).time;
  out.pp = (s.pp - 1) * s.hop(s.tokens * s.h * s.act_bytes);
  return out;
}

/// Decode: pp stages work on pp micro-batches of batch/pp sequences at once; one sequence's
/// token passes every stage. Per stage: read its weights and its micro-batch's KV cache (or
/// compute, if longer), the per-layer overhead, 2 all-reduces per layer.
void decode(const Serving& s, InferenceEval& e) {
  const auto& k = s.m.counts;
  const double context = s.prompt + static_cast<double>(s.j.output_len) / 2.0;
  // Read per step: dense weights, and of the experts only those the step's tokens activate (the
  // EP group serves ep micro-batches; each token picks top_k experts).
  const double stage_read = s.weights_read(s.stage_layers, s.expert_read_fraction(s.ep * s.micro));
  // Sliding-window layers read (and keep) only their window of the cache.
  const double span = attention_span_factor_at(k, context);
  const double stage_kv = s.micro * context * span * s.stage_layers * s.kv_token_layer;
  const double stage_flops =
      s.micro *
      (s.stage_layers * (k.layer_matmul_flops + k.layer_attention_flops_per_seq * context * span) +
       k.logits_flops) /
      s.tp;
  const double decode_rate = s.gemm * std::min(1.0, s.micro / (s.micro + s.cal.gemm_half_dim));
  const double stage_time = std::max((stage_read + stage_kv) / s.hbm, stage_flops / decode_rate);
  const CollectiveCost decode_ar = s.tp_all_reduce(s.micro * s.h * s.act_bytes);
  e.tp_algorithm = decode_ar.algorithm;
  e.tp_protocol = decode_ar.protocol;
  e.decode.memory = s.pp * stage_time;
  e.weight_read = s.pp * stage_read / s.hbm;
  e.kv_read = s.pp * stage_kv / s.hbm;
  e.decode.overhead = s.layers * s.layer_overhead;
  e.decode.tp = 2.0 * s.layers * decode_ar.time;
  e.decode.pp = (s.pp - 1) * s.hop(s.micro * s.h * s.act_bytes);
}

/// EP: every MoE layer dispatches each token's hidden vector to its top_k experts and combines
/// the results: 2 all-to-alls per MoE layer per step (prefill: over the prompt's tokens).
void expert_all_to_alls(const Serving& s, InferenceEval& e) {
  const auto& k = s.m.counts;
  if (s.ep <= 1 || k.moe_layers <= 0) return;
  const double topk = static_cast<double>(s.m.spec.top_k);
  const double moe_layers = static_cast<double>(k.moe_layers);
  e.decode.ep = 2.0 * moe_layers *
                (all_to_all(s.fab, s.ep_shape, s.micro * topk * s.h * s.act_bytes).time +
                 s.collective_overhead);
  e.prefill.ep = 2.0 * moe_layers *
                 all_to_all(s.fab, s.ep_shape, s.tokens / s.tp * topk * s.h * s.act_bytes).time;
}

/// Memory per GPU on the most loaded stage: weights, KV cache for the batch at full length, the
/// prefill's activations and logits, and the reserve.
void serving_memory(const Serving& s, const GpuSpec& gpu, InferenceEval& e) {
  e.memory_weights = s.stage_layers * s.layer_weights + s.head_weights;  // last stage: head
  const double full = s.prompt + static_cast<double>(s.j.output_len);
  e.memory_kv = s.batch * full * attention_span_factor_at(s.m.counts, full) * s.stage_layers *
                s.kv_token_layer;
  const double prefill_act =
      s.tokens * (4.0 * s.h + 2.0 * s.m.counts.active_ffn / s.tp) * s.act_bytes;
  const double logits = s.batch * static_cast<double>(s.m.spec.vocab) / s.tp * 4.0;
  e.memory_other = prefill_act + logits + s.cal.reserved_bytes;
  e.fits = e.memory_total() <= gpu.memory_bytes;
}

}  // namespace

InferenceEval evaluate_inference(const Cluster& c, const Model& m, const InferenceJob& j,
                                 const Plan& p, const Mapping& map, const Calibration& cal) {
  InferenceEval e;
  e.replicas = p[Dim::dp];
  for (Dim d : kDefaultOrder) e.shapes[d] = dimension_shape(c, map, d);
  const Serving s = make_serving(c, m, j, p, e.shapes, cal);
  e.prefill = prefill(s);
  decode(s, e);
  expert_all_to_alls(s, e);
  e.ttft = e.prefill.total();
  e.token_latency = e.decode.total();
  e.end_to_end = e.ttft + (static_cast<double>(j.output_len) - 1) * e.token_latency;
  e.tokens_per_s = s.batch * static_cast<double>(j.output_len) / e.end_to_end;
  e.tokens_per_s_per_gpu = e.tokens_per_s / (s.tp * s.pp);
  e.decode_tokens_per_s = s.batch / e.token_latency;
  e.comm_share = (e.decode.tp + e.decode.pp + e.decode.ep) / e.token_latency;
  serving_memory(s, c.gpu(), e);
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
  Candidate ca{a.plan, {}, {}, {}, 0}, cb{b.plan, {}, {}, {}, 0};
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
      throw_input(to_string(d), "", fmt::format("{} does not divide the cluster's {} GPUs", v, n));
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
