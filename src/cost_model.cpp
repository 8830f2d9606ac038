#include "topoplan/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace topoplan {

namespace {

/// Per-token hardware FLOPs of one layer, forward + backward + recomputation.
double layer_hw_flops(const ModelCounts& k, double s, Recompute r) {
  const double fwd = k.layer_matmul_flops + k.layer_attention_flops_per_seq * s;
  switch (r) {
    case Recompute::none: return 3 * fwd;
    case Recompute::selective: return 3 * fwd + k.layer_attention_flops_per_seq * s;
    case Recompute::full: return 4 * fwd;
  }
  return 3 * fwd;
}

}  // namespace

double hardware_flops_per_token(const Model& m, double seq_len, Recompute r) {
  return static_cast<double>(m.spec.layers) * layer_hw_flops(m.counts, seq_len, r) +
         3.0 * m.counts.logits_flops;
}

namespace {

struct StageParams {
  double first = 0;
  double last = 0;
  double middle = 0;  ///< a middle stage (uneven splits give it more layers than first or last)
  [[nodiscard]] double max() const { return std::max({first, last, middle}); }
};

/// Parameters held by one GPU of the first and of the last pipeline stage, and of those the
/// routed experts' (sharded over ep x tp instead of tp).
StageParams stage_params(const Model& m, const Plan& p, double* experts_per_gpu = nullptr) {
  const double t = p[Dim::tp];
  const double ep = p[Dim::ep];
  const int pp = p[Dim::pp];
  const StageLayers split = stage_layers(m.spec.layers, pp);
  const auto& k = m.counts;
  const double expert_layer = static_cast<double>(k.layer_expert_params) / (t * ep);
  const double dense_layer = static_cast<double>(k.layer_params - k.layer_expert_params) / t;
  // The most loaded stage's experts (the ZeRO shards and expert gradients are sized by it).
  if (experts_per_gpu) *experts_per_gpu = static_cast<double>(split.max()) * expert_layer;
  const double first = static_cast<double>(split.first) * (dense_layer + expert_layer);
  const double last = static_cast<double>(split.last) * (dense_layer + expert_layer);
  const double emb = static_cast<double>(k.embedding_params) / t;
  // Tied embeddings keep a copy of the word embedding on the last stage.
  const double head = static_cast<double>(k.head_params) / t +
                      (m.spec.tied_embeddings && pp > 1
                           ? static_cast<double>(m.spec.vocab * m.spec.hidden) / t
                           : 0.0);
  if (pp == 1) return {first + emb + head, first + emb + head, 0};
  const double middle = pp > 2 ? static_cast<double>(split.middle) * (dense_layer + expert_layer) : 0;
  return {first + emb, last + head, middle};
}

/// Activation bytes of one layer for one microbatch (Korthikanti et al. 2022, generalised to
/// GQA and gated MLPs by counting the stored tensors).
double layer_activation_bytes(const Model& m, const JobSpec& j, const Plan& p, Recompute r) {
  const double t = p[Dim::tp];
  const double tokens = static_cast<double>(j.seq_len) * p.micro_batch / p[Dim::cp];
  const double h = static_cast<double>(m.spec.hidden);
  const auto& k = m.counts;
  const double sp_div = p.sequence_parallel ? t : 1.0;
  if (r == Recompute::full) return 2.0 * tokens * h / sp_div;
  const double replicated = 10.0 * tokens * h / sp_div;
  const double sharded =
      tokens * (4 * k.q_dim + 4 * k.kv_dim + (m.spec.gated_mlp ? 6 : 4) * k.active_ffn) / t;
  double scores = 0;
  if (r == Recompute::none && !j.flash_attention)
    scores = 5.0 * static_cast<double>(m.spec.heads) * static_cast<double>(j.seq_len) * tokens / t;
  return replicated + sharded + scores;
}

}  // namespace

double exposed_comm(const Evaluation& e, Dim d) {
  switch (d) {
    case Dim::tp: return e.time.tp;
    case Dim::cp: return e.time.cp;
    case Dim::ep: return e.time.ep;
    case Dim::pp: return e.time.pp;
    case Dim::dp: return e.time.dp;
    default: return 0;
  }
}

double total_comm(const Evaluation& e, Dim d) {
  switch (d) {
    case Dim::tp: return e.comm.tp;
    case Dim::cp: return e.comm.cp;
    case Dim::ep: return e.comm.ep;
    case Dim::pp: return e.comm.pp;
    case Dim::dp: return e.comm.dp;
    default: return 0;
  }
}

