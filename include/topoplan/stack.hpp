#pragma once
/// Software stacks: how a training framework runs the same plan (fused attention, which
/// communication it overlaps, its optimizer sharding, sequence parallelism). `--stack NAME` sets
/// these the way that stack does; explicit flags override.
#include <optional>
#include <span>
#include <string>

namespace topoplan {

struct SoftwareStack {
  const char* name;
  bool flash_attention;       ///< fused attention: no s^2 scores stored or streamed
  bool fa2_attention;         ///< attention kernels of the FlashAttention-2 class (PyTorch SDPA)
  bool tp_comm_overlap;       ///< TP collectives overlapped with matmuls
  bool fp8_tp_all_gather;     ///< fp8 training gathers FP8 TP inputs (JobSpec::fp8_tp_all_gather)
  bool overlap_grad_reduce;   ///< DP reduction during the backward pass
  bool overlap_param_gather;  ///< ZeRO-1/2 parameter all-gather during the next forward pass
  bool overlap_p2p;           ///< PP sends overlapped in the steady state
  int zero;  ///< optimizer/gradient/weight sharding the stack uses (ZeRO stage); -1: searched
  std::optional<bool> sequence_parallel;  ///< with TP > 1; nullopt: searched
  /// Interleaved stages whose layers are not a multiple of vpp (Megatron-core's
  /// --pipeline-model-parallel-layout).
  bool flexible_pipeline_layout;
  /// Activation offloading to host memory (Transformer Engine's CPU offload, which Megatron-core
  /// and NeMo expose): the search may offload layers instead of recomputing them.
  bool activation_offload;
  /// Megatron-core's --recompute-modules (layernorm, moe_act, mla_up_proj): the search may
  /// recompute them where a plan fits only that way.
  bool recompute_modules;
};

/// The stacks, in the order the README lists them; the first is the default.
[[nodiscard]] std::span<const SoftwareStack> software_stacks();
/// InputError naming `what` for an unknown name.
[[nodiscard]] const SoftwareStack& find_stack(const std::string& name, const std::string& what);

}  // namespace topoplan
