#include "topoplan/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace topoplan {

PlanError check_plan(const Cluster& c, const Model& m, const JobSpec& j, const Plan& p) {
  if (p[Dim::cp] != 1 || p[Dim::ep] != 1) return PlanError::unsupported_dim;
  if (p.world() != c.gpu_count()) return PlanError::world_mismatch;
  const int tp = p[Dim::tp];
  if (m.spec.heads % tp != 0) return PlanError::tp_heads;
  if (m.spec.kv_heads % tp != 0) return PlanError::tp_kv_heads;
  if (m.spec.ffn % tp != 0) return PlanError::tp_ffn;
  const std::int64_t stages = static_cast<std::int64_t>(p[Dim::pp]) * p.vpp;
  if (p.vpp < 1 || stages > m.spec.layers) return PlanError::pp_layers;
  if (p.vpp > 1 && m.spec.layers % stages != 0) return PlanError::pp_layers;
  if (p.zero < 0 || p.zero > 3) return PlanError::zero_stage;
  if (p.micro_batch < 1 ||
      j.global_batch % (static_cast<std::int64_t>(p[Dim::dp]) * p.micro_batch) != 0)
    return PlanError::batch;
  if (p.vpp > 1 && (j.global_batch / (static_cast<std::int64_t>(p[Dim::dp]) * p.micro_batch)) %
                           p[Dim::pp] != 0)
    return PlanError::vpp_microbatches;
  return PlanError::none;
}

const char* short_reason(PlanError e) {
  switch (e) {
    case PlanError::none: return "ok";
    case PlanError::world_mismatch: return "degrees do not multiply to the GPU count";
    case PlanError::tp_heads: return "tp does not divide the attention heads";
    case PlanError::tp_kv_heads: return "tp does not divide the key/value heads";
    case PlanError::tp_ffn: return "tp does not divide the MLP size";
    case PlanError::pp_layers: return "pp x vpp does not fit the layers";
    case PlanError::vpp_microbatches: return "interleaving needs microbatches divisible by pp";
    case PlanError::batch: return "dp x micro-batch does not divide the global batch";
    case PlanError::unsupported_dim: return "cp/ep > 1 not modelled yet";
    case PlanError::zero_stage: return "ZeRO stage outside 0-3";
  }
  return "?";
}

std::string describe(PlanError e, const Cluster& c, const Model& m, const JobSpec& j,
                     const Plan& p) {
  const int tp = p[Dim::tp];
  switch (e) {
    case PlanError::none: return "ok";
    case PlanError::world_mismatch:
      return fmt::format("--tp/--pp/--dp: {} x {} x {} = {} GPUs, but the cluster has {}", tp,
                         p[Dim::pp], p[Dim::dp], p.world(), c.gpu_count());
    case PlanError::tp_heads:
      return fmt::format("--tp: {} does not divide {}'s {} attention heads", tp, m.spec.name,
                         m.spec.heads);
    case PlanError::tp_kv_heads:
      return fmt::format("--tp: {} does not divide {}'s {} key/value heads", tp, m.spec.name,
                         m.spec.kv_heads);
    case PlanError::tp_ffn:
      return fmt::format("--tp: {} does not divide {}'s MLP size {}", tp, m.spec.name,
                         m.spec.ffn);
    case PlanError::pp_layers:
      if (p.vpp > 1)
        return fmt::format("--vpp: pp {} x vpp {} does not divide {}'s {} layers", p[Dim::pp],
                           p.vpp, m.spec.name, m.spec.layers);
      return fmt::format("--pp: {} stages for {}'s {} layers", p[Dim::pp], m.spec.name,
                         m.spec.layers);
    case PlanError::vpp_microbatches:
      return fmt::format("--vpp: the interleaved schedule needs the {} microbatches per pipeline "
                         "to be a multiple of pp {}",
                         j.global_batch / (static_cast<std::int64_t>(p[Dim::dp]) * p.micro_batch),
                         p[Dim::pp]);
    case PlanError::batch:
      return fmt::format("--micro-batch: dp {} x micro-batch {} does not divide the global batch {}",
                         p[Dim::dp], p.micro_batch, j.global_batch);
    case PlanError::unsupported_dim:
      return "--cp/--ep: context and expert parallelism are not modelled yet";
    case PlanError::zero_stage:
      return fmt::format("--zero: expected 0, 1, 2 or 3, got {}", p.zero);
  }
  return "?";
}

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
  [[nodiscard]] double max() const { return std::max(first, last); }
};

