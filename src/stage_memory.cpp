#include "topoplan/stage_memory.hpp"

#include <algorithm>
#include <cstdint>

#include "topoplan/cost_model.hpp"
#include "topoplan/stage_balance.hpp"

namespace topoplan {

namespace {

/// Adam's state per parameter: fp32 master weights, first and second moments.
constexpr double kAdamStateBytesPerParam = 12.0;
/// The logits buffer, fp32, per vocabulary entry per token.
constexpr double kLogitsBytesPerEntry = 4.0;

}  // namespace

double recomputed_layers(const Plan& p, double layers) {
  if (p.recompute != Recompute::full) return 0;
  return p.recompute_layers > 0 ? std::min<double>(p.recompute_layers, layers) : layers;
}

double recomputed_fraction(const Plan& p, double layers) {
  return layers > 0 ? recomputed_layers(p, layers) / layers : 0.0;
}

double gradient_bytes(const JobSpec& j, const Calibration& cal) {
  if (j.dtype == Dtype::fp16) return cal.grad_reduce_bytes_fp16;
  return j.grad_reduce_bf16 ? 2.0 : cal.grad_reduce_bytes_bf16;
}

LayerShare layer_share(const Model& m, const Plan& p) {
  const auto& k = m.counts;
  return {static_cast<double>(k.layer_params - k.layer_expert_params) / p[Dim::tp],
          static_cast<double>(k.layer_expert_params) / (expert_tp_of(p) * p[Dim::ep])};
}

namespace {

/// Per GPU, the last stage's multi-token-prediction modules: all their parameters and, of them,
/// the routed experts (spread over ep x expert TP as the layers' are).
struct MtpShare {
  double params = 0, experts = 0;
};
MtpShare mtp_share(const Model& m, const Plan& p) {
  const auto& k = m.counts;
  const double experts = static_cast<double>(k.mtp_expert_params) / (expert_tp_of(p) * p[Dim::ep]);
  return {static_cast<double>(k.mtp_params) / p[Dim::tp] + experts, experts};
}

}  // namespace

StageParams stage_params(const Model& m, const Plan& p, double* experts_per_gpu) {
  const double t = p[Dim::tp];
  const int pp = p[Dim::pp];
  const StageLayers split = split_of(p, m.spec.layers);
  const auto& k = m.counts;
  const auto [dense_layer, expert_layer] = layer_share(m, p);
  const MtpShare mtp = mtp_share(m, p);
  const double first = static_cast<double>(split.first) * (dense_layer + expert_layer);
  const double last = static_cast<double>(split.last) * (dense_layer + expert_layer) + mtp.params;
  const double emb = static_cast<double>(k.embedding_params) / t;
  // Tied embeddings keep a copy of the word embedding on the last stage.
  const double head =
      static_cast<double>(k.head_params) / t +
      (m.spec.tied_embeddings && pp > 1 ? static_cast<double>(m.spec.vocab * m.spec.hidden) / t
                                        : 0.0);
  // The most loaded stage's experts (the ZeRO shards and expert gradients are sized by it).
  const double last_experts = static_cast<double>(split.last) * expert_layer + mtp.experts;
  if (experts_per_gpu)
    *experts_per_gpu = std::max(static_cast<double>(split.max()) * expert_layer, last_experts);
  if (pp == 1) {
    const double all = first + emb + head + mtp.params;
    return {all, all, 0};
  }
  const double middle =
      pp > 2 ? static_cast<double>(split.middle) * (dense_layer + expert_layer) : 0;
  return {first + emb, last + head, middle};
}

LoadedStage most_loaded_stage(const Model& m, const Plan& p, double* experts_per_gpu) {
  const StageParams params = stage_params(m, p, experts_per_gpu);
  const StageLayers split = split_of(p, m.spec.layers);
  const auto [dense_layer, expert_layer] = layer_share(m, p);
  LoadedStage out;
  out.params = params.max();
  out.holds_embedding = p[Dim::pp] == 1 || params.max() == params.first;
  const bool last = p[Dim::pp] == 1 || (!out.holds_embedding && params.max() == params.last);
  std::int64_t layers = split.first;
  if (!out.holds_embedding) layers = last ? split.last : split.middle;
  out.layer_params = static_cast<double>(layers) * (dense_layer + expert_layer);
  if (last) out.layer_params += mtp_share(m, p).params;  // the MTP modules' layers and projections
  return out;
}

double layer_activation_bytes(const Model& m, const JobSpec& j, const Plan& p, Recompute r) {
  const double t = p[Dim::tp];
  const double tokens = static_cast<double>(j.seq_len) * p.micro_batch / p[Dim::cp];
  const double h = static_cast<double>(m.spec.hidden);
  const auto& k = m.counts;
  const double sp_div = p.sequence_parallel ? t : 1.0;
  if (r == Recompute::full) return 2.0 * tokens * h / sp_div;
  if (r == Recompute::selective_op) {
    // The layer's input, Q, V, the attention output, FC1's first output (the gate) and, when
    // gated, the down projection's output; 2 bytes each (torchtitan keeps bf16 activations).
    const double saved = h / sp_div + (2.0 * k.q_dim + k.kv_dim + k.active_ffn) / t +
                         (m.spec.gated_mlp ? h / sp_div : 0.0);
    return 2.0 * tokens * saved;
  }
  // fp8, nvfp4 and mxfp8 training save the linear layers' quantized inputs (1 byte, NVFP4's 0.5625,
  // MXFP8's 1.03125).
  const bool low = low_precision_linear(j.dtype);
  const double q = low ? dtype_bytes(j.dtype) : 2.0;
  // Two norm inputs, the QKV and FC1 inputs (2 bytes each, q for the quantized ones), two masks.
  const double replicated = (4.0 + 2.0 * q + (m.spec.dropout ? 2.0 : 0.0)) * tokens * h / sp_div;
  // Q, K, V and the attention output (again quantized, as the projection's input); FC1's
  // output(s) and FC2's input.
  const double sharded = tokens *
                         ((low ? 4.0 + q : 4.0) * k.q_dim + 4 * k.kv_dim +
                          ((m.spec.gated_mlp ? 4 : 2) + q) * k.active_ffn) /
                         t;
  // Recomputed modules keep nothing of their outputs: the norms' (the QKV and MLP inputs), MLA's
  // up-projected Q, K and V (its latents kept instead), the MoE experts' SwiGLU output. Not with
  // full recomputation (Megatron's modules belong to selective granularity), also for the layers
  // a partial one keeps.
  double saved = 0;
  const unsigned modules = recomputed_modules(j, p);
  if (modules & kRecomputeLayernorm) saved += 2.0 * q * tokens * h / sp_div;
  if ((modules & kRecomputeMlaUpProj) && m.spec.mla()) {
    const auto& s = m.spec;
    const double latents =
        2.0 * static_cast<double>(s.q_lora_rank + s.kv_lora_rank + s.qk_rope_head_dim);
    saved += std::max(0.0, tokens * ((2.0 * k.q_dim + 4 * k.kv_dim) / t - latents));
  }
  if (modules & kRecomputeMoeAct) saved += q * tokens * moe_layers_in(m, 1.0) * k.moe_ffn / t;
  double scores = 0;
  if (r == Recompute::none && !j.flash_attention)
    scores = 5.0 * static_cast<double>(m.spec.heads) * static_cast<double>(j.seq_len) * tokens / t;
  return replicated + sharded + scores - saved;
}

MemoryBreakdown stage_memory(const Model& m, const JobSpec& j, const Plan& p,
                             const Calibration& cal, int microbatches) {
  const int pp = p[Dim::pp], v = p.vpp, tp = p[Dim::tp];
  const double bytes = activation_bytes(j);
  const double grad_bytes = gradient_bytes(j, cal);
  double experts_gpu = 0;
  const StageParams params = stage_params(m, p, &experts_gpu);
  const double params_gpu = params.max();
  const double dense_rep = static_cast<double>(p[Dim::dp]) * p[Dim::cp];
  const double expert_rep = expert_replicas(p);
  const StageLayers split = split_of(p, m.spec.layers);
  // 1F1B keeps min(pp - i, m) microbatches in flight on stage i; interleaving multiplies that by
  // 1 + (pp - 1) / (pp x vpp) (Korthikanti et al. 2022, section 4.2.3), up to all m of them (with
  // m <= pp the interleaved warm-up runs every chunk's forward first: m whole microbatches).
  auto in_flight = [&](int stage) {
    double n = pp > 1 ? std::min(pp - stage, microbatches) : 1;
    if (v > 1)
      n = std::min(n * (1.0 + (pp - 1.0) / (static_cast<double>(pp) * v)),
                   static_cast<double>(std::max(1, microbatches)));
    return n;
  };
  const double layer_act = layer_activation_bytes(m, j, p, p.recompute);
  const double kept_act = layer_activation_bytes(m, j, p, Recompute::none);
  // A stage's activations per microbatch: recomputed layers keep their input only.
  // Offloaded layers' activations live in host memory: each layer's copy completes while the
  // next layer computes, so none of them stays on the GPU at the end of the forward.
  auto stage_act = [&](std::int64_t layers) {
    const double n = static_cast<double>(layers), again = recomputed_layers(p, n);
    if (p.recompute == Recompute::full && again < n)
      return again * layer_act + (n - again) * kept_act;
    return layer_act * std::max(0.0, n - static_cast<double>(p.offload_layers));
  };
  // One layer's full activations while recomputing it.
  const double working =
      p.recompute == Recompute::full ? layer_activation_bytes(m, j, p, Recompute::selective) : 0.0;
  const double act_first = stage_act(split.first) * in_flight(0) + working;
  // The last stage: one microbatch in flight, its multi-token-prediction layers' activations
  // beside its own.
  const double act_last = stage_act(split.last) + m.counts.mtp_layers * layer_act + working;
  // The second stage: more layers than the first when the split is uneven, one fewer in flight.
  const double act_second = stage_act(split.middle) * in_flight(1) + working;
  auto sharded = [&](double per_param, int min_stage) {
    // Bytes per GPU of a per-parameter state that ZeRO shards from `min_stage` on.
    if (p.zero < min_stage) return per_param;
    return per_param * ((params_gpu - experts_gpu) / dense_rep + experts_gpu / expert_rep) /
           params_gpu;
  };
  auto fill = [&](double params_stage, double act, double logits) {
    MemoryBreakdown mem;
    mem.weights = params_stage * sharded(bytes, 3);
    mem.gradients = params_stage * sharded(grad_bytes, 2);
    mem.optimizer = params_stage * sharded(kAdamStateBytesPerParam, 1);
    mem.activations = act;
    mem.other = cal.reserved_bytes + logits;
    return mem;
  };
  const double tokens = static_cast<double>(j.seq_len) * p.micro_batch / p[Dim::cp];
  // The logits buffer, once more per multi-token-prediction module (each its own loss).
  const double logits_bytes = (1.0 + m.counts.mtp_layers) * tokens *
                              static_cast<double>(m.spec.vocab) / tp * kLogitsBytesPerEntry;
  MemoryBreakdown worst = fill(params.first, act_first, pp == 1 ? logits_bytes : 0.0);
  if (pp > 2) {
    const MemoryBreakdown second = fill(params.middle, act_second, 0.0);
    if (second.total() > worst.total()) worst = second;
  }
  const MemoryBreakdown last = fill(params.last, act_last, logits_bytes);
  return last.total() > worst.total() ? last : worst;
}

}  // namespace topoplan
