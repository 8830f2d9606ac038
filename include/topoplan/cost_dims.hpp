#pragma once
/// The training cost model, one dimension at a time: each function is pure and costs one kind of
/// communication (or the pipeline schedule) from the plan's order-independent core (PlanCore) and
/// the shapes its groups take on the fabric. `finish` adds them up; tests check each by hand.
#include <array>

#include "topoplan/collectives.hpp"
#include "topoplan/plan.hpp"

namespace topoplan {

struct PlanCore;
struct PlanShapes;
struct Calibration;
struct MemoryBreakdown;
struct Model;
struct JobSpec;
struct GpuSpec;

/// Compute for one microbatch on a stage of `layers` layers plus the logits, seconds: matrix
/// multiplies at the calibrated efficiency (lower for small per-GPU matrices), element-wise
/// kernels at the achieved HBM bandwidth; forward once, backward twice, recomputation added.
struct StageCompute {
  double matmul = 0;
  double elementwise = 0;
  double attention_fwd = 0;  ///< one layer's attention core, forward (what CP hides behind)
  double linear_fwd = 0;     ///< one layer's linear layers, forward (what TP overlap hides behind)
  /// The head's share of matmul and elementwise: the logits and any multi-token-prediction
  /// modules (every stage_compute includes the head).
  double head_matmul = 0, head_elementwise = 0;
  /// The same stage without the head: any stage but the last.
  [[nodiscard]] StageCompute without_head() const {
    StageCompute out = *this;
    out.matmul -= head_matmul;
    out.elementwise -= head_elementwise;
    out.head_matmul = out.head_elementwise = 0;
    return out;
  }
};
/// Of `layers` transformer layers, how many are MoE layers (in the model's proportion).
[[nodiscard]] double moe_layers_in(const Model& m, double layers);
/// PlanCore::tp_mlp_scale: the MLP's TP collectives relative to a dense MLP's, averaged over the
/// layers (MoE layers: top_k x expert-TP / tp for the routed experts, +1 for a shared expert).
[[nodiscard]] double tp_mlp_scale(const Model& m, const Plan& p);
/// A layer's forward matmul seconds split by the TP collective each overlaps with (QKV,
/// attention output, MLP input, MLP output), in proportion to their FLOPs.
[[nodiscard]] std::array<double, 4> tp_hide_times(const Model& m, double linear_fwd_s);
[[nodiscard]] StageCompute stage_compute(const Model& m, const JobSpec& j, const Plan& p,
                                         const Calibration& cal, const GpuSpec& gpu, double layers);

/// Seconds one dimension communicates: in total, and exposed on the critical path.
struct CommTime {
  double total = 0;
  double exposed = 0;
  Algorithm algorithm = Algorithm::none;
  Protocol protocol = Protocol::none;  ///< NCCL's protocol, for ring and tree
};

/// Fraction of a microbatch's compute that is the backward pass (backward = 2 x forward), the
/// window gradient reduction can hide in.
inline constexpr double kBackwardFraction = 2.0 / 3.0;

/// TP, per microbatch on the slowest stage: tp_per_layer collectives per layer (2 forward, 2
/// backward, 2 more for a recomputed forward); with sequence parallelism each all-reduce is an
/// all-gather plus a reduce-scatter of the same volume; with TP overlap only a calibrated
/// fraction stays exposed.
[[nodiscard]] CommTime tp_time(const PlanCore& core, const GroupShape& tp, const Fabric& fab,
                               bool sequence_parallel, bool overlap, const Calibration& cal);

/// CP (ring attention), per microbatch: per layer, cp - 1 ring steps pass K/V chunks forward and
/// K/V plus their gradients backward (twice the bytes); each direction hides behind the
/// attention core that uses it (forward: once, backward: twice its forward time); recomputed
/// layers pass K/V forward twice (core.cp_fwd_passes).
[[nodiscard]] CommTime cp_time(const PlanCore& core, const GroupShape& cp, const Fabric& fab);

/// EP, per microbatch: per MoE layer an all-to-all dispatch and combine forward, the same
/// backward (and again for a recomputed forward), exposed unless overlapped (below). `per_tier` is
/// the transfer time by tier (the slowest tier sets the collective's time).
struct EpTime {
  CommTime comm;
  std::array<double, Cluster::kMaxTiers> per_tier{};
};
/// Of the token copies an MoE dispatch sends to other servers, the share a dispatcher that sends
/// each token once to every other server holding one of its experts sends (JobSpec::
/// moe_dispatcher flex): `servers` x P(a given server holds one of the token's top_k of
/// `experts`, drawn without repeats) / top_k, at most 1.
[[nodiscard]] double dispatch_server_share(double experts, double top_k, double servers);
/// With `overlap` the all-to-all of one microbatch runs under the compute (`hide`, seconds) of
/// another: only what exceeds it is exposed.
[[nodiscard]] EpTime ep_time(const PlanCore& core, const GroupShape& ep, const Fabric& fab,
                             bool overlap = false, double hide = 0);

/// One pipeline hop: a microbatch's activations across a stage boundary, each TP rank sending
/// its 1/tp slice (scatter/gather); without sequence parallelism the receiver all-gathers them.
[[nodiscard]] CommTime pp_hop_time(const PlanCore& core, const GroupShape& pp, const GroupShape& tp,
                                   const Fabric& fab, bool sequence_parallel);

/// The 1F1B schedule (interleaved over vpp model chunks), per step.
struct PipelineTime {
  double per_microbatch = 0;  ///< a microbatch's time including the sends it waits for
  double bubble = 0;          ///< (pp - 1) / vpp microbatch times of fill and drain
  double exposed = 0;         ///< pipeline sends on the critical path
  double total = 0;           ///< all pipeline sends of the step
};
/// `work` is one microbatch's compute and exposed TP/CP/EP time. With overlapped sends only the
/// fill and the drain wait for them (pp x vpp - 1 each); otherwise every microbatch waits for
/// its 2 x vpp sends.
[[nodiscard]] PipelineTime pipeline_time(double work, double hop, int pp, int vpp, int microbatches,
                                         bool overlap_p2p);

/// DP and ZeRO, per step: gradient reduction (all-reduce for ZeRO-0, reduce-scatter otherwise),
/// in buckets of PlanCore::dp_bucket_params, each paying the latency terms; dense gradients over
/// dp x cp, expert gradients over expert-dp. Overlapped with the backward pass
/// (kBackwardFraction of `compute`, one microbatch) unless `overlap` is off; the last bucket (the
/// embedding's own where it is larger, PlanCore::embedding_bucket_params) is always exposed.
///   ZeRO-0/1: one reduction per step during the last microbatch's backward (ZeRO-1 then
///             all-gathers the updated parameters: exposed, or with `overlap_gather`
///             (Megatron's --overlap-param-gather) behind the next step's first forward pass,
///             bucket by bucket, the first bucket always exposed).
///             With an interleaved schedule (core.vpp > 1) each model chunk reduces once its last
///             backward is done and gathers just before its first forward (Megatron-core's
///             per-chunk grad_sync_func / param_sync_func): a chunk's share hides behind the
///             min(m, pp) chunk passes between two chunks; the last chunk's reduction shows.
///   ZeRO-2:   every microbatch reduce-scatters its own gradients; then the parameter gather.
///   ZeRO-3:   every microbatch also all-gathers the parameters forward and backward, a layer at
///             a time; all three hide behind that microbatch's compute where they fit.
[[nodiscard]] CommTime dp_time(const PlanCore& core, const PlanShapes& shapes, const Fabric& fab,
                               int zero, double compute, bool overlap, bool overlap_gather = false);

}  // namespace topoplan
