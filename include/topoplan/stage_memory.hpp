#pragma once
/// Memory per GPU of a training plan on its most loaded pipeline stage, and the counts it shares
/// with the compute model: the parameters a stage's GPU holds, the layers full recomputation
/// recomputes, the activations a layer keeps.
#include <algorithm>

#include "topoplan/plan.hpp"

namespace topoplan {

struct Model;
struct JobSpec;
struct Calibration;
struct MemoryBreakdown;

/// Of a stage's `layers`, how many full recomputation recomputes (all, or --recompute-layers).
[[nodiscard]] double recomputed_layers(const Plan& p, double layers);
/// The fraction of a stage's layers whose forward runs twice.
[[nodiscard]] double recomputed_fraction(const Plan& p, double layers);
/// Bytes per parameter of the gradients data parallelism reduces.
[[nodiscard]] double gradient_bytes(const JobSpec& j, const Calibration& cal);

/// One layer's parameters held by one GPU: the dense ones split over tp, the routed experts over
/// ep x expert TP.
struct LayerShare {
  double dense = 0, expert = 0;
};
[[nodiscard]] LayerShare layer_share(const Model& m, const Plan& p);

/// Parameters held by one GPU of the first, the last and a middle pipeline stage.
struct StageParams {
  double first = 0;
  double last = 0;
  double middle = 0;  ///< a middle stage (uneven splits give it more layers than first or last)
  [[nodiscard]] double max() const { return std::max({first, last, middle}); }
};
/// Per stage, with the embedding on the first and the output head on the last; the most loaded
/// stage's routed-expert parameters (sharded over ep x expert TP instead of tp) into
/// `experts_per_gpu` when given.
[[nodiscard]] StageParams stage_params(const Model& m, const Plan& p,
                                       double* experts_per_gpu = nullptr);
/// The most loaded stage (StageParams::max()), per GPU: all its parameters, those in its
/// transformer layers (dense and routed experts; the rest is the embedding or the output head),
/// and whether it is the first stage, the one holding the word embedding (always at pp 1).
struct LoadedStage {
  double params = 0;
  double layer_params = 0;
  bool holds_embedding = false;
};
[[nodiscard]] LoadedStage most_loaded_stage(const Model& m, const Plan& p,
                                            double* experts_per_gpu = nullptr);

/// Activation bytes of one layer for one microbatch (Korthikanti et al. 2022, eq. 2: 34 sbh/t
/// with sequence parallelism, 5 a s^2 b/t more without fused attention), generalised by counting
/// the stored tensors: GQA (K and V of kv_dim), gated MLPs (both FC1 halves and the FC2 input),
/// no dropout masks when the model has no dropout (8 sbh instead of 10 replicated). fp8
/// training (Transformer Engine) keeps the FP8 copy of each linear layer's input for the
/// backward: the QKV, FC1 and FC2 inputs take 1 byte instead of 2, the projection's adds one;
/// nvfp4 and mxfp8 training the same with NVFP4's 0.5625 bytes and MXFP8's 1.03125 (their
/// k*BytesPerElement).
[[nodiscard]] double layer_activation_bytes(const Model& m, const JobSpec& j, const Plan& p,
                                            Recompute r);

/// Memory per GPU on the most loaded pipeline stage (the first keeps the most microbatches in
/// flight, the last holds the logits): weights, gradients and Adam state (sharded by ZeRO over
/// the data-parallel replicas), activations (Korthikanti et al. 2022, by recomputation), the
/// logits buffer and the reserved runtime memory.
[[nodiscard]] MemoryBreakdown stage_memory(const Model& m, const JobSpec& j, const Plan& p,
                                           const Calibration& cal, int microbatches);

}  // namespace topoplan