/// Parameters held by one GPU of the first and of the last pipeline stage.
StageParams stage_params(const Model& m, const Plan& p) {
  const double t = p[Dim::tp];
  const int pp = p[Dim::pp];
  const double layers = static_cast<double>((m.spec.layers + pp - 1) / pp);
  const auto& k = m.counts;
  const double body = layers * static_cast<double>(k.layer_params) / t;
  const double emb = static_cast<double>(k.embedding_params) / t;
  // Tied embeddings keep a copy of the word embedding on the last stage.
  const double head = static_cast<double>(k.head_params) / t +
                      (m.spec.tied_embeddings && pp > 1
                           ? static_cast<double>(m.spec.vocab * m.spec.hidden) / t
                           : 0.0);
  if (pp == 1) return {body + emb + head, body + emb + head};
  return {body + emb, body + head};
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
  const double ffn = static_cast<double>(m.spec.ffn);
  const double sharded = tokens * (4 * k.q_dim + 4 * k.kv_dim + (m.spec.gated_mlp ? 6 : 4) * ffn) / t;
  double scores = 0;
  if (r == Recompute::none && !j.flash_attention)
    scores = 5.0 * static_cast<double>(m.spec.heads) * static_cast<double>(j.seq_len) * tokens / t;
  return replicated + sharded + scores;
}

}  // namespace

double exposed_comm(const Evaluation& e, Dim d) {
  switch (d) {
    case Dim::tp: return e.time.tp;
    case Dim::pp: return e.time.pp;
    case Dim::dp: return e.time.dp;
    default: return 0;
  }
}

double total_comm(const Evaluation& e, Dim d) {
  switch (d) {
    case Dim::tp: return e.comm.tp;
    case Dim::pp: return e.comm.pp;
    case Dim::dp: return e.comm.dp;
    default: return 0;
  }
}

namespace {

/// Seconds per token on one GPU for one layer (and for the logits), by kind of work.
struct LayerWork {
  double matmul_s = 0;
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
  const double f = static_cast<double>(m.spec.ffn);
  const double tokens = static_cast<double>(p.micro_batch) * s / p[Dim::cp];
  const double n_min = std::min({k.q_dim / t, f / t, h, tokens});
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
  w.elementwise_s = elements * dtype_bytes(j.dtype) / hbm;
  w.logits_matmul_s = 3.0 * k.logits_flops / t / rate;
  w.logits_elementwise_s = 12.0 * static_cast<double>(m.spec.vocab) / t / hbm;  // fp32 softmax
  return w;
}

}  // namespace

