#pragma once
/// A plan read from somewhere other than flags: a topoplan plan JSON, a rank file, or Megatron-LM
/// arguments. Fields a source does not carry stay unset.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "topoplan/job.hpp"
#include "topoplan/plan.hpp"

namespace topoplan {

/// A serving plan's workload, as a topoplan.inference/v1 object writes it ("workload"). Fields
/// the file leaves out stay unset; a flag given wins over each.
struct ImportedWorkload {
  std::optional<std::int64_t> prompt_len, output_len, batch;
  std::optional<Dtype> weight_dtype, kv_dtype;
  std::optional<std::string> runtime;  ///< a runtime name, checked when read
};

struct ImportedPlan {
  Plan plan;
  bool dp_given = true;           ///< false: dp = GPUs / (tp x cp x pp), from the cluster
  std::vector<int> node_of_rank;  ///< rank file only: explicit placement
  std::vector<int> gpu_of_rank;
  std::optional<std::string> cluster, model;  ///< as named when the plan was made
  /// The whole cluster / model as JSON text, when the plan carries them (not presets), and where
  /// they were read from, for errors ("p.json: plans[0].cluster_spec").
  std::optional<std::string> cluster_spec, model_spec;
  std::string cluster_spec_source, model_spec_source;
  std::optional<int> nodes;
  std::optional<std::int64_t> seq_len, global_batch, dp_bucket_params;
  std::optional<Dtype> dtype;
  std::optional<MoeDispatcher> moe_dispatcher;
  std::optional<unsigned> recompute_modules;  ///< RecomputeModule bits
  std::optional<CpComm> cp_comm;              ///< context parallelism's K/V exchange
  /// Multi-token-prediction modules trained: a plan file's job, or --megatron-args'
  /// --mtp-num-layers (0 when left out: Megatron-LM then trains none).
  std::optional<int> mtp_layers;
  /// Megatron's --recompute-modules names core_attn: with --recompute-granularity selective, the
  /// attention core is recomputed (Recompute::selective); without it, only the modules are.
  bool recompute_core_attn = true;
  std::optional<bool> flash_attention, tp_comm_overlap, ep_comm_overlap, grad_reduce_bf16,
      grad_accumulation_pass, fa2_attention, fp8_tp_all_gather, eager, overlap_grad_reduce,
      overlap_param_gather, overlap_p2p, fp8_param_gather, fp4_param_gather, cuda_graphs,
      fp8_attention;
  std::optional<int> layers_per_virtual_stage;  ///< Megatron's way to give vpp (needs the model)
  /// Model-shape arguments a source states (Megatron-LM: --num-layers 80, ...): flag -> value.
  /// They must agree with the model being planned.
  std::vector<std::pair<std::string, std::int64_t>> model_shape;
  std::optional<std::int64_t> first_stage_layers, last_stage_layers;  ///< uneven pipeline split
  /// --pipeline-model-parallel-layout: decoder layers per virtual stage, in Megatron's order
  /// (virtual stage c x pp + i is chunk c of pipeline rank i).
  std::vector<std::int64_t> layout;
  bool recompute_block = false;                  ///< Megatron --recompute-method block
  std::optional<int> recompute_num_layers;       ///< per model chunk
  bool cpu_offloading = false;                   ///< Megatron --cpu-offloading
  std::optional<int> cpu_offloading_num_layers;  ///< --cpu-offloading-num-layers
  std::optional<std::string> cluster_fingerprint, model_fingerprint, job_fingerprint;
  /// Set when the file is a serving plan (topoplan.inference/v1, or the first plan of a
  /// topoplan.inference-search/v1 report): read with --inference only.
  std::optional<ImportedWorkload> serving;
};

}  // namespace topoplan
