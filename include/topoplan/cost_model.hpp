#pragma once
/// The cost of one plan: a pure function (cluster, model, job, plan, mapping) -> Evaluation whose
/// time parts add up to the step time, with memory per GPU.
#include <array>
#include <string>

#include "topoplan/calibration.hpp"
#include "topoplan/collectives.hpp"
#include "topoplan/job.hpp"
#include "topoplan/mapping.hpp"
#include "topoplan/model.hpp"
#include "topoplan/plan.hpp"
#include "topoplan/plan_check.hpp"
#include "topoplan/topology.hpp"

namespace topoplan {

/// Seconds per optimizer step on the critical path; they add up to the step time.
struct TimeBreakdown {
  double compute = 0;  ///< microbatches x compute of the slowest stage
  double tp = 0;       ///< exposed tensor-parallel collectives
  double cp = 0;  ///< exposed context-parallel K/V exchange (beyond the attention it hides behind)
  double ep = 0;  ///< exposed expert-parallel all-to-alls (dispatch and combine)
  double pp = 0;  ///< exposed pipeline sends (fill and drain; the steady state hides them)
  double bubble = 0;     ///< pipeline fill and drain: (pp-1)/vpp x one microbatch's time
  double dp = 0;         ///< exposed data-parallel gradient reduction and parameter gather
  double optimizer = 0;  ///< the optimizer step (HBM-bound)
  /// Activation offloading's copies to and from host memory beyond the layer compute they
  /// overlap with (Plan::offload_layers).
  double offload = 0;
  double host = 0;  ///< per-step host work outside the schedule (Calibration::step_overhead)
  /// MoE layers launched eagerly: the time a microbatch waits on its host beyond the stage's
  /// GPU work (Calibration::moe_layer_host), microbatches x that.
  double moe_host = 0;
  [[nodiscard]] double total() const {
    return compute + tp + cp + ep + pp + bubble + dp + optimizer + offload + host + moe_host;
  }
};

/// How the compute time divides: matrix multiplies (at the calibrated efficiency) and
/// element-wise kernels (HBM-bound); recomputation is included in both.
struct ComputeSplit {
  double matmul = 0;
  double elementwise = 0;
};

/// Bytes per GPU on the most loaded pipeline stage.
struct MemoryBreakdown {
  double weights = 0;
  double gradients = 0;
  double optimizer = 0;
  double activations = 0;
  double other = 0;  ///< logits buffer and the reserved runtime memory
  [[nodiscard]] double total() const {
    return weights + gradients + optimizer + activations + other;
  }
};

/// Hardware FLOPs per token (forward, backward, and the recomputation the job asks for).
[[nodiscard]] double hardware_flops_per_token(const Model& m, double seq_len, Recompute r);

struct Evaluation {
  bool fits = false;     ///< memory fits the GPU
  double step_time = 0;  ///< seconds
  double tokens_per_s = 0;
  double model_flops_per_gpu = 0;  ///< model FLOP/s per GPU (no recomputation counted)
  double mfu = 0;                  ///< model_flops_per_gpu / dense (16-bit) peak
  /// model_flops_per_gpu / the dense peak of the training's format (format_peak_flops): MFU
  /// against the FP8 peak for fp8 and mxfp8, the FP4 peak for nvfp4; mfu for 16-bit training.
  double mfu_format_peak = 0;
  int microbatches = 0;  ///< per pipeline per step
  TimeBreakdown time;
  ComputeSplit compute;
  DimArray<double> comm{};  ///< seconds per step each dimension communicates, hidden or not
  MemoryBreakdown memory;
  DimArray<GroupShape> shapes{};     ///< worst group shape per dimension
  DimArray<Algorithm> algorithms{};  ///< collective chosen per dimension
  DimArray<Protocol> protocols{{Protocol::none, Protocol::none, Protocol::none, Protocol::none,
                                Protocol::none}};  ///< its NCCL protocol, for ring and tree
  GroupShape expert_dp_shape;                      ///< expert gradients' group (MoE)
  /// EP all-to-all seconds per step by tier (transfer only; the slowest tier sets the time).
  std::array<double, Cluster::kMaxTiers> ep_per_tier{};
};

/// Seconds per step a dimension's communication is exposed / spends in total (0 if not modelled).
[[nodiscard]] double exposed_comm(const Evaluation& e, Dim d);
[[nodiscard]] double total_comm(const Evaluation& e, Dim d);

/// Scores a plan that passed check_plan. Pure; allocates nothing for order-based mappings.
[[nodiscard]] Evaluation evaluate(const Cluster& c, const Model& m, const JobSpec& j, const Plan& p,
                                  const Mapping& map, const Calibration& cal);

/// Everything about a plan that the order string does not change: compute, memory and the
/// message sizes. The search computes it once and then costs each order's communication.
struct PlanCore {
  int microbatches = 0;
  /// Pipeline stages and model chunks per stage (vpp): an interleaved schedule reduces and
  /// gathers each chunk's parameters on its own (dp_time).
  int pp = 1, vpp = 1;
  double layers_per_stage = 0;  ///< layers of the stage whose compute is longest
  double moe_layers_per_stage = 0;
  double t_matmul = 0, t_elementwise = 0;  ///< one microbatch, slowest stage
  /// With an uneven split, the other stage that can be the slowest once its layers'
  /// communication counts: the stage with the most layers when the last (fewer layers and the
  /// logits) computes longest. Its layers (0: none) and one microbatch's compute.
  double other_layers = 0;
  double other_matmul = 0, other_elementwise = 0;
  double t_attention_fwd = 0;  ///< one microbatch's attention core per layer (CP hides behind it)
  double tp_bytes = 0;         ///< one TP collective's buffer
  double tp_gather_bytes = 0;  ///< a forward all-gather's buffer (half of tp_bytes in FP8)
  /// One layer's forward matmul seconds that each TP collective can overlap with: QKV,
  /// attention output, MLP input, MLP output.
  std::array<double, 4> tp_hide{};
  double tp_per_layer = 0;  ///< 4; 6 forward recomputed (partial: averaged); 5 op-level
  /// The MLP's two TP collectives per layer, relative to a dense MLP's, averaged over the stage's
  /// layers: 1 for dense layers; an MoE layer gathers and scatters its received token copies
  /// over expert TP (top_k times a dense MLP's tokens, none at expert TP 1) plus a dense MLP's
  /// for a shared expert.
  double tp_mlp_scale = 1;
  double cp_bytes = 0;  ///< one K/V chunk a CP rank passes on
  double ep_bytes = 0;  ///< one all-to-all's buffer per GPU
  double ep_per_layer = 0;
  /// The dispatcher sends a token once to each other server (JobSpec::moe_dispatcher flex), the
  /// model's routed experts and how many each token picks.
  bool ep_once_per_server = false;
  double experts = 0, top_k = 0;
  double cp_fwd_passes = 1;    ///< ring-attention forward passes per layer: 2 with recomputation
  bool cp_all_gather = false;  ///< K/V gathered, not passed round a ring (JobSpec::cp_comm)
  double pp_bytes = 0;
  double params_gpu = 0;            ///< parameters on one GPU
  double grad_bytes_per_param = 0;  ///< gradient reduce precision
  double dp_bucket_params = 0;      ///< parameters per DP bucket
  /// The word embedding's parameters on one GPU when the most loaded stage holds it: a bucket of
  /// its own (Megatron-core never splits a parameter across buckets), the last gradient the
  /// backward reduces and the first parameter the forward gathers; 0 on other stages.
  double embedding_bucket_params = 0;
  double dense_grad_bytes = 0, expert_grad_bytes = 0;    ///< per GPU
  double dense_param_bytes = 0, expert_param_bytes = 0;  ///< per GPU, for the ZeRO all-gathers
  double optimizer_time = 0;
  double offload_exposed = 0;  ///< one microbatch's offload copies not hidden by layer compute
  MemoryBreakdown memory;
  bool fits = false;
  double model_flops = 0;  ///< per step
};

/// Shapes of every group kind a plan communicates over.
struct PlanShapes {
  DimArray<GroupShape> dims{};
  GroupShape grad;         ///< dense gradients: dp x cp
  GroupShape expert_grad;  ///< expert gradients: expert-dp
};

[[nodiscard]] PlanCore prepare(const Cluster& c, const Model& m, const JobSpec& j, const Plan& p,
                               const Calibration& cal);
[[nodiscard]] PlanShapes plan_shapes(const Cluster& c, const Mapping& map);
/// The order-dependent part: communication over the shapes, then the totals.
[[nodiscard]] Evaluation finish(const PlanCore& core, const PlanShapes& shapes, const Fabric& fab,
                                const Cluster& c, const JobSpec& j, const Plan& p,
                                const Calibration& cal);

}  // namespace topoplan