Evaluation evaluate(const Cluster& c, const Model& m, const JobSpec& j, const Plan& p,
                    const Mapping& map, const Calibration& cal) {
  Evaluation e;
  const Fabric fab = make_fabric(c, cal);
  const auto& k = m.counts;
  const int tp = p[Dim::tp], pp = p[Dim::pp], dp = p[Dim::dp], cp = p[Dim::cp];
  const int v = p.vpp;
  const double s = static_cast<double>(j.seq_len);
  const double h = static_cast<double>(m.spec.hidden);
  const double bytes = dtype_bytes(j.dtype);
  // The slowest stage holds ceil(layers / pp) layers (uneven splits put the extra on it).
  const double layers_per_stage =
      static_cast<double>((m.spec.layers + pp - 1) / pp);
  const int mbs = static_cast<int>(j.global_batch / (static_cast<std::int64_t>(dp) * p.micro_batch));
  e.microbatches = mbs;

  for (int d = 0; d < kDims; ++d) e.shapes[d] = dimension_shape(c, map, static_cast<Dim>(d));
  const GroupShape& tp_shape = e.shapes[static_cast<int>(Dim::tp)];
  const GroupShape& pp_shape = e.shapes[static_cast<int>(Dim::pp)];
  const GroupShape& dp_shape = e.shapes[static_cast<int>(Dim::dp)];

  // Compute for one microbatch on the slowest stage (the last: it also runs the logits).
  const double tokens = static_cast<double>(p.micro_batch) * s / cp;
  const LayerWork w = layer_work(m, j, p, cal, c.gpu());
  const double t_matmul = tokens * (layers_per_stage * w.matmul_s + w.logits_matmul_s);
  const double t_elem = tokens * (layers_per_stage * w.elementwise_s + w.logits_elementwise_s);
  const double t_compute = t_matmul + t_elem;

  // TP: 2 collectives forward and 2 backward per layer (2 more when the forward is recomputed),
  // each on the microbatch's activations. Sequence parallelism turns each all-reduce into an
  // all-gather plus a reduce-scatter of the same volume. With TP overlap only a calibrated
  // fraction stays exposed.
  double t_tp_total = 0;
  if (tp > 1) {
    const double act = tokens * h * bytes;
    const int per_layer = p.recompute == Recompute::full ? 6 : 4;
    CollectiveCost one;
    if (p.sequence_parallel) {
      one = ring_all_gather(fab, tp_shape, act);
      one.time += ring_reduce_scatter(fab, tp_shape, act).time;
    } else {
      one = all_reduce(fab, tp_shape, act);
    }
    e.algorithms[static_cast<int>(Dim::tp)] = one.algorithm;
    t_tp_total = layers_per_stage * per_layer * one.time;
  }
  const double t_tp = j.tp_comm_overlap ? t_tp_total * cal.tp_overlap_exposed_fraction : t_tp_total;

  // PP: each model chunk boundary sends the microbatch's activations forward and gradients back
  // (sharded by tp under sequence parallelism). In the steady state the sends overlap compute;
  // the fill and the drain each wait for pp x vpp - 1 of them.
  double t_p2p = 0;
  if (pp > 1) {
    const double act = tokens * h * bytes / (p.sequence_parallel ? tp : 1);
    CollectiveCost one = send_recv(fab, pp_shape.span_tier, act);
    e.algorithms[static_cast<int>(Dim::pp)] = one.algorithm;
    t_p2p = one.time;
  }

  const double t_mb = t_compute + t_tp;
  e.compute.matmul = mbs * t_matmul;
  e.compute.elementwise = mbs * t_elem;
  e.time.compute = mbs * t_compute;
  e.time.tp = mbs * t_tp;
  e.time.bubble = (pp - 1) * t_mb / v;
  e.time.pp = pp > 1 ? 2.0 * (static_cast<double>(pp) * v - 1) * t_p2p : 0.0;
  e.comm.tp = mbs * t_tp_total;
  e.comm.pp = mbs * 2.0 * v * t_p2p;

  // DP, bucketed and overlapped with the backward pass (2/3 of a microbatch's compute); the last
  // bucket, or whatever exceeds the window, is exposed; all of it without --overlap-grad-reduce.
  //   ZeRO-0: one gradient all-reduce per step, during the last microbatch's backward.
  //   ZeRO-1 (distributed optimizer): one reduce-scatter per step, the same way, then an exposed
  //           all-gather of the updated parameters.
  //   ZeRO-2: gradients are kept sharded, so every microbatch reduce-scatters its own, during its
  //           backward; then the parameter all-gather, exposed.
  //   ZeRO-3: every microbatch also all-gathers the parameters forward and backward; all three
  //           hide behind that microbatch's compute where they fit.
  const StageParams params = stage_params(m, p);
  const double params_gpu = params.max();
  const double grad_bytes_per_param =
      j.dtype == Dtype::fp16 ? cal.grad_reduce_bytes_fp16 : cal.grad_reduce_bytes_bf16;
  if (dp > 1) {
    const double grad_bytes = params_gpu * grad_bytes_per_param;
    CollectiveCost grad = p.zero == 0 ? all_reduce(fab, dp_shape, grad_bytes)
                                      : ring_reduce_scatter(fab, dp_shape, grad_bytes);
    e.algorithms[static_cast<int>(Dim::dp)] = grad.algorithm;
    const double gather = ring_all_gather(fab, dp_shape, params_gpu * bytes).time;
    const double window = j.overlap_grad_reduce ? t_compute * 2.0 / 3.0 : 0.0;
    const double last_bucket = std::min(1.0, cal.dp_bucket_params / params_gpu);
    auto overlapped = [&](double comm, double hide) {
      return std::max(comm - hide, comm * last_bucket);
    };
    switch (p.zero) {
      case 0:
        e.time.dp = overlapped(grad.time, window);
        e.comm.dp = grad.time;
        break;
      case 1:
        e.time.dp = overlapped(grad.time, window) + gather;
        e.comm.dp = grad.time + gather;
        break;
      case 2:
        e.time.dp = mbs * overlapped(grad.time, window) + gather;
        e.comm.dp = mbs * grad.time + gather;
        break;
      default:
        e.time.dp = mbs * overlapped(grad.time + 2 * gather, j.overlap_grad_reduce ? t_compute : 0.0);
        e.comm.dp = mbs * (grad.time + 2 * gather);
        break;
    }
  }

  const double opt_params = p.zero >= 1 ? params_gpu / dp : params_gpu;
  e.time.optimizer = opt_params * cal.optimizer_bytes_per_param / c.gpu().hbm_bandwidth;

  // Memory, on the first stage (most microbatches in flight) and the last (logits), the worse.
  // 1F1B keeps min(pp, m) microbatches in flight on the first stage; interleaving multiplies
  // that by 1 + (pp - 1) / (pp x vpp).
  MemoryBreakdown mem_first, mem_last;
  double in_flight = pp > 1 ? std::min(pp, mbs) : 1;
  if (v > 1) in_flight *= 1.0 + (pp - 1.0) / (static_cast<double>(pp) * v);
  const double layer_act = layer_activation_bytes(m, j, p, p.recompute);
  double act_first = layer_act * layers_per_stage * in_flight;
  double act_last = layer_act * layers_per_stage;
  if (p.recompute == Recompute::full) {  // one layer's full activations while recomputing
    const double working = layer_activation_bytes(m, j, p, Recompute::selective);
    act_first += working;
    act_last += working;
  }
  auto fill = [&](MemoryBreakdown& mem, double params_stage, double act, double logits) {
    mem.weights = params_stage * bytes / (p.zero >= 3 ? dp : 1);
    mem.gradients = params_stage * grad_bytes_per_param / (p.zero >= 2 ? dp : 1);
    mem.optimizer = params_stage * 12.0 / (p.zero >= 1 ? dp : 1);
    mem.activations = act;
    mem.other = cal.reserved_bytes + logits;
  };
  const double logits_bytes = tokens * static_cast<double>(m.spec.vocab) / tp * 4.0;  // fp32
  fill(mem_first, params.first, act_first, pp == 1 ? logits_bytes : 0.0);
  fill(mem_last, params.last, act_last, logits_bytes);
  e.memory = mem_first.total() >= mem_last.total() ? mem_first : mem_last;
  e.fits = e.memory.total() <= c.gpu().memory_bytes;

  e.step_time = e.time.total();
  const double step_tokens = static_cast<double>(j.global_batch) * s;
  e.tokens_per_s = step_tokens / e.step_time;
  const double model_flops = step_tokens * model_flops_per_token(k, m.spec.layers, s);
  e.model_flops_per_gpu = model_flops / e.step_time / static_cast<double>(c.gpu_count());
  e.mfu = e.model_flops_per_gpu / c.gpu().peak_flops;
  return e;
}

}  // namespace topoplan
