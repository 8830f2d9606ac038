#pragma once
/// Which plans can run at all: the divisibility and layout rules, each written once. check_plan
/// (training), check_inference_plan and the search's pre-filter call the same rule functions.
#include <cstdint>
#include <string>

#include "topoplan/job.hpp"
#include "topoplan/model.hpp"
#include "topoplan/plan.hpp"
#include "topoplan/topology.hpp"

namespace topoplan {

/// Why a plan cannot be run at all. Checked before costing.
enum class PlanError : unsigned char {
  none,
  world_mismatch,    ///< the degrees' product is not the GPU count
  tp_heads,          ///< TP does not divide the attention heads
  tp_kv_heads,       ///< TP does not divide the key/value heads
  tp_ffn,            ///< TP does not divide the MLP size
  pp_layers,         ///< PP x VPP does not fit the layers (more stages than layers, or
                     ///< interleaving with layers not divisible by pp x vpp)
  vpp_microbatches,  ///< interleaving needs the microbatches to be a multiple of pp
  batch,             ///< DP x micro-batch does not divide the global batch
  unsupported_dim,   ///< a dimension this path does not model (EP for inference)
  zero_stage,        ///< ZeRO stage outside 0-3
  cp_seq,            ///< 2 x CP does not divide the sequence (load-balanced causal chunks)
  ep_dense,          ///< EP > 1 on a model without experts
  ep_experts,        ///< EP does not divide the experts
  ep_dp,             ///< EP x expert TP does not divide tp x cp x dp (expert layers re-divide
                     ///< those ranks)
  ep_order,          ///< expert and dense layers would get different pipeline groups
  gpus,              ///< more GPUs than the cluster has
  placement,         ///< GPUs are down: the TP groups do not fit whole on the usable GPUs
  offload,           ///< activation offloading with pp > 1 or recomputation, of every layer, or
                     ///< on a GPU without a host link (Megatron-core's rules)
  expert_tp,         ///< expert TP not a divisor of tp, or set on a model without experts
  recompute_layers,  ///< partial recomputation (block method) not the same count in each of the
                     ///< vpp model chunks: Plan::recompute_layers not a multiple of vpp
};

[[nodiscard]] PlanError check_plan(const Cluster& c, const Model& m, const JobSpec& j,
                                   const Plan& p);

/// TP must divide the attention heads, the key/value heads (inference may instead replicate
/// them: `kv_replication`, tp a multiple of the KV heads) and the MLP sizes.
[[nodiscard]] PlanError tp_rule(const ModelSpec& m, int tp, bool kv_replication = false);
/// Load-balanced causal CP splits the sequence into 2 x cp chunks.
[[nodiscard]] PlanError cp_rule(std::int64_t seq_len, int cp);
/// Activation offloading (Plan::offload_layers > 0) as Megatron-core allows it: pp 1, no
/// recomputation, fewer than all layers; and a GPU with a host link to copy over.
[[nodiscard]] PlanError offload_rule(const Cluster& c, const Model& m, const Plan& p);
/// EP needs experts, must divide them, and must divide the ranks expert layers re-divide
/// (`ep_ranks`: tp x cp x dp / expert TP for training, dp x cp at the default expert TP; the
/// replicas for inference).
[[nodiscard]] PlanError ep_rule(const ModelSpec& m, int ep, std::int64_t ep_ranks);
/// Plan::expert_tp, when set apart from tp: a divisor of tp, on a model with experts.
[[nodiscard]] PlanError expert_tp_rule(const ModelSpec& m, const Plan& p);
/// A one-line explanation: the plan fields at fault ("tp: ...", "tp/pp/dp: ...", "micro_batch:
/// ...") and the numbers. The CLI shows the fields as its flags.
[[nodiscard]] std::string describe(PlanError e, const Cluster& c, const Model& m, const JobSpec& j,
                                   const Plan& p);
/// A short key for counting rejections ("tp does not divide heads").
[[nodiscard]] const char* short_reason(PlanError e);

}  // namespace topoplan
