#include "topoplan/cost_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "topoplan/cost_dims.hpp"
#include "topoplan/gemm.hpp"
#include "topoplan/stage_balance.hpp"
#include "topoplan/stage_memory.hpp"

namespace topoplan {

namespace {

/// Forward FLOPs per token of the matmuls op-level selective checkpointing recomputes: every
/// second one of a layer, in the order torchtitan's Llama block calls them (Q, K, V, output,
/// gate, up, down; or Q, K, V, output, FC1, FC2), so K, the output projection and the up (or
/// FC2) projection: 2 h (kv_dim + q_dim + ffn) either way.
double op_recompute_flops(const Model& m) {
  const auto& k = m.counts;
  const double h = static_cast<double>(m.spec.hidden);
  return std::min(k.layer_matmul_flops, 2.0 * h * (k.kv_dim + k.q_dim + k.active_ffn));
}

/// Per-token hardware FLOPs of one layer, forward + backward + recomputation.
double layer_hw_flops(const Model& m, double s, Recompute r) {
  const auto& k = m.counts;
  const double attention = k.layer_attention_flops_per_seq * s * attention_span_factor(k, s);
  const double fwd = k.layer_matmul_flops + attention;
  switch (r) {
    case Recompute::none: return 3 * fwd;
    case Recompute::selective: return 3 * fwd + attention;
    case Recompute::full: return 4 * fwd;
    case Recompute::selective_op: return 3 * fwd + op_recompute_flops(m);
  }
  return 3 * fwd;
}

}  // namespace

/// A layer's forward matmul seconds split by the TP collective each overlaps with: the QKV
/// projection (after an all-gather), the attention output (before a reduce-scatter), the MLP's
/// input and output projections (the same pair), in proportion to their FLOPs.
std::array<double, 4> tp_hide_times(const Model& m, double linear_fwd_s) {
  const auto& k = m.counts;
  const double h = static_cast<double>(m.spec.hidden);
  const double total = k.layer_matmul_flops;
  if (total <= 0) return {};
  const double qkv = std::min(total, 2.0 * h * (k.q_dim + 2.0 * k.kv_dim));
  const double out = std::min(total - qkv, 2.0 * h * k.q_dim);
  const double mlp = total - qkv - out;
  const double in_share = m.spec.gated_mlp ? 2.0 / 3.0 : 0.5;
  const double sec = linear_fwd_s / total;
  return {qkv * sec, out * sec, mlp * in_share * sec, mlp * (1 - in_share) * sec};
}

double hardware_flops_per_token(const Model& m, double seq_len, Recompute r) {
  const auto& k = m.counts;
  const double mtp_attention =
      k.mtp_layers * k.layer_attention_flops_per_seq * seq_len * attention_span_factor(k, seq_len);
  return static_cast<double>(m.spec.layers) * layer_hw_flops(m, seq_len, r) +
         3.0 * (k.logits_flops + k.mtp_matmul_flops + mtp_attention);
}

namespace {

/// HBM traffic of the fp32 softmax and cross-entropy over the logits, per vocabulary entry per
/// token: three fp32 passes (read, write, read back in the backward).
constexpr double kLogitsSoftmaxBytesPerEntry = 12.0;

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

double total_comm(const Evaluation& e, Dim d) { return e.comm[d]; }

namespace {

/// Seconds per token on one GPU for one layer (and for the last stage's head), by kind of work.
struct LayerWork {
  double matmul_s = 0;
  double attention_fwd_s = 0;  ///< the attention core's forward (what ring attention hides behind)
  double linear_fwd_s = 0;     ///< the linear layers' forward, once (what TP overlap hides behind)
  double elementwise_s = 0;
  double head_matmul_s = 0;  ///< the last stage's logits and multi-token-prediction modules
  double head_elementwise_s = 0;
};

/// HBM bytes per token per layer (averaged over the layers) of handling the MoE layers' routed
/// token copies: top_k per token on the rank that dispatched it (a 1/tp share of the tokens under
/// sequence parallelism), times expert TP when the copies are all-gathered over it; forward and
/// backward, and the forward again under full recomputation.
double moe_routed_copy_bytes(const Model& m, const Plan& p, const Calibration& cal) {
  if (!m.spec.moe() || m.spec.layers <= 0) return 0.0;
  const double sp_div = p.sequence_parallel ? p[Dim::tp] : 1.0;
  const double copies = static_cast<double>(m.spec.top_k) * std::max(expert_tp_of(p), 1) / sp_div;
  const double passes = p.recompute == Recompute::full ? 4.0 / 3.0 : 1.0;
  return moe_layers_in(m, 1.0) * copies * static_cast<double>(m.spec.hidden) *
         cal.moe_routed_copy_bytes * passes;
}

/// Element-wise traffic per token per layer, in activation elements, of the recomputed modules
/// (JobSpec::recompute_modules): the two norms (read and write the width each, a 1/tp share under
/// sequence parallelism), the MoE experts' SwiGLU (read both halves, write the output; the MoE
/// layers' share of the layers).
double recomputed_module_elements(const Model& m, const Plan& p, unsigned modules) {
  const double t = p[Dim::tp], h = static_cast<double>(m.spec.hidden);
  double out = 0;
  if (modules & kRecomputeLayernorm) out += 4.0 * h / (p.sequence_parallel ? t : 1.0);
  if (modules & kRecomputeMoeAct)
    out += moe_layers_in(m, 1.0) * (m.spec.gated_mlp ? 3.0 : 2.0) * m.counts.moe_ffn / t;
  return out;
}

/// Matrix multiplies run at the calibrated efficiency of the GPU's architecture, lower for small
/// per-GPU matrices (FP8 ones GEMM by GEMM, by shape: gemm.hpp); element-wise kernels (norms,
/// residual adds, dropout, activation, and the softmax over s scores per head unless attention is
/// fused) stream HBM. Forward once, backward twice; recomputation repeats the forward (full) or the
/// attention core (selective).
LayerWork layer_work(const Model& m, const JobSpec& j, const Plan& p, const Calibration& cal,
                     const GpuSpec& gpu) {
  const auto& k = m.counts;
  const double t = p[Dim::tp];
  const double s = static_cast<double>(j.seq_len);
  const double h = static_cast<double>(m.spec.hidden);
  const double f = k.active_ffn;
  const double tokens = static_cast<double>(p.micro_batch) * s / p[Dim::cp];
  const double n_min = std::min({k.q_dim / t, k.min_ffn / t, h, tokens});
  const double size = n_min / (n_min + cal.gemm_half_dim);
  const int arch = static_cast<int>(gpu.arch);
  const double rate = gpu.peak_flops * cal.gemm_efficiency[arch] * size;
  // fp8 training: the linear layers' multiplies in FP8, each GEMM at its own shape (gemm.hpp),
  // fed by FP8 casts; mxfp8 the same multiplies (block-scaled FP8 tensor cores run at the FP8
  // rate) fed by MXFP8 quantizations; nvfp4 in NVFP4 by the size rule; attention and the logits
  // in bf16.
  const bool fp8 = fp8_multiplies(j.dtype) && gpu.peak_flops_fp8 > 0;
  const bool fp4 = j.dtype == Dtype::nvfp4 && gpu.peak_flops_fp4 > 0;
  const LinearPassTimes lp =
      fp8 ? fp8_linear_pass_times(gpu.arch, m, t, tokens, j.tp_comm_overlap && t > 1 ? t : 1.0, cal,
                                  gpu.peak_flops_fp8 * cal.gemm_efficiency_fp8[arch], size)
      : fp4 ? size_rule_pass_times(gpu.peak_flops_fp4 * cal.gemm_efficiency_fp4[arch], size)
            : LinearPassTimes{1 / rate, 1 / rate, 1 / rate};
  const double attn_rate = j.fa2_attention
                               ? gpu.peak_flops * cal.attention_efficiency_fa2[arch] * size
                           : j.fp8_attention && fp8_attention_possible(j, gpu)
                               ? rate * gpu.peak_flops_fp8 / gpu.peak_flops
                               : rate;
  // Sliding-window layers attend to fewer keys (attention_span_factor).
  const double attn = k.layer_attention_flops_per_seq * s * attention_span_factor(k, s) / t;
  const double linear = k.layer_matmul_flops / t;
  double linear_passes = 3, attn_passes = 3;
  if (p.recompute == Recompute::full) ++linear_passes, ++attn_passes;
  if (p.recompute == Recompute::selective) ++attn_passes;
  if (p.recompute == Recompute::selective_op)
    linear_passes += op_recompute_flops(m) / k.layer_matmul_flops;

  const double sp_div = p.sequence_parallel ? t : 1.0;
  // Eager: SwiGLU as silu then multiply (5 passes of the MLP width, 3 fused); a plain
  // activation reads and writes once either way.
  const double e_h = j.eager ? (cal.eager_elementwise_hidden_passes * h / sp_div +
                                cal.eager_elementwise_qkv_passes * (k.q_dim + k.kv_dim) / t)
                             : cal.elementwise_hidden_passes * h / sp_div;
  const double e_f = (m.spec.gated_mlp ? (j.eager ? 5.0 : 3.0) : 2.0) * f / t;
  const double e_s =
      j.flash_attention ? 0.0 : cal.softmax_passes * static_cast<double>(m.spec.heads) / t * s;
  double elements = 3 * (e_h + e_f + e_s);
  if (p.recompute == Recompute::full) elements += e_h + e_f + e_s;
  if (p.recompute == Recompute::selective) elements += e_s;
  if (p.recompute == Recompute::selective_op) elements += e_h + e_f;
  const unsigned modules = recomputed_modules(j, p);
  elements += recomputed_module_elements(m, p, modules);
  const double hbm = gpu.hbm_bandwidth * cal.hbm_efficiency;

  LayerWork w;
  w.matmul_s = linear * ((linear_passes - 2) * lp.forward + lp.data_grad + lp.weight_grad) +
               attn_passes * attn / attn_rate;
  if (modules & kRecomputeMlaUpProj) w.matmul_s += k.mla_up_flops / t * lp.forward;
  w.attention_fwd_s = attn / attn_rate;
  w.linear_fwd_s = linear * lp.forward;
  w.elementwise_s = elements * activation_bytes(j) / hbm;
  if (fp8 || fp4) w.elementwise_s += quantization_bytes(m, t, cal, j.dtype) / hbm;
  w.elementwise_s += moe_routed_copy_bytes(m, p, cal) / hbm;
  // The last stage's head: the logits and, per multi-token-prediction module, one more layer
  // (costed as an average one), its 2h x h projection and the logits again.
  const double n = k.mtp_layers;
  const double logits_matmul = 3.0 * k.logits_flops / t / rate;
  const double logits_elementwise =
      kLogitsSoftmaxBytesPerEntry * static_cast<double>(m.spec.vocab) / t / hbm;
  w.head_matmul_s = (1 + n) * logits_matmul + n * (w.matmul_s + 3.0 * 4.0 * h * h / t / rate);
  w.head_elementwise_s = (1 + n) * logits_elementwise + n * w.elementwise_s;
  return w;
}

}  // namespace

double tp_mlp_scale(const Model& m, const Plan& p) {
  if (!m.spec.moe() || m.spec.layers <= 0) return 1.0;
  // Megatron-core's all-to-all dispatcher: after the dispatch, the token copies a rank received
  // are all-gathered over expert TP, and reduce-scattered back before the combine (top_k copies
  // per token instead of the dense MLP's one); a shared expert is a dense MLP beside them.
  const int tp = p[Dim::tp], etp = expert_tp_of(p);
  const double routed = etp > 1 ? static_cast<double>(m.spec.top_k) * etp / tp : 0.0;
  const double moe = routed + (m.spec.shared_experts > 0 ? 1.0 : 0.0);
  const double f = moe_layers_in(m, 1.0);
  return (1.0 - f) + f * moe;
}

double moe_layers_in(const Model& m, double layers) {
  return layers * static_cast<double>(m.counts.moe_layers) / static_cast<double>(m.spec.layers);
}

StageCompute stage_compute(const Model& m, const JobSpec& j, const Plan& p, const Calibration& cal,
                           const GpuSpec& gpu, double layers) {
  const double tokens =
      static_cast<double>(p.micro_batch) * static_cast<double>(j.seq_len) / p[Dim::cp];
  const LayerWork w = layer_work(m, j, p, cal, gpu);
  // DeepSpeed's BF16_Optimizer: after each micro-batch's backward, a pass over the stage's
  // parameters adds their bf16 gradients into fp32 copies (JobSpec::grad_accumulation_pass).
  double accumulate = 0;
  if (j.grad_accumulation_pass) {
    const LayerShare share = layer_share(m, p);
    accumulate = layers * (share.dense + share.expert) * cal.grad_accumulation_bytes_per_param /
                 (gpu.hbm_bandwidth * cal.hbm_efficiency);
  }
  StageCompute out;
  out.attention_fwd = tokens * w.attention_fwd_s;
  out.linear_fwd = tokens * w.linear_fwd_s;
  out.head_matmul = tokens * w.head_matmul_s;
  out.head_elementwise = tokens * w.head_elementwise_s;
  const double again = recomputed_layers(p, layers);
  if (p.recompute == Recompute::full && again < layers) {  // partial: some layers keep theirs
    Plan kept = p;
    kept.recompute = Recompute::none;
    kept.recompute_modules = 0;
    JobSpec unmoduled = j;  // full granularity recomputes no modules in the layers it keeps
    unmoduled.recompute_modules = 0;
    const LayerWork k = layer_work(m, unmoduled, kept, cal, gpu);
    out.matmul = tokens * (again * w.matmul_s + (layers - again) * k.matmul_s + w.head_matmul_s);
    out.elementwise = tokens * (again * w.elementwise_s + (layers - again) * k.elementwise_s +
                                w.head_elementwise_s) +
                      accumulate;
    return out;
  }
  out.matmul = tokens * (layers * w.matmul_s + w.head_matmul_s);
  out.elementwise = tokens * (layers * w.elementwise_s + w.head_elementwise_s) + accumulate;
  return out;
}

namespace {

/// Compute for one microbatch on the stage that computes longest: the last, which also runs the
/// head (the logits and any multi-token-prediction modules), or, when an uneven split gives the
/// last stage fewer layers, the stage with the most. `layers` is that stage's count of layers
/// that communicate (the last stage's MTP modules' layers included); `other` and `other_layers`
/// the rival stage when the split is uneven and the last one wins on compute.
struct SlowestStage {
  StageCompute work;
  double layers = 0;
  StageCompute other;
  double other_layers = 0;
};
SlowestStage slowest_stage_compute(const Model& m, const JobSpec& j, const Plan& p,
                                   const Calibration& cal, const GpuSpec& gpu) {
  const StageLayers split = split_of(p, m.spec.layers);
  const auto last = static_cast<double>(split.last);
  SlowestStage out{stage_compute(m, j, p, cal, gpu, last), last + m.counts.mtp_layers, {}, 0};
  const auto others = static_cast<double>(std::max(split.first, split.middle));
  if (p[Dim::pp] > 1 && others > last) {
    const StageCompute body = stage_compute(m, j, p, cal, gpu, others).without_head();
    if (body.matmul + body.elementwise > out.work.matmul + out.work.elementwise)
      return {body, others, {}, 0};
    out.other = body;
    out.other_layers = others;
  }
  return out;
}

/// One microbatch's wait on the host beyond the stage's GPU work `gpu_work`: with MoE layers
/// launched eagerly the host syncs on the routing counts in every MoE layer and cannot run
/// ahead, so the stage's MoE layers take at least their host time (Calibration::moe_layer_host).
double moe_host_wait(const PlanCore& core, const JobSpec& j, const Calibration& cal,
                     double gpu_work) {
  if (j.cuda_graphs || core.moe_layers_per_stage <= 0) return 0.0;
  return std::max(0.0, core.moe_layers_per_stage * cal.moe_layer_host - gpu_work);
}

/// One microbatch's activation offloading copies beyond the compute they overlap with: each
/// offloaded layer's saved activations go to host memory while the next layer's forward runs,
/// and come back while the layer after it runs its backward (twice the forward; offloading
/// excludes recomputation). A copy longer than that compute shows.
double offload_exposed(const Model& m, const JobSpec& j, const Plan& p, const Calibration& cal,
                       const GpuSpec& gpu, const StageCompute& work) {
  if (p.offload_layers <= 0 || gpu.host_link_bandwidth <= 0) return 0;
  const double copy = layer_activation_bytes(m, j, p, Recompute::none) /
                      (gpu.host_link_bandwidth * cal.host_link_efficiency);
  const double layer = (work.matmul - work.head_matmul + work.elementwise - work.head_elementwise) /
                       static_cast<double>(m.spec.layers);
  const double fwd = layer / 3.0;
  return p.offload_layers * (std::max(0.0, copy - fwd) + std::max(0.0, copy - 2.0 * fwd));
}

/// The parameters on the most loaded stage: what DP reduces (in buckets) and gathers, and the
/// optimizer step.
void set_data_parallel(PlanCore& core, const Cluster& c, const Model& m, const JobSpec& j,
                       const Plan& p, const Calibration& cal) {
  const int dp = p[Dim::dp], cp = p[Dim::cp];
  const double bytes = activation_bytes(j);
  double experts_gpu = 0;
  const LoadedStage stage = most_loaded_stage(m, p, &experts_gpu);
  const double params_gpu = stage.params;
  const double grad_bytes = gradient_bytes(j, cal);
  const double dense_gpu = params_gpu - experts_gpu;
  core.params_gpu = params_gpu;
  core.grad_bytes_per_param = grad_bytes;
  core.dp_bucket_params =
      j.dp_bucket_params > 0
          ? static_cast<double>(j.dp_bucket_params)
          : std::max(cal.dp_bucket_params, Calibration::kDpBucketParamsPerRank * dp * cp);
  if (stage.holds_embedding)
    core.embedding_bucket_params = static_cast<double>(m.counts.embedding_params) / p[Dim::tp];
  core.dense_grad_bytes = dense_gpu * grad_bytes;
  core.expert_grad_bytes = experts_gpu * grad_bytes;
  // The parameter all-gather: FP8 (NVFP4) layer weights under --fp8-param-gather
  // (--fp4-param-gather); the embedding and the head, which stay 16-bit, are what remains of the
  // dense parameters beyond the layers'.
  const bool low_gather = low_precision_param_gather(j);
  const double low_dense =
      low_gather ? std::clamp(stage.layer_params - experts_gpu, 0.0, dense_gpu) : 0.0;
  // MXFP8 weights travel in bf16 and are cast after the gather (job.hpp).
  const bool mx_bf16 = mxfp8_params_gathered_in_bf16(j);
  const double low_bytes = mx_bf16 ? bytes : dtype_bytes(j.dtype);
  core.dense_param_bytes = low_dense * low_bytes + (dense_gpu - low_dense) * bytes;
  core.expert_param_bytes = experts_gpu * (low_gather ? low_bytes : bytes);
  // Data-parallel replicas of each parameter: dense ones over dp x cp, experts over expert-dp.
  const double dense_rep = static_cast<double>(dp) * cp;
  const double expert_rep = expert_replicas(p);
  const double opt_params =
      p.zero >= 1 ? dense_gpu / dense_rep + experts_gpu / expert_rep : params_gpu;
  core.optimizer_time = opt_params * cal.optimizer_bytes_per_param / c.gpu().hbm_bandwidth;
  // The cast of the stage's gathered bf16 weights to MXFP8, both ways, once per step.
  if (mx_bf16)
    core.optimizer_time += stage.layer_params * cal.mxfp8_cast_transpose_bytes /
                           (c.gpu().hbm_bandwidth * cal.hbm_efficiency);
}

}  // namespace

PlanCore prepare(const Cluster& c, const Model& m, const JobSpec& j, const Plan& p,
                 const Calibration& cal) {
  PlanCore core;
  const auto& k = m.counts;
  const int tp = p[Dim::tp], dp = p[Dim::dp], cp = p[Dim::cp];
  const double s = static_cast<double>(j.seq_len);
  const double h = static_cast<double>(m.spec.hidden);
  const double bytes = activation_bytes(j);
  core.microbatches =
      static_cast<int>(j.global_batch / (static_cast<std::int64_t>(dp) * p.micro_batch));
  core.pp = p[Dim::pp];
  core.vpp = p.vpp;
  // The stage that computes longest, and with an uneven split the rival with more layers.
  const SlowestStage slowest = slowest_stage_compute(m, j, p, cal, c.gpu());
  const StageCompute& work = slowest.work;
  core.layers_per_stage = slowest.layers;
  core.moe_layers_per_stage = moe_layers_in(m, core.layers_per_stage);
  core.t_matmul = work.matmul;
  core.t_elementwise = work.elementwise;
  core.other_layers = slowest.other_layers;
  core.other_matmul = slowest.other.matmul;
  core.other_elementwise = slowest.other.elementwise;
  core.offload_exposed = offload_exposed(m, j, p, cal, c.gpu(), work);
  core.t_attention_fwd = work.attention_fwd;
  core.tp_hide = tp_hide_times(m, work.linear_fwd);

  // Message sizes. TP: the microbatch's activations. CP: one K/V chunk (this rank's tokens, its
  // share of the KV heads). EP: each token's hidden vector to top_k experts, tokens split over tp.
  const double tokens = static_cast<double>(p.micro_batch) * s / cp;
  core.tp_bytes = tokens * h * bytes;
  core.tp_gather_bytes = j.fp8_tp_all_gather && j.dtype == Dtype::fp8 && p.sequence_parallel
                             ? tokens * h * dtype_bytes(Dtype::fp8)
                             : core.tp_bytes;
  // Recomputed layers run their forward collectives twice.
  const double again = recomputed_fraction(p, core.layers_per_stage);
  // torchtitan's op-level checkpointing saves reduce-scatter outputs but not all-gathers or
  // all-reduces: the recomputed matmuls gather their inputs again (two all-gathers, one
  // all-reduce's worth), or without sequence parallelism redo both forward all-reduces.
  const double op_again =
      p.recompute == Recompute::selective_op ? (p.sequence_parallel ? 1.0 : 2.0) : 0.0;
  core.tp_per_layer = 4 + 2 * again + op_again;
  core.tp_mlp_scale = tp_mlp_scale(m, p);
  core.cp_bytes = tokens * 2.0 * k.kv_dim / tp * bytes;
  core.ep_bytes = tokens / tp * static_cast<double>(m.spec.top_k) * h * bytes;
  core.ep_once_per_server = j.moe_dispatcher == MoeDispatcher::flex;
  core.experts = static_cast<double>(m.spec.experts);
  core.top_k = static_cast<double>(m.spec.top_k);
  core.ep_per_layer = 4 + 2 * again;
  core.cp_fwd_passes = 1 + again;
  core.cp_all_gather = j.cp_comm == CpComm::all_gather;
  // Scatter/gather (Megatron-LM): each TP rank sends its 1/tp slice across the stage boundary;
  // without sequence parallelism the receiver all-gathers the slices over its TP group.
  core.pp_bytes = tokens * h * bytes / tp;

  set_data_parallel(core, c, m, j, p, cal);

  // Memory, on the first stage (most microbatches in flight) and the last (logits), the worse.
  core.memory = stage_memory(m, j, p, cal, core.microbatches);
  core.fits = core.memory.total() <= c.gpu().memory_bytes * (1.0 - j.memory_headroom);
  core.model_flops =
      static_cast<double>(j.global_batch) * s * model_flops_per_token(k, m.spec.layers, s);
  return core;
}

PlanShapes plan_shapes(const Cluster& c, const Mapping& map) {
  PlanShapes sh;
  for (Dim d : kDefaultOrder) sh.dims[d] = dimension_shape(c, map, d);
  sh.grad = combine_shapes(sh.dims[Dim::dp], sh.dims[Dim::cp]);
  sh.expert_grad = map.degree(Dim::ep) > 1 ? expert_dp_shape(c, map) : sh.grad;
  return sh;
}

namespace {

/// One microbatch on one stage: compute and the exposed communication of its layers.
struct StageTime {
  double matmul = 0, elementwise = 0;
  CommTime tp, cp;
  EpTime ep;
  [[nodiscard]] double total() const {
    return matmul + elementwise + tp.exposed + cp.exposed + ep.comm.exposed;
  }
};
StageTime stage_time(const PlanCore& core, const PlanShapes& sh, const Fabric& fab,
                     const JobSpec& j, const Plan& p, const Calibration& cal) {
  StageTime t;
  t.matmul = core.t_matmul;
  t.elementwise = core.t_elementwise;
  t.tp = tp_time(core, sh.dims[Dim::tp], fab, p.sequence_parallel, j.tp_comm_overlap, cal);
  t.cp = cp_time(core, sh.dims[Dim::cp], fab);
  t.ep = ep_time(core, sh.dims[Dim::ep], fab, j.ep_comm_overlap, t.matmul + t.elementwise);
  return t;
}

/// The step's time, tokens/s, model FLOP/s per GPU and MFU (16-bit and format peak).
void set_throughput(Evaluation& e, double model_flops, const Cluster& c, const JobSpec& j,
                    const Plan& p) {
  e.step_time = e.time.total();
  const double step_tokens = static_cast<double>(j.global_batch) * static_cast<double>(j.seq_len);
  e.tokens_per_s = step_tokens / e.step_time;
  e.model_flops_per_gpu = model_flops / e.step_time / static_cast<double>(p.world());
  e.mfu = e.model_flops_per_gpu / c.gpu().peak_flops;
  e.mfu_format_peak = e.model_flops_per_gpu / format_peak_flops(c.gpu(), j.dtype);
}

}  // namespace

Evaluation finish(const PlanCore& core, const PlanShapes& sh, const Fabric& fab, const Cluster& c,
                  const JobSpec& j, const Plan& p, const Calibration& cal) {
  Evaluation e;
  const int mbs = core.microbatches;
  e.microbatches = mbs;
  e.shapes = sh.dims;
  e.expert_dp_shape = sh.expert_grad;
  // Per microbatch on the slowest stage: its compute and each dimension's communication
  // (cost_dims.hpp); with an uneven split, the rival stage's if that takes longer.
  StageTime stage = stage_time(core, sh, fab, j, p, cal);
  if (core.other_layers > 0 && !j.ep_comm_overlap) {
    // Every collective's time is in proportion to the layers then: scale, do not recost.
    const double r = core.other_layers / core.layers_per_stage;
    const double comm = stage.total() - stage.matmul - stage.elementwise;
    if (core.other_matmul + core.other_elementwise + r * comm > stage.total()) {
      stage.matmul = core.other_matmul;
      stage.elementwise = core.other_elementwise;
      for (CommTime* t : {&stage.tp, &stage.cp, &stage.ep.comm}) {
        t->total *= r;
        t->exposed *= r;
      }
      for (double& tier : stage.ep.per_tier) tier *= r;
    }
  } else if (core.other_layers > 0) {  // overlapped EP hides behind the stage's own compute
    PlanCore other = core;
    other.layers_per_stage = core.other_layers;
    other.moe_layers_per_stage =
        core.moe_layers_per_stage * core.other_layers / core.layers_per_stage;
    other.t_matmul = core.other_matmul;
    other.t_elementwise = core.other_elementwise;
    const StageTime rival = stage_time(other, sh, fab, j, p, cal);
    if (rival.total() > stage.total()) stage = rival;
  }
  const double t_compute = stage.matmul + stage.elementwise;
  const CommTime& tp = stage.tp;
  const CommTime& cp = stage.cp;
  const EpTime& ep = stage.ep;
  const CommTime hop =
      pp_hop_time(core, sh.dims[Dim::pp], sh.dims[Dim::tp], fab, p.sequence_parallel);
  const double gpu_work = t_compute + tp.exposed + cp.exposed + ep.comm.exposed;
  const double host_wait = moe_host_wait(core, j, cal, gpu_work);
  const PipelineTime pipe =
      pipeline_time(gpu_work + host_wait, hop.total, p[Dim::pp], p.vpp, mbs, j.overlap_p2p);
  // Per step.
  const CommTime dp =
      dp_time(core, sh, fab, p.zero, t_compute, j.overlap_grad_reduce, j.overlap_param_gather);

  e.algorithms[Dim::tp] = tp.algorithm;
  e.algorithms[Dim::cp] = cp.algorithm;
  e.algorithms[Dim::ep] = ep.comm.algorithm;
  e.algorithms[Dim::pp] = hop.algorithm;
  e.algorithms[Dim::dp] = dp.algorithm;
  e.protocols[Dim::tp] = tp.protocol;
  e.protocols[Dim::dp] = dp.protocol;
  for (int k = 0; k < Cluster::kMaxTiers; ++k) e.ep_per_tier[k] = mbs * ep.per_tier[k];
  e.compute.matmul = mbs * stage.matmul;
  e.compute.elementwise = mbs * stage.elementwise;
  e.time.compute = mbs * t_compute;
  e.time.tp = mbs * tp.exposed;
  e.time.cp = mbs * cp.exposed;
  e.time.ep = mbs * ep.comm.exposed;
  e.time.bubble = pipe.bubble;
  e.time.pp = pipe.exposed;
  e.time.dp = dp.exposed;
  e.time.optimizer = core.optimizer_time;
  e.time.offload = mbs * core.offload_exposed;
  e.time.host = cal.step_overhead;
  e.time.moe_host = mbs * host_wait;
  e.comm[Dim::tp] = mbs * tp.total;
  e.comm[Dim::cp] = mbs * cp.total;
  e.comm[Dim::ep] = mbs * ep.comm.total;
  e.comm[Dim::pp] = pipe.total;
  e.comm[Dim::dp] = dp.total;
  e.memory = core.memory;
  e.fits = core.fits;
  set_throughput(e, core.model_flops, c, j, p);
  return e;
}

Evaluation evaluate(const Cluster& c, const Model& m, const JobSpec& j, const Plan& p,
                    const Mapping& map, const Calibration& cal) {
  if (!c.mixed())
    return finish(prepare(c, m, j, p, cal), plan_shapes(c, map), make_fabric(c, cal), c, j, p, cal);
  // GPUs of several types: each pipeline stage computes at its slowest GPU's speed.
  PlanCore core = prepare(c, m, j, p, cal);
  apply_stage_speeds(core, m, j, p, cal, stage_gpus(c, p, map));
  Evaluation e = finish(core, plan_shapes(c, map), make_fabric(c, cal), c, j, p, cal);
  e.mfu = e.model_flops_per_gpu / mean_peak_flops(c, p, map, Dtype::bf16);
  e.mfu_format_peak = e.model_flops_per_gpu / mean_peak_flops(c, p, map, j.dtype);
  return e;
}

}  // namespace topoplan