namespace {

/// Seconds per token on one GPU for one layer (and for the logits), by kind of work.
struct LayerWork {
  double matmul_s = 0;
  double attention_fwd_s = 0;  ///< the attention core's forward (what ring attention hides behind)
  double elementwise_s = 0;
  double logits_matmul_s = 0;
  double logits_elementwise_s = 0;
};

/// Matrix multiplies run at the calibrated efficiency of the GPU's architecture, lower for small
/// per-GPU matrices; element-wise kernels (norms, residual adds, dropout, activation, and the
/// softmax over s scores per head unless attention is fused) stream HBM. Forward once, backward
/// twice; recomputation repeats the forward (full) or the attention core (selective).
LayerWork layer_work(const Model& m, const JobSpec& j, const Plan& p, const Calibration& cal,
                     const GpuSpec& gpu) {
  const auto& k = m.counts;
  const double t = p[Dim::tp];
  const double s = static_cast<double>(j.seq_len);
  const double h = static_cast<double>(m.spec.hidden);
  const double f = k.active_ffn;
  const double tokens = static_cast<double>(p.micro_batch) * s / p[Dim::cp];
  const double n_min = std::min({k.q_dim / t, k.min_ffn / t, h, tokens});
  const double rate = gpu.peak_flops * cal.gemm_efficiency[static_cast<int>(gpu.arch)] * n_min /
                      (n_min + cal.gemm_half_dim);
  const double attn = k.layer_attention_flops_per_seq * s / t;
  const double fwd = k.layer_matmul_flops / t + attn;
  double flops = 3 * fwd;
  if (p.recompute == Recompute::full) flops += fwd;
  if (p.recompute == Recompute::selective) flops += attn;

  const double e_h = cal.elementwise_hidden_passes * h / (p.sequence_parallel ? t : 1.0);
  const double e_f = (m.spec.gated_mlp ? 3.0 : 2.0) * f / t;
  const double e_s =
      j.flash_attention ? 0.0 : cal.softmax_passes * static_cast<double>(m.spec.heads) / t * s;
  double elements = 3 * (e_h + e_f + e_s);
  if (p.recompute == Recompute::full) elements += e_h + e_f + e_s;
  if (p.recompute == Recompute::selective) elements += e_s;
  const double hbm = gpu.hbm_bandwidth * cal.hbm_efficiency;

  LayerWork w;
  w.matmul_s = flops / rate;
  w.attention_fwd_s = attn / rate;
  w.elementwise_s = elements * dtype_bytes(j.dtype) / hbm;
  w.logits_matmul_s = 3.0 * k.logits_flops / t / rate;
  w.logits_elementwise_s = 12.0 * static_cast<double>(m.spec.vocab) / t / hbm;  // fp32 softmax
  return w;
}

}  // namespace

