#pragma once
/// Every tunable constant of the cost model, in one table, with its unit and source.
/// `--calibration FILE` overrides any of them by key.
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "topoplan/job.hpp"
#include "topoplan/topology.hpp"

namespace topoplan {

/// How one kind of link performs in practice.
struct LinkCalibration {
  double bw_fraction = 0.85;    ///< achieved busbw / line rate for ring collectives
  double step_latency = 5e-6;   ///< seconds per ring or tree step (NCCL's LL protocol)
  double nvls_bw_fraction = 0;  ///< in-switch reduction (NVLS) busbw / line rate; 0: none
  /// Seconds per step under NCCL's LL128 and Simple protocols (at least step_latency).
  double ll128_step_latency = 1.9e-6;
  double simple_step_latency = 3.4e-6;
};

struct Calibration {
  /// Fraction of dense peak a large bf16/fp16 matrix multiply reaches, per architecture
  /// (ampere, hopper, blackwell, blackwell-ultra).
  std::array<double, kArchs> gemm_efficiency{0.711, 0.617, 0.617, 0.617};
  /// Fraction of dense FP8 peak the linear layers' multiplies reach in fp8 training, per
  /// architecture (ampere has no FP8; the entry is unused), casts and scaling included.
  std::array<double, kArchs> gemm_efficiency_fp8{0.0, 0.685, 0.469, 0.657};
  /// Fraction of dense FP4 peak the linear layers' multiplies reach in nvfp4 training, per
  /// architecture (ampere and hopper have no FP4 tensor cores; the entries are unused).
  std::array<double, kArchs> gemm_efficiency_fp4{0.0, 0.0, 0.456, 0.445};
  /// Fraction of dense bf16 peak FlashAttention-2-class attention kernels reach (JobSpec::
  /// fa2_attention), per architecture; cuDNN / Transformer Engine attention runs at the GEMM
  /// efficiency.
  std::array<double, kArchs> attention_efficiency_fa2{0.711, 0.385, 0.385, 0.385};
  /// Matrix dimension at which a multiply reaches half of that (efficiency x n / (n + this)).
  double gemm_half_dim = 64;
  /// FP8 GEMMs (gemm.hpp): the output rows, output columns and reduction length at which a GEMM
  /// reaches half its ceiling in that dimension.
  double gemm_half_rows = 150;
  double gemm_half_cols = 920;
  double gemm_half_depth = 700;
  /// HBM bytes per element of FP8 training's casts: cast with transpose (read 16-bit, write the
  /// FP8 tensor and its transpose) and transpose of an FP8 tensor (read, write).
  double fp8_cast_transpose_bytes = 4;
  double fp8_transpose_bytes = 2;
  /// The same for NVFP4 (kNvfp4BytesPerElement per element written): quantized both ways (read
  /// 16-bit, write the row-wise and the column-wise NVFP4 copies, each with its block scales),
  /// and quantized column-wise only from the 16-bit tensor a norm or activation wrote (NVFP4's
  /// block scales run along one dimension: the transposed copy cannot be read off the other).
  double nvfp4_cast_transpose_bytes = 2 + 2 * kNvfp4BytesPerElement;
  double nvfp4_requantize_bytes = 2 + kNvfp4BytesPerElement;
  /// The same two for MXFP8 (kMxfp8BytesPerElement per element written): its block scales also
  /// run along one dimension, so Transformer Engine's MXFP8 quantizer writes both copies from
  /// the 16-bit tensor.
  double mxfp8_cast_transpose_bytes = 2 + 2 * kMxfp8BytesPerElement;
  double mxfp8_requantize_bytes = 2 + kMxfp8BytesPerElement;
  /// Achieved fraction of HBM bandwidth for element-wise kernels (norms, activations, softmax).
  double hbm_efficiency = 0.80;
  /// Achieved fraction of the host link's bandwidth for activation offloading copies.
  double host_link_efficiency = 0.80;
  /// Element-wise traffic per token per layer, forward, in elements per unit of hidden size:
  /// two norms and two fused bias-dropout-residual adds.
  double elementwise_hidden_passes = 8;
  /// The same in PyTorch eager mode (JobSpec::eager), per unit of hidden size: two RMSNorms run
  /// as cast, square, mean, scale, cast back and weight multiply (18 each, fp32 counted as two
  /// elements), two residual adds (3 each) and the attention output's transpose copy (2).
  double eager_elementwise_hidden_passes = 44;
  /// Eager mode, per unit of q_dim + kv_dim: rotary embeddings in fp32 complex arithmetic (cast,
  /// multiply, cast back: 10) and the K/V head repetition for grouped-query attention (2).
  double eager_elementwise_qkv_passes = 12;
  /// Element-wise traffic on the attention scores per token per layer per head, forward, in
  /// elements per unit of sequence length, when attention is not fused (scale-mask-softmax,
  /// dropout and its mask).
  double softmax_passes = 4.5;
  /// Use the two-level all-reduce (reduce-scatter in the server, all-reduce across, all-gather)
  /// when cheaper: 1 yes, 0 no (NCCL itself offers ring, tree and NVLS only).
  double use_hierarchical_all_reduce = 0;
  /// Per link kind: nvlink3, nvlink4, nvlink5, pcie, infiniband, roce.
  /// The LL128 and Simple step latencies are NCCL's own ring figures (src/graph/tuning.cc,
  /// hwLatencies: NVLink 1.9 / 3.4 us, PCI 2.5 / 5.7, network 4.0 / 14).
  std::array<LinkCalibration, kLinks> links{{
      {0.77, 2.0e-6, 0.0, 1.9e-6, 3.4e-6},    // nvlink3
      {0.82, 0.6e-6, 1.084, 1.9e-6, 3.4e-6},  // nvlink4
      {0.82, 0.6e-6, 1.084, 1.9e-6, 3.4e-6},  // nvlink5 (no public measurement here: as nvlink4)
      {0.80, 2.0e-6, 0.0, 2.5e-6, 5.7e-6},    // pcie
      {0.86, 6e-6, 0.0, 4.0e-6, 14e-6},       // infiniband
      {0.80, 7e-6, 0.0, 4.0e-6, 14e-6},       // roce
  }};
  /// NCCL's protocols (src/graph/tuning.cc): LL moves 4 bytes of data per 8-byte flagged store,
  /// half the bandwidth (a tree a quarter), capped per GPU architecture inside a server and lower
  /// across servers; LL128 moves 120 of every 128 bytes; Simple has the full bandwidth and the
  /// longest latencies. A collective takes the fastest, as NCCL's tuner does.
  double ll_bandwidth_fraction = 0.5;
  double tree_ll_bandwidth_fraction = 1.0 / 3.8;
  double ll128_bandwidth_fraction = 0.92;
  /// A tree all-reduce's share of the ring bandwidth under every protocol, and LL128's across
  /// servers (120 of 128 bytes) on top of it.
  double tree_bandwidth_fraction = 0.92;
  double tree_ll128_bandwidth_fraction = 120.0 / 128.0;
  /// LL's bus-bandwidth ceiling inside one server, bytes/s, per architecture (llMaxBws).
  std::array<double, kArchs> ll_max_busbw{87.7e9, 141.0e9, 282.0e9, 282.0e9};
  /// The same across two servers and across more (NCCL's Intel-host figures).
  double ll_max_busbw_two_servers = 39.0e9;
  double ll_max_busbw_more_servers = 20.4e9;
  /// Once-per-collective latency of LL128 and Simple (LL's is collective_base_latency), seconds.
  double ll128_base_latency = 14.0e-6;
  double simple_base_latency = 8.4e-6;
  /// Latency every collective pays once (kernel launch, protocol set-up), seconds.
  double collective_base_latency = 6e-6;
  /// Latency of an NVLS (in-switch) all-reduce, seconds: it only pays off for large messages.
  double nvls_latency = 60e-6;
  /// Extra latency a collective pays once when it leaves the server (network proxy, RDMA set-up).
  double network_base_latency = 20e-6;
  /// Extra latency per switch level above the first network tier, seconds.
  double switch_hop_latency = 1e-6;
  /// Fraction of a GPU's SMs a NCCL collective runs on: the compute it is hidden behind runs on
  /// the others, so it takes this fraction of the hidden time longer (Fabric::sm_share).
  double comm_sm_fraction = 0.12;
  /// A ring that leaves the server pays at least this per NVLink step (NCCL's network proxy
  /// overhead, getNetOverhead: 1 us on Intel hosts; three times that under Simple), seconds.
  double net_overhead = 1e-6;
  /// Bytes per parameter of the gradients data parallelism reduces: Megatron-LM reduces bf16
  /// training's gradients in fp32 and fp16 training's in fp16.
  double grad_reduce_bytes_bf16 = 4.0;
  /// JobSpec::grad_accumulation_pass: HBM traffic per parameter per micro-batch (read the bf16
  /// gradient, write and read its fp32 cast, read and write the fp32 sum).
  double grad_accumulation_bytes_per_param = 18.0;
  double grad_reduce_bytes_fp16 = 2.0;
  /// Gradient bucket size, parameters, at data-parallel sizes up to 40 (Megatron-core's default
  /// is max(40M, 1M x DP), JobSpec::dp_bucket_params); the last bucket cannot overlap the
  /// backward pass.
  double dp_bucket_params = 40e6;
  /// Megatron-core's default bucket grows by this many parameters per data-parallel rank.
  static constexpr double kDpBucketParamsPerRank = 1e6;
  /// Fraction of TP communication still exposed when TP overlap (--tp-overlap) is on.
  double tp_overlap_exposed_fraction = 0.25;
  /// Inference decode: fixed time per layer per generated token (kernel launches and
  /// synchronisation between the ~10 kernels of a layer), seconds, per serving runtime
  /// (TensorRT-LLM, FasterTransformer, FasterTransformer behind Triton: Runtime's order).
  std::array<double, 3> decode_layer_overhead{84.5e-6, 69.0e-6, 104.1e-6};
  /// Inference: extra time per TP collective in the decode loop (launch and the barrier it
  /// puts between kernels), seconds, per serving runtime.
  std::array<double, 3> decode_collective_overhead{16.5e-6, 16.5e-6, 16.5e-6};
  /// Inference: fixed time per request (the server in front of the engine), seconds, counted in
  /// the time to the first token; per serving runtime.
  std::array<double, 3> request_overhead{0.0, 0.0, 93.4e-3};
  /// Bytes of HBM traffic per parameter in the optimizer step (Adam, fp32 state).
  double optimizer_bytes_per_param = 36.0;
  /// Training: time each optimizer step spends outside the pipeline schedule, seconds (the
  /// framework's per-step host work: the training loop, its hooks and logging, launching the
  /// optimizer; the GPU waits). Fitted by calibrate --fit on the fit rows, which steps of 1-18 s
  /// constrain only weakly; `calibrate --runs FILE --fit` fits it on a user's own steps.
  double step_overhead = 18.4e-3;
  /// Training, MoE layers launched eagerly (no CUDA graphs): host time per MoE layer per
  /// microbatch, forward and backward, seconds. The dispatcher copies the tokens-per-expert
  /// counts to the host and waits for them in every MoE layer (dropless routing sizes its buffers
  /// with them), so the host cannot run ahead of the GPU across layers: a stage's microbatch takes
  /// at least its MoE layers' host time. Fitted.
  double moe_layer_host = 11.9e-3;
  /// MoE layers: HBM bytes per hidden element of each routed token copy (top_k per token), per
  /// MoE layer, forward and backward, beyond the GEMMs, the activation and the all-to-all (the
  /// dispatcher's permute, pad, per-expert quantization, probability weighting and unpermute, and
  /// the host stalls between their small kernels). Fitted.
  double moe_routed_copy_bytes = 75.6;
  /// Memory every GPU loses to the CUDA context, NCCL buffers, workspace and fragmentation.
  double reserved_bytes = 3.0 * 1024 * 1024 * 1024;
};

/// One row of the documented table: a key, where its value lives, its unit and its source.
struct CalibrationEntry {
  std::string key;
  double* value;
  double scale;  ///< value in the table's unit = *value * scale
  std::string unit;
  std::string source;
};

/// Every constant, in table order (the README's calibration table is this list).
[[nodiscard]] std::vector<CalibrationEntry> calibration_entries(Calibration& c);

/// The values a constant may take (in the table's unit): efficiencies and line-rate fractions
/// above 0 and at most 1 (NVLS up to 4), times up to 10 s, counts and sizes finite.
[[nodiscard]] std::pair<double, double> calibration_range(const CalibrationEntry& e);

/// Overrides constants from a JSON object {"key": value, ...} with keys from the table, values
/// in the table's units. InputError names the file and the key.
void apply_calibration_json(const std::string& text, const std::string& source, Calibration& c);
void apply_calibration_file(const std::string& path, Calibration& c);

}  // namespace topoplan
