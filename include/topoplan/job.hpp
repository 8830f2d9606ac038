#pragma once
/// What is being trained: sequence length, batch and precision. The memory-saving choices
/// (ZeRO, recomputation, sequence parallelism) belong to the Plan: the search chooses them.
#include <cstdint>
#include <string>

#include "topoplan/plan.hpp"

namespace topoplan {

struct ModelSpec;

/// Number formats. Training: bf16, fp16, fp8, which runs the linear layers' matrix multiplies
/// in FP8 (Transformer Engine's recipe) and keeps bf16 for everything else (activations, attention,
/// the logits, TP traffic, gradients), or nvfp4, the same with the linear layers' multiplies in
/// NVFP4 (4-bit E2M1 values, one E4M3 scale per 16; Transformer Engine's NVFP4BlockScaling recipe:
/// forward, data and weight gradients), or mxfp8, the FP8 multiplies with a shared power-of-two
/// scale per 32 elements instead of one per tensor (OCP Microscaling MXFP8 E4M3; Transformer
/// Engine's MXFP8BlockScaling, Blackwell's block-scaled tensor cores at the FP8 rate).
/// Inference: the format of the weights and the KV cache.
enum class Dtype { bf16, fp16, fp8, nvfp4, mxfp8 };
/// An MoE layer's token dispatcher (JobSpec::moe_dispatcher).
enum class MoeDispatcher { alltoall, flex };
/// How context parallelism exchanges keys and values (Megatron-core --cp-comm-type, Transformer
/// Engine's cp_comm_type): p2p, a ring of sends overlapped with attention; all_gather, the whole
/// sequence's K/V gathered before attention and the gradients reduce-scattered after it, neither
/// overlapped (JobSpec::cp_comm).
enum class CpComm { p2p, all_gather };
/// Modules whose outputs the backward pass recomputes instead of keeping (Megatron-core's
/// --recompute-granularity selective --recompute-modules; core_attn is Recompute::selective),
/// bits of JobSpec::recompute_modules.
enum RecomputeModule : unsigned {
  kRecomputeLayernorm = 1,  ///< the two norms' outputs (the QKV and MLP inputs)
  kRecomputeMlaUpProj = 2,  ///< MLA's up-projected queries, keys and values (from the latents)
  kRecomputeMoeAct = 4,     ///< the MoE experts' activation output (SwiGLU, from its inputs)
};

/// NVFP4's bytes per element: a 4-bit value and a 1-byte E4M3 scale per block of 16 (NVIDIA's
/// format; Transformer Engine's NVFP4BlockScaling; the second-level fp32 scale per tensor is
/// negligible).
inline constexpr double kNvfp4BytesPerElement = 0.5 + 1.0 / 16.0;
/// MXFP8's bytes per element: an 8-bit E4M3 value and a 1-byte E8M0 scale per block of 32 (OCP
/// Microscaling Formats (MX) v1.0 specification, section 5.3, MXFP8).
inline constexpr double kMxfp8BytesPerElement = 1.0 + 1.0 / 32.0;

struct JobSpec {
  std::int64_t seq_len = 4096;      ///< tokens per sequence
  std::int64_t global_batch = 512;  ///< sequences per optimizer step
  Dtype dtype = Dtype::bf16;
  bool flash_attention = true;  ///< fused attention: no s^2 scores stored or streamed
  /// Attention runs FlashAttention-2-class kernels (PyTorch SDPA, as torchtitan uses), at
  /// Calibration::attention_efficiency_fa2 instead of the GEMM efficiency of cuDNN / Transformer
  /// Engine fused attention. Matters on Hopper, where FlashAttention-2 lacks the new tensor-core
  /// instructions.
  bool fa2_attention = false;
  /// PyTorch eager mode (no torch.compile, no fused kernels): each norm, rotary embedding, SwiGLU
  /// and residual add runs as several element-wise kernels (Calibration::eager_* passes).
  bool eager = false;
  bool tp_comm_overlap = false;  ///< TP collectives overlapped with matmuls (userbuffers)
  /// With fp8 training and sequence parallelism, the forward all-gathers of the FP8 linear
  /// layers' inputs move FP8 (1 byte per element): torchao's Float8ColwiseParallel and
  /// PrepareFloat8ModuleInput, which torchtitan applies with Float8. Reduce-scatters and the
  /// backward's collectives stay bf16.
  bool fp8_tp_all_gather = false;
  /// fp8, mxfp8 or nvfp4 training runs fused attention's two matmuls (QK^T and PV, forward and
  /// backward) in FP8 at the FP8 rate: Transformer Engine's fp8_dpa (with NVFP4 linear layers,
  /// NVTE_DPA_FP8_RECIPE picks its FP8 recipe), Megatron-core --fp8-dot-product-attention, set by
  /// Megatron-Bridge's 26.06 MoE recipes. Costed
  /// at the same fraction of the FP8 peak as bf16 attention reaches of the 16-bit peak: cuDNN's FP8
  /// forward runs 1.9-2.1x its BF16 one on H100 at head dim 256 (Shah et al., FlashAttention-3,
  /// arXiv 2407.08608, Figs. 5 and 7: 1,122 vs 580 TFLOP/s without a causal mask, 1,056 vs 497
  /// with one, sequence 8k).
  bool fp8_attention = false;
  /// EP all-to-all hidden behind another microbatch's compute (DeepSeek's DualPipe,
  /// Megatron-core's --overlap-moe-expert-parallel-comm); exposed only beyond that compute.
  bool ep_comm_overlap = false;
  bool overlap_grad_reduce = true;  ///< DP reduction overlapped with the backward pass
  /// ZeRO-1/2: the updated parameters' all-gather overlapped with the next step's first forward
  /// pass (Megatron-LM --overlap-param-gather; on in NeMo's and Megatron-Bridge's recipes).
  bool overlap_param_gather = false;
  /// bf16/fp8 training keeps and reduces its gradients in bf16, not in fp32 main_grad buffers
  /// (Megatron-LM --grad-reduce-in-bf16, NeMo's grad_sync_dtype: bf16): half the gradient memory
  /// and DP traffic. fp16 training reduces in fp16 either way.
  bool grad_reduce_bf16 = false;
  /// With fp8 (or mxfp8) training and a sharded optimizer (ZeRO >= 1), the data-parallel parameter
  /// all-gathers move the transformer layers' weights in FP8, 1 byte per parameter (Megatron-core
  /// --fp8-param-gather, NeMo's FP8_PARAMS / fp8_params, Megatron-Bridge's FP8 recipes, torchao's
  /// enable_fsdp_float8_all_gather); the embedding and the output layer stay 16-bit, and so do
  /// the gradients' reduce-scatters.
  bool fp8_param_gather = false;
  /// The same for nvfp4 training: the layers' weights gathered in NVFP4 (kNvfp4BytesPerElement
  /// per parameter; Megatron-core --fp4-param-gather, Megatron-Bridge's bf16_with_nvfp4_mixed
  /// from its 2026 releases; the 26.02 container and MLPerf v5.1 gathered bf16).
  bool fp4_param_gather = false;
  /// The static parts of each layer (attention, the MoE router and its dispatch preprocessing)
  /// are captured in CUDA graphs and replayed (Megatron-core --cuda-graph-impl transformer_engine
  /// with those scopes, as Megatron-Bridge's Blackwell MoE recipes set it): their kernels cost
  /// the host nothing to launch, so an MoE layer is not bound by its host's launch rate
  /// (Calibration::moe_layer_host).
  bool cuda_graphs = false;
  /// How an MoE layer's tokens reach their experts (Megatron-core --moe-token-dispatcher-type):
  /// alltoall, one copy per routed expert; flex (--moe-flex-dispatcher-backend hybridep or
  /// deepep), each token once to every other server that holds one of its experts, copied on
  /// inside that server.
  MoeDispatcher moe_dispatcher = MoeDispatcher::alltoall;
  /// Context parallelism's K/V exchange (--cp-comm-type); the Llama 3 paper's CP is all_gather
  /// (section 3.3.2).
  CpComm cp_comm = CpComm::p2p;
  /// RecomputeModule bits: modules recomputed in the backward pass with no or selective
  /// recomputation (none under full recomputation, also in the layers a partial one keeps).
  /// DeepSeek-V3 recomputes its RMSNorms and MLA up-projections and its MoE SwiGLU outputs (report
  /// sections 3.2.3 and 3.3.2); Megatron-Bridge's DeepSeek recipes set some of them.
  unsigned recompute_modules = 0;
  /// Multi-token-prediction modules trained (Megatron-LM --mtp-num-layers, a training argument;
  /// the checkpoint's num_nextn_predict_layers says how many the model has): -1, the model's own.
  /// apply_mtp_layers sets the model to it before anything is costed and the job to the count.
  int mtp_layers = -1;
  /// Parameters per data-parallel gradient bucket (Megatron-LM --ddp-bucket-size); 0: Megatron-
  /// core's default, max(Calibration::dp_bucket_params, 1M x the data-parallel size), "larger DP
  /// sizes need larger buckets to ensure collectives do not become latency-bound"
  /// (megatron/core/distributed/distributed_data_parallel_config.py).
  std::int64_t dp_bucket_params = 0;
  /// Each micro-batch's bf16 gradients are cast to fp32 and added into fp32 copies in a separate
  /// pass over the stage's parameters (DeepSpeed's BF16_Optimizer: bf16 with ZeRO stage 0 in its
  /// config); Megatron-LM's fused gradient accumulation writes them from the weight-gradient GEMM.
  bool grad_accumulation_pass = false;
  bool overlap_p2p = true;  ///< PP sends overlapped with compute in the steady state
  /// Interleaved pipeline stages need not hold a multiple of vpp layers (the stack has
  /// Megatron-core's --pipeline-model-parallel-layout); plans take it as Plan::flexible_layout.
  bool flexible_pipeline_layout = true;
  /// The search may offload activations to host memory (Plan::offload_layers) where the GPU has a
  /// host link; the stack has it (Megatron-core, NeMo).
  bool activation_offload = true;
  /// The search may recompute Megatron-core's modules (Plan::recompute_modules) where a plan fits
  /// only without their outputs; the stack has --recompute-modules (Megatron-core, NeMo).
  bool recompute_module_search = true;
  int gpus = 0;                ///< GPUs to use (0: the whole cluster)
  double memory_headroom = 0;  ///< fraction of GPU memory kept free (0-0.9)
};

/// The job's multi-token-prediction count applied to the model it trains: `m.mtp_layers` becomes
/// `j.mtp_layers` when the job gives one (0 trains none), then `j.mtp_layers` the count trained.
/// InputError naming `what` when the count is below 0 (-1: the model's) or above kMaxMtpLayers.
void apply_mtp_layers(ModelSpec& m, JobSpec& j, const std::string& what);

/// Bytes per element: NVFP4 and MXFP8 count their block scales (0.5 + 1/16, 1 + 1/32).
[[nodiscard]] double dtype_bytes(Dtype d);
/// Whether training in `d` runs the linear layers' multiplies in a low-precision format (fp8,
/// nvfp4, mxfp8) and keeps bf16 elsewhere.
[[nodiscard]] bool low_precision_linear(Dtype d);
/// Whether those multiplies run on FP8 tensor cores (fp8 and mxfp8; nvfp4 runs on FP4 ones).
[[nodiscard]] bool fp8_multiplies(Dtype d);
/// Whether the data-parallel parameter all-gathers move the layers' weights in the training's
/// low-precision format: --fp8-param-gather with fp8 or mxfp8, --fp4-param-gather with nvfp4.
[[nodiscard]] bool low_precision_param_gather(const JobSpec& j);
/// Whether those gathers are MXFP8 ones, which Megatron-core runs in bf16: with MXFP8 weights it
/// gathers bf16 parameters into the gradient buffer (--reuse-grad-buf-for-mxfp8-param-ag, which
/// Megatron-LM's MoE guide pairs with --fp8-param-gather for MXFP8 and Megatron-Bridge's
/// bf16_with_mxfp8_mixed sets) and casts each to MXFP8 after the gather
/// (megatron/core/distributed, start_param_sync / finish_param_sync), once per step.
[[nodiscard]] bool mxfp8_params_gathered_in_bf16(const JobSpec& j);
/// Bytes per element of a training job's activations and TP traffic: bf16 for fp8, nvfp4 and
/// mxfp8 training.
[[nodiscard]] double activation_bytes(const JobSpec& j);
[[nodiscard]] const char* to_string(Dtype d);
/// Parsers for flag values; InputError names `what` (the flag) on a bad value.
[[nodiscard]] Dtype parse_dtype(const std::string& s, const std::string& what);
[[nodiscard]] const char* to_string(MoeDispatcher d);
[[nodiscard]] MoeDispatcher parse_moe_dispatcher(const std::string& s, const std::string& what);
[[nodiscard]] const char* to_string(CpComm c);
/// "p2p" or "all_gather"; InputError naming `what` otherwise.
[[nodiscard]] CpComm parse_cp_comm(const std::string& s, const std::string& what);
/// "layernorm,mla_up_proj,moe_act" (any of them, comma-separated; "none" or "": none) <-> bits.
[[nodiscard]] unsigned parse_recompute_modules(const std::string& s, const std::string& what);
/// One module's bit by its Megatron-core name; 0 for a name topoplan does not model.
[[nodiscard]] unsigned recompute_module_bit(const std::string& name);
[[nodiscard]] std::string recompute_modules_string(unsigned modules);
/// The modules a plan recomputes: the job's and the plan's own (Plan::recompute_modules); none
/// under full recomputation (Megatron's modules belong to selective granularity, also in the
/// layers a partial one keeps).
[[nodiscard]] unsigned recomputed_modules(const JobSpec& j, const Plan& p);
/// Checks ranges; InputError names the flag.
/// Sequence lengths, batches and token counts are bounded so that token counts and loops over
/// divisors stay small: 16,777,216 (2^24).
inline constexpr std::int64_t kMaxJobCount = std::int64_t{1} << 24;
/// JobSpec::dp_bucket_params at most 2^40 parameters.
inline constexpr std::int64_t kMaxDpBucketParams = std::int64_t{1} << 40;

void validate(const JobSpec& j);
struct GpuSpec;
/// Whether FP8 attention (JobSpec::fp8_attention) can run: fp8, mxfp8 or nvfp4 training on a GPU
/// with FP8 tensor cores.
[[nodiscard]] bool fp8_attention_possible(const JobSpec& j, const GpuSpec& gpu);
/// The job on this GPU: fp8 training needs FP8 tensor cores (`fp8_TFLOPs` in the GPU file),
/// nvfp4 training FP4 ones (`fp4_TFLOPs`), mxfp8 training block-scaled FP8 ones (FP8 tensor
/// cores on a Blackwell-generation GPU); FP8 attention needs fp8, mxfp8 or nvfp4 training on FP8
/// tensor cores, and fused attention.
void validate(const JobSpec& j, const GpuSpec& gpu);
/// The dense peak of the format training in `d` runs its linear layers' multiplies in: the FP8
/// peak for fp8 and mxfp8, the FP4 peak for nvfp4, else the 16-bit one (FLOP/s).
[[nodiscard]] double format_peak_flops(const GpuSpec& gpu, Dtype d);
/// That peak's name for reports: "FP8", "FP4" or "16-bit".
[[nodiscard]] const char* format_peak_name(Dtype d);

}  // namespace topoplan