PlanCore prepare(const Cluster& c, const Model& m, const JobSpec& j, const Plan& p,
                 const Calibration& cal) {
  PlanCore core;
  const auto& k = m.counts;
  const int tp = p[Dim::tp], pp = p[Dim::pp], dp = p[Dim::dp], cp = p[Dim::cp], ep = p[Dim::ep];
  const int v = p.vpp;
  const double s = static_cast<double>(j.seq_len);
  const double h = static_cast<double>(m.spec.hidden);
  const double bytes = dtype_bytes(j.dtype);
  // The slowest stage holds ceil(layers / pp) layers (stage_layers: uneven splits give the first
  // and last stages fewer).
  const StageLayers split = stage_layers(m.spec.layers, pp);
  core.layers_per_stage = static_cast<double>(split.max());
  core.moe_layers_per_stage =
      core.layers_per_stage * static_cast<double>(k.moe_layers) / static_cast<double>(m.spec.layers);
  core.microbatches =
      static_cast<int>(j.global_batch / (static_cast<std::int64_t>(dp) * p.micro_batch));
  const int mbs = core.microbatches;

  // Compute for one microbatch on the slowest stage (the last: it also runs the logits).
  const double tokens = static_cast<double>(p.micro_batch) * s / cp;
  const LayerWork w = layer_work(m, j, p, cal, c.gpu());
  core.t_matmul = tokens * (core.layers_per_stage * w.matmul_s + w.logits_matmul_s);
  core.t_elementwise = tokens * (core.layers_per_stage * w.elementwise_s + w.logits_elementwise_s);
  core.t_attention_fwd = tokens * w.attention_fwd_s;

  // Message sizes. TP: the microbatch's activations. CP: one K/V chunk (this rank's tokens, its
  // share of the KV heads). EP: each token's hidden vector to top_k experts, tokens split over tp.
  core.tp_bytes = tokens * h * bytes;
  core.tp_per_layer = p.recompute == Recompute::full ? 6 : 4;
  core.cp_bytes = tokens * 2.0 * k.kv_dim / tp * bytes;
  core.ep_bytes = tokens / tp * static_cast<double>(m.spec.top_k) * h * bytes;
  core.ep_per_layer = p.recompute == Recompute::full ? 6 : 4;
  // Scatter/gather (Megatron-LM): each TP rank sends its 1/tp slice across the stage boundary;
  // without sequence parallelism the receiver all-gathers the slices over its TP group.
  core.pp_bytes = tokens * h * bytes / tp;

  double experts_gpu = 0;
  const StageParams params = stage_params(m, p, &experts_gpu);
  const double params_gpu = params.max();
  const double grad_bytes =
      j.dtype == Dtype::fp16 ? cal.grad_reduce_bytes_fp16 : cal.grad_reduce_bytes_bf16;
  const double dense_gpu = params_gpu - experts_gpu;
  core.params_gpu = params_gpu;
  core.grad_bytes_per_param = grad_bytes;
  core.dense_grad_bytes = dense_gpu * grad_bytes;
  core.expert_grad_bytes = experts_gpu * grad_bytes;
  core.dense_param_bytes = dense_gpu * bytes;
  core.expert_param_bytes = experts_gpu * bytes;
  // Data-parallel replicas of each parameter: dense ones over dp x cp, experts over expert-dp.
  const double dense_rep = static_cast<double>(dp) * cp;
  const double expert_rep = dense_rep / ep;
  const double opt_params = p.zero >= 1 ? dense_gpu / dense_rep + experts_gpu / expert_rep : params_gpu;
  core.optimizer_time = opt_params * cal.optimizer_bytes_per_param / c.gpu().hbm_bandwidth;

  // Memory, on the first stage (most microbatches in flight) and the last (logits), the worse.
  // 1F1B keeps min(pp, m) microbatches in flight on the first stage; interleaving multiplies
  // that by 1 + (pp - 1) / (pp x vpp).
  MemoryBreakdown mem_first, mem_last;
  double in_flight = pp > 1 ? std::min(pp, mbs) : 1;
  if (v > 1) in_flight *= 1.0 + (pp - 1.0) / (static_cast<double>(pp) * v);
  const double layer_act = layer_activation_bytes(m, j, p, p.recompute);
  double act_first = layer_act * static_cast<double>(split.first) * in_flight;
  double act_last = layer_act * static_cast<double>(split.last);
  if (p.recompute == Recompute::full) {  // one layer's full activations while recomputing
    const double working = layer_activation_bytes(m, j, p, Recompute::selective);
    act_first += working;
    act_last += working;
  }
  auto sharded = [&](double per_param, int min_stage) {
    // Bytes per GPU of a per-parameter state that ZeRO shards from `min_stage` on.
    if (p.zero < min_stage) return per_param;
    return per_param * ((params_gpu - experts_gpu) / dense_rep + experts_gpu / expert_rep) / params_gpu;
  };
  auto fill = [&](MemoryBreakdown& mem, double params_stage, double act, double logits) {
    mem.weights = params_stage * sharded(bytes, 3);
    mem.gradients = params_stage * sharded(grad_bytes, 2);
    mem.optimizer = params_stage * sharded(12.0, 1);
    mem.activations = act;
    mem.other = cal.reserved_bytes + logits;
  };
  const double logits_bytes = tokens * static_cast<double>(m.spec.vocab) / tp * 4.0;  // fp32
  fill(mem_first, params.first, act_first, pp == 1 ? logits_bytes : 0.0);
  fill(mem_last, params.last, act_last, logits_bytes);
  core.memory = mem_first.total() >= mem_last.total() ? mem_first : mem_last;
  core.fits = core.memory.total() <= c.gpu().memory_bytes * (1.0 - j.memory_headroom);
  core.model_flops = static_cast<double>(j.global_batch) * s * model_flops_per_token(k, m.spec.layers, s);
  return core;
}

PlanShapes plan_shapes(const Cluster& c, const Mapping& map) {
  PlanShapes sh;
  for (Dim d : kDefaultOrder) sh.dims[d] = dimension_shape(c, map, d);
  sh.grad = combine_shapes(sh.dims[Dim::dp], sh.dims[Dim::cp]);
  sh.expert_grad = map.degree(Dim::ep) > 1 ? expert_dp_shape(c, map) : sh.grad;
  return sh;
}

Evaluation finish(const PlanCore& core, const PlanShapes& sh, const Fabric& fab, const Cluster& c,
                  const JobSpec& j, const Plan& p, const Calibration& cal) {
  Evaluation e;
  const int tp = p[Dim::tp], pp = p[Dim::pp], cp = p[Dim::cp], ep = p[Dim::ep];
  const int v = p.vpp;
  const int mbs = core.microbatches;
  e.microbatches = mbs;
  e.shapes = sh.dims;
  e.expert_dp_shape = sh.expert_grad;
  const GroupShape& tp_shape = sh.dims[Dim::tp];
  const GroupShape& pp_shape = sh.dims[Dim::pp];
  const double t_compute = core.t_matmul + core.t_elementwise;

  // TP: 2 collectives forward and 2 backward per layer (2 more when the forward is recomputed).
  // Sequence parallelism turns each all-reduce into an all-gather plus a reduce-scatter of the
  // same volume. With TP overlap only a calibrated fraction stays exposed.
  double t_tp_total = 0;
  if (tp > 1) {
    CollectiveCost one;
    if (p.sequence_parallel) {
      one = ring_all_gather(fab, tp_shape, core.tp_bytes);
      one.time += ring_reduce_scatter(fab, tp_shape, core.tp_bytes).time;
    } else {
      one = all_reduce(fab, tp_shape, core.tp_bytes);
    }
    e.algorithms[Dim::tp] = one.algorithm;
    t_tp_total = core.layers_per_stage * core.tp_per_layer * one.time;
  }
  const double t_tp = j.tp_comm_overlap ? t_tp_total * cal.tp_overlap_exposed_fraction : t_tp_total;

  // CP (ring attention): per layer, cp - 1 ring steps pass K/V chunks forward, and K/V plus their
  // gradients backward (twice the bytes); they overlap the attention core that uses them.
  double t_cp = 0, t_cp_total = 0;
  if (cp > 1) {
    const GroupShape& g = sh.dims[Dim::cp];
    const double step = fab.latency[g.span_tier] + core.cp_bytes / ring_bandwidth(fab, g);
    const double fwd = fab.base_latency + (cp - 1) * step;
    const double bwd = fab.base_latency + (cp - 1) * 2.0 * step;
    const int fwd_passes = p.recompute == Recompute::full ? 2 : 1;
    const double attn = core.t_attention_fwd;
    t_cp = core.layers_per_stage *
           (fwd_passes * std::max(0.0, fwd - attn) + std::max(0.0, bwd - 2.0 * attn));
    t_cp_total = core.layers_per_stage * (fwd_passes * fwd + bwd);
    e.algorithms[Dim::cp] = Algorithm::ring;
  }

  // EP: per MoE layer, an all-to-all dispatch and combine forward, the same backward (and again
  // for a recomputed forward), exposed.
  double t_ep = 0;
  if (ep > 1 && core.moe_layers_per_stage > 0) {
    const GroupShape& g = sh.dims[Dim::ep];
    CollectiveCost one = all_to_all(fab, g, core.ep_bytes);
    e.algorithms[Dim::ep] = one.algorithm;
    const double count = core.moe_layers_per_stage * core.ep_per_layer;
    t_ep = count * one.time;
    const auto tiers = all_to_all_per_tier(fab, g, core.ep_bytes);
    for (int k = 0; k < Cluster::kMaxTiers; ++k) e.ep_per_tier[k] = mbs * count * tiers[k];
  }

  // PP: each model chunk boundary sends the microbatch's activations forward and gradients back.
  // In the steady state the sends overlap compute; the fill and the drain each wait for
  // pp x vpp - 1 of them.
  double t_p2p = 0;
  if (pp > 1) {
    CollectiveCost one = send_recv(fab, pp_shape.span_tier, core.pp_bytes);
    e.algorithms[Dim::pp] = one.algorithm;
    t_p2p = one.time;
    if (tp > 1 && !p.sequence_parallel) t_p2p += ring_all_gather(fab, tp_shape, core.tp_bytes).time;
  }

  // Without overlap every microbatch waits for its sends: 2 per model chunk.
  const double t_p2p_mb = j.overlap_p2p ? 0.0 : 2.0 * v * t_p2p;
  const double t_mb = t_compute + t_tp + t_cp + t_ep + t_p2p_mb;
  e.compute.matmul = mbs * core.t_matmul;
  e.compute.elementwise = mbs * core.t_elementwise;
  e.time.compute = mbs * t_compute;
  e.time.tp = mbs * t_tp;
  e.time.cp = mbs * t_cp;
  e.time.ep = mbs * t_ep;
  e.time.bubble = (pp - 1) * t_mb / v;
  e.time.pp = pp == 1          ? 0.0
              : j.overlap_p2p ? 2.0 * (static_cast<double>(pp) * v - 1) * t_p2p
                              : mbs * t_p2p_mb;
  e.comm.tp = mbs * t_tp_total;
  e.comm.cp = mbs * t_cp_total;
  e.comm.ep = mbs * t_ep;
  e.comm.pp = mbs * 2.0 * v * t_p2p;

  // DP, bucketed and overlapped with the backward pass (2/3 of a microbatch's compute); the last
  // bucket, or whatever exceeds the window, is exposed; all of it without --overlap-grad-reduce.
  // Each bucket is its own collective, so every bucket pays the latency terms. Dense gradients
  // reduce over dp x cp, expert gradients over expert-dp.
  //   ZeRO-0: one gradient all-reduce per step, during the last microbatch's backward.
  //   ZeRO-1 (distributed optimizer): one reduce-scatter per step, the same way, then an exposed
  //           all-gather of the updated parameters.
  //   ZeRO-2: gradients are kept sharded, so every microbatch reduce-scatters its own, during its
  //           backward; then the parameter all-gather, exposed.
  //   ZeRO-3: every microbatch also all-gathers the parameters forward and backward, layer by
  //           layer; all three hide behind that microbatch's compute where they fit.
  const double params_gpu = core.params_gpu;
  const bool any_dp = sh.grad.size > 1 || sh.expert_grad.size > 1;
  if (any_dp && params_gpu > 0) {
    // Buckets of dp_bucket_params parameters; ZeRO-3 gathers one layer at a time.
    auto buckets = [&](double grad_bytes) {
      if (core.grad_bytes_per_param <= 0) return 1.0;
      return std::max(1.0, std::ceil(grad_bytes / core.grad_bytes_per_param / cal.dp_bucket_params));
    };
    const double layer_gathers = std::max(1.0, core.layers_per_stage);
    auto reduce = [&](const GroupShape& g, double grad_bytes, double param_bytes,
                      CollectiveCost& grad, double& gather) {
      if (grad_bytes <= 0) return;
      const double n = buckets(grad_bytes);
      grad = p.zero == 0 ? all_reduce(fab, g, grad_bytes / n) : ring_reduce_scatter(fab, g, grad_bytes / n);
      grad.time *= n;
      const double ng = p.zero >= 3 ? layer_gathers : n;
      gather = ng * ring_all_gather(fab, g, param_bytes / ng).time;
    };
    CollectiveCost g_dense, g_expert;
    double gather_dense = 0, gather_expert = 0;
    reduce(sh.grad, core.dense_grad_bytes, core.dense_param_bytes, g_dense, gather_dense);
    reduce(sh.expert_grad, core.expert_grad_bytes, core.expert_param_bytes, g_expert, gather_expert);
    e.algorithms[Dim::dp] = g_dense.algorithm;
    const double grad = g_dense.time + g_expert.time;
    const double gather = gather_dense + gather_expert;
    const double window = j.overlap_grad_reduce ? t_compute * 2.0 / 3.0 : 0.0;
    const double last_bucket = std::min(1.0, cal.dp_bucket_params / params_gpu);
    auto overlapped = [&](double comm, double hide) {
      return std::max(comm - hide, comm * last_bucket);
    };
    switch (p.zero) {
      case 0:
        e.time.dp = overlapped(grad, window);
        e.comm.dp = grad;
        break;
      case 1:
        e.time.dp = overlapped(grad, window) + gather;
        e.comm.dp = grad + gather;
        break;
      case 2:
        e.time.dp = mbs * overlapped(grad, window) + gather;
        e.comm.dp = mbs * grad + gather;
        break;
      default:
        e.time.dp = mbs * overlapped(grad + 2 * gather, j.overlap_grad_reduce ? t_compute : 0.0);
        e.comm.dp = mbs * (grad + 2 * gather);
        break;
    }
  }
  e.time.optimizer = core.optimizer_time;
  e.memory = core.memory;
  e.fits = core.fits;

  e.step_time = e.time.total();
  const double step_tokens = static_cast<double>(j.global_batch) * static_cast<double>(j.seq_len);
  e.tokens_per_s = step_tokens / e.step_time;
  const double gpus = static_cast<double>(p.world());
  e.model_flops_per_gpu = core.model_flops / e.step_time / gpus;
  e.mfu = e.model_flops_per_gpu / c.gpu().peak_flops;
  return e;
}

Evaluation evaluate(const Cluster& c, const Model& m, const JobSpec& j, const Plan& p,
                    const Mapping& map, const Calibration& cal) {
  return finish(prepare(c, m, j, p, cal), plan_shapes(c, map), make_fabric(c, cal), c, j, p, cal);
}

}  // namespace topoplan
