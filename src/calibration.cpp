#include "topoplan/calibration.hpp"

#include <fmt/format.h>

#include <utility>

#include "detail/json_input.hpp"
#include "topoplan/error.hpp"
#include "topoplan/units.hpp"

namespace topoplan {

namespace {

/// Three rows per link kind: achieved bandwidth fraction, step latency, NVLS fraction.
void add_link_entries(Calibration& c, std::vector<CalibrationEntry>& out) {
  for (int i = 0; i < kLinks; ++i) {
    const std::string name = to_string(static_cast<Link>(i));
    LinkCalibration& l = c.links[i];
    const char* src = "";
    const char* lat = "";
    switch (static_cast<Link>(i)) {
      case Link::nvlink3:
        src = "nccl-tests issue 175: ~230 of 300 GB/s all-reduce busbw on 8 x A100";
        lat =
            "nccl-tests issue 123: 33.7 us for a tiny ring all-reduce on 8 A100 = 6 us + 14 steps";
        break;
      case Link::nvlink4:
        src =
            "nccl-tests issue 212: ~370 of 450 GB/s ring busbw on 8 x H100; NVLS ~480 "
            "(dgxc-benchmarking)";
        lat = "dgxc-benchmarking: 13-17 us small all-reduces on 8 H100 = 6 us + 14 steps";
        break;
      case Link::nvlink5: src = lat = "no measurement here: as nvlink4"; break;
      case Link::pcie: src = lat = "estimate: PCIe Gen4 x16 ~24-26 of 32 GB/s achieved"; break;
      case Link::infiniband:
        src = "nccl-tests issue 175: 86 of 100 GB/s busbw, 2 nodes x 4 HDR";
        lat =
            "nccl issue 1244: ~47 us tiny all-reduce on 2 x 8 GPUs over NDR = 6 + 20 us base + "
            "tree "
            "(2 x (7 NVLink steps + 1 network step))";
        break;
      case Link::roce: src = lat = "estimate: slightly below InfiniBand"; break;
    }
    out.push_back(
        {"link." + name + ".bw_fraction", &l.bw_fraction, 1, "fraction of line rate", src});
    out.push_back({"link." + name + ".step_latency_us", &l.step_latency, 1e6, "us", lat});
    out.push_back(
        {"link." + name + ".nvls_bw_fraction", &l.nvls_bw_fraction, 1,
         "fraction of line rate (0: none)",
         i == static_cast<int>(Link::nvlink4) || i == static_cast<int>(Link::nvlink5)
             ? "dgxc-benchmarking nccl README: NVLS all-reduce busbw 237 GB/s at 16 MiB and "
               "~480 at 1 GiB on 8 x H100: fitted as 60 us + 1.75 S / (450 x 1.084 GB/s)"
             : "no in-switch reduction"});
    const bool network =
        i == static_cast<int>(Link::infiniband) || i == static_cast<int>(Link::roce);
    const char* nccl =
        i == static_cast<int>(Link::pcie)
            ? "NCCL src/graph/tuning.cc, hwLatencies, PCI, ring (at least the LL step latency)"
        : network
            ? "NCCL src/graph/tuning.cc, hwLatencies, NET, ring (at least the LL step latency)"
            : "NCCL src/graph/tuning.cc, hwLatencies, NVLink, ring (at least the LL step latency)";
    out.push_back(
        {"link." + name + ".ll128_step_latency_us", &l.ll128_step_latency, 1e6, "us", nccl});
    out.push_back(
        {"link." + name + ".simple_step_latency_us", &l.simple_step_latency, 1e6, "us", nccl});
  }
}

/// How much of a communication hidden behind compute still costs the step.
void add_overlap_entries(Calibration& c, std::vector<CalibrationEntry>& out) {
  // clang-format off
  const std::vector<CalibrationEntry> overlap = {
      {"tp_overlap_exposed_fraction", &c.tp_overlap_exposed_fraction, 1, "fraction", "estimate: TP communication left exposed with userbuffer overlap (--tp-comm-overlap); all of a collective beyond the matmul it overlaps with is exposed too"},
      {"comm_sm_fraction", &c.comm_sm_fraction, 1, "fraction of the GPU's SMs", "counted: NCCL runs a collective as one CTA per channel on the SMs; NVIDIA's MLPerf Training configs pin 16 to 32 of them (NCCL_MIN_CTAS=16, NCCL_MAX_CTAS=32) and keep 8-16 SMs free in the norm kernels for them (NVTE_FWD_LAYERNORM_SM_MARGIN); DeepSeek-V3's report (section 3.2.2) gives its all-to-all 20 of H800's 132 SMs. 16 of H100's 132 (B200 has 148, A100 108). Charged for DP's collectives and EP's all-to-alls hidden behind compute (DeepEP and HybridEP also run on SMs); not for point-to-point sends (CP's ring, PP), which NCCL runs on a few CTAs per peer, nor TP overlap, whose exposure is its own estimate (tp_overlap_exposed_fraction)"},
  };
  // clang-format on
  out.insert(out.end(), overlap.begin(), overlap.end());
}

/// The MoE layers' two fitted constants (cost_model.cpp: moe_routed_copy_bytes, moe_host_wait).
void add_moe_entries(Calibration& c, std::vector<CalibrationEntry>& out) {
  // clang-format off
  const std::vector<CalibrationEntry> moe = {
      {"moe_layer_host_ms", &c.moe_layer_host, 1e3, "ms per MoE layer per microbatch", "training, MoE layers without --cuda-graphs: fitted by calibrate --fit on one Megatron-Bridge 26.04.01 row, Qwen3 235B-A22B MXFP8 on 256 B200 (PP 8, EP 8, micro-batch 1, all-to-all dispatcher, no CUDA graphs: 3,776 tokens/s/GPU measured, 5,386 modelled without it); held back: Qwen3 235B FP8 on 256 H100 (no CUDA graphs; +27.6% before, +13% after); graphed rows do not read it. Megatron-LM's DeepSeek-V3 GB200 guide (docs/discussions/deepseek-v3-gb200-optimization/, 2025, before commit 3c1b98e withdrew the draft) finds MoE training host-bound and names the per-layer device-to-host sync of the tokens per expert as what keeps whole-model CUDA graphs out"},
      {"moe_routed_copy_bytes", &c.moe_routed_copy_bytes, 1, "bytes per hidden element per routed copy", "training, MoE layers, at the HBM efficiency: fitted by calibrate --fit on one Megatron-Bridge 26.04.01 row, Qwen3 30B-A3B MXFP8 on 8 B200 (EP 8, HybridEP, CUDA graphs); held back: the other seven Qwen3 MXFP8 rows of that table (GB300, GB200, B300; 235B-A22B on 256) and the H100 MoE rows. About 29 bytes are counted (HybridEP's fused permute and pad, per-expert quantization, combine, their backward); the rest is what the fit finds: kernels that do not stream at the HBM rate, and host stalls between them"},
  };
  // clang-format on
  out.insert(out.end(), moe.begin(), moe.end());
}

}  // namespace

std::vector<CalibrationEntry> calibration_entries(Calibration& c) {
  // One row per constant, as the README table shows them.
  // clang-format off
  std::vector<CalibrationEntry> out = {
      {"gemm_efficiency.ampere", &c.gemm_efficiency[0], 1, "fraction of dense peak", "fitted by calibrate --fit on the A100 fit rows (Megatron-LM SC'21 Table 1, Korthikanti et al. 2022 Table 5): ~222 TFLOP/s, below cuBLAS's ~250 on large fp16 GEMMs"},
      {"gemm_efficiency.hopper", &c.gemm_efficiency[1], 1, "fraction of dense peak", "fitted by calibrate --fit on the H100 bf16 fit row (NVIDIA's GPT-3 175B recipe, 53.5% MFU end to end)"},
      {"gemm_efficiency.blackwell", &c.gemm_efficiency[2], 1, "fraction of dense peak", "not fitted: as hopper (the two held-back Megatron-Bridge B200 FP8 rows check it)"},
      {"gemm_efficiency.blackwell_ultra", &c.gemm_efficiency[3], 1, "fraction of dense peak", "not fitted: as blackwell (no bf16 dense GB300 or B300 row here)"},
      {"gemm_efficiency_fp8.hopper", &c.gemm_efficiency_fp8[1], 1, "fraction of dense FP8 peak", "fp8 training (--dtype fp8), linear layers only, the ceiling of the FP8 shape rule (gemm_half_rows/cols/depth): fitted by calibrate --fit on two NeMo 24.07 FP8 rows (GPT-3 175B on 128 H100, Llama 3 8B on 8); the table's other rows are held back"},
      {"gemm_efficiency_fp8.blackwell", &c.gemm_efficiency_fp8[2], 1, "fraction of dense FP8 peak", "not fitted: Hopper's FP8 efficiency under the one-dimension size rule (0.469, fitted on the same rows before the shape rule), carried over; Blackwell FP8 GEMMs keep that rule (the shape table is Hopper's); the held-back B200 and GB200 rows check it"},
      {"gemm_efficiency_fp8.blackwell_ultra", &c.gemm_efficiency_fp8[3], 1, "fraction of dense FP8 peak", "B300 and GB300 (Blackwell's dense peaks; doubled attention softmax rate; GB300 at 1.4 kW): fitted by calibrate --fit on two Megatron-Bridge 26.02 GB300 FP8 rows (Llama 3.1 405B TP 4 PP 8 VP 4 on 256, Llama 3 70B Megatron-FSDP on 64); held back: the 25.11 GB300 rows and MLPerf v5.1's 8B on 8 B300 (1.1 kW)"},
      {"gemm_efficiency_fp4.blackwell", &c.gemm_efficiency_fp4[2], 1, "fraction of dense FP4 peak", "nvfp4 training (--dtype nvfp4), linear layers only, one-dimension size rule: fitted by calibrate --fit on one Megatron-Bridge 26.02 GB200 NVFP4 row (Llama 3.1 405B TP 4 PP 16 VP 8 on 256); held back: the same container's 70B row and MLPerf Training v5.1's NVFP4 405B results on GB200"},
      {"gemm_efficiency_fp4.blackwell_ultra", &c.gemm_efficiency_fp4[3], 1, "fraction of dense FP4 peak", "as blackwell, on B300 and GB300: fitted by calibrate --fit on one Megatron-Bridge 26.02 GB300 NVFP4 row (Llama 3.1 405B TP 4 PP 8 VP 4 on 256); held back: the same container's 70B row and MLPerf Training v5.1's NVFP4 405B result on GB300"},
      {"attention_efficiency_fa2.ampere", &c.attention_efficiency_fa2[0], 1, "fraction of dense peak", "--fa2-attention (PyTorch SDPA, --stack torchtitan) on A100: as the GEMMs (FlashAttention-2 reaches up to 73% of A100 peak forward, Dao 2023, arXiv 2307.08691)"},
      {"attention_efficiency_fa2.hopper", &c.attention_efficiency_fa2[1], 1, "fraction of dense peak", "--fa2-attention on H100: fitted by calibrate --fit on one torchtitan long-context row (Llama 3.1 8B, 262,144 tokens, CP 8); FlashAttention-2 has no Hopper tensor-core (wgmma/TMA) path"},
      {"attention_efficiency_fa2.blackwell", &c.attention_efficiency_fa2[2], 1, "fraction of dense peak", "no calibration run here: as hopper"},
      {"attention_efficiency_fa2.blackwell_ultra", &c.attention_efficiency_fa2[3], 1, "fraction of dense peak", "no calibration run here: as hopper"},
      {"gemm_half_dim", &c.gemm_half_dim, 1, "matrix dimension", "estimate: tile quantisation makes small per-GPU matrices (high TP) slower"},
      {"gemm_half_rows", &c.gemm_half_rows, 1, "rows", "FP8 GEMM shape rule, fitted (with the next two) to DeepGEMM's FP8 GEMM table on H800 (deepseek-ai/DeepGEMM README, Apr 2025, the 15 shapes with M >= 256: dense, grouped contiguous and masked), not to any training run: with one common scale within 7% of 14 of them, the worst 16%; 512 -> 1024 rows: +19% measured, +13% by the rule (tests/data/gemm)"},
      {"gemm_half_cols", &c.gemm_half_cols, 1, "columns", "FP8 GEMM shape rule: output columns at half (DeepGEMM table, as gemm_half_rows)"},
      {"gemm_half_depth", &c.gemm_half_depth, 1, "reduction length", "FP8 GEMM shape rule: reduction length at half (DeepGEMM table, as gemm_half_rows)"},
      {"fp8_cast_transpose_bytes", &c.fp8_cast_transpose_bytes, 1, "bytes per element", "counted: Transformer Engine's fp8_cast_transpose(_bgrad)_fused reads the 16-bit tensor and writes it in FP8 and transposed (transformer_engine/pytorch/module/linear.py, layernorm_linear.py, layernorm_mlp.py)"},
      {"fp8_transpose_bytes", &c.fp8_transpose_bytes, 1, "bytes per element", "counted: an FP8 tensor produced by a fused norm or activation is transposed for its weight gradient (read, write)"},
      {"nvfp4_cast_transpose_bytes", &c.nvfp4_cast_transpose_bytes, 1, "bytes per element", "counted from the format: read 16-bit (2), write the row-wise and column-wise NVFP4 copies (0.5 + 1/16 each: 4-bit values, an E4M3 scale per 16), as Transformer Engine's NVFP4 quantizer does for a GEMM input it needs both ways"},
      {"nvfp4_requantize_bytes", &c.nvfp4_requantize_bytes, 1, "bytes per element", "counted from the format: the column-wise NVFP4 copy of a tensor a norm or activation wrote row-wise, quantized again from 16-bit (read 2, write 0.5 + 1/16): one-dimensional block scales cannot be transposed"},
      {"mxfp8_cast_transpose_bytes", &c.mxfp8_cast_transpose_bytes, 1, "bytes per element", "counted from the format: read 16-bit (2), write the row-wise and column-wise MXFP8 copies (1 + 1/32 each: E4M3 values, an E8M0 scale per 32), as Transformer Engine's MXFP8 quantizer does for a GEMM input it needs both ways"},
      {"mxfp8_requantize_bytes", &c.mxfp8_requantize_bytes, 1, "bytes per element", "counted from the format: the column-wise MXFP8 copy of a tensor a norm or activation wrote row-wise, quantized again from 16-bit (read 2, write 1 + 1/32): one-dimensional block scales cannot be transposed"},
      {"hbm_efficiency", &c.hbm_efficiency, 1, "fraction of HBM bandwidth", "estimate: element-wise kernels reach ~80% of HBM bandwidth"},
      {"host_link_efficiency", &c.host_link_efficiency, 1, "fraction of host link bandwidth", "estimate, as link.pcie.bw_fraction: activation offloading's copies over PCIe or NVLink-C2C"},
      {"elementwise_hidden_passes", &c.elementwise_hidden_passes, 1, "elements per h per token", "2 layer norms (read + write) and 2 fused bias-dropout-residual adds, forward: counted 8-11, fitted 8 with the GEMM efficiencies on the calibration runs"},
      {"eager_elementwise_hidden_passes", &c.eager_elementwise_hidden_passes, 1, "elements per h per token", "--eager: counted from torchtitan's Llama block: 2 RMSNorms as 6 kernels (18 each, fp32 as 2), 2 residual adds (3 each), the attention output's transpose copy (2)"},
      {"eager_elementwise_qkv_passes", &c.eager_elementwise_qkv_passes, 1, "elements per (q_dim + kv_dim) per token", "--eager: counted: rotary embeddings in fp32 complex arithmetic (10), K/V head repetition (2)"},
      {"softmax_passes", &c.softmax_passes, 1, "elements per head per s per token", "counted: fused scale-mask-softmax (read + write), dropout (read, write, 1-byte mask), forward; 0 with fused (flash) attention"},
      {"use_hierarchical_all_reduce", &c.use_hierarchical_all_reduce, 1, "0 or 1", "off: NCCL's all-reduce is ring, tree or NVLS; nccl-tests' 86 GB/s on 2 x 8 A100 is the ring's"},
  };
  // clang-format on
  add_link_entries(c, out);
  // clang-format off
  std::vector<CalibrationEntry> rest = {
      {"collective_base_latency_us", &c.collective_base_latency, 1e6, "us", "with the step latencies, fits the tiny all-reduce times above"},
      {"nvls_latency_us", &c.nvls_latency, 1e6, "us", "fitted with nvls_bw_fraction to the two NVLS points above"},
      {"network_base_latency_us", &c.network_base_latency, 1e6, "us", "fitted with the InfiniBand step latency to the tiny 2 x 8 GPU all-reduce above"},
      {"net_overhead_us", &c.net_overhead, 1e6, "us", "NCCL src/graph/tuning.cc, getNetOverhead (Intel hosts; 2 on AMD): a ring across servers pays at least this per NVLink step, three times under Simple"},
      {"ll128_base_latency_us", &c.ll128_base_latency, 1e6, "us", "NCCL src/graph/tuning.cc, baseLatencies, ring LL128 (LL's is collective_base_latency_us)"},
      {"simple_base_latency_us", &c.simple_base_latency, 1e6, "us", "NCCL src/graph/tuning.cc, baseLatencies, ring Simple"},
      {"ll_bandwidth_fraction", &c.ll_bandwidth_fraction, 1, "fraction of the ring's bandwidth", "NCCL src/graph/tuning.cc: LL carries 4 data bytes per 8-byte store with its flag (ring x 0.5)"},
      {"tree_ll_bandwidth_fraction", &c.tree_ll_bandwidth_fraction, 1, "fraction of the tree's bandwidth", "NCCL src/graph/tuning.cc: tree LL x 1/3.8 (of tree_bandwidth_fraction's share)"},
      {"tree_bandwidth_fraction", &c.tree_bandwidth_fraction, 1, "fraction of the ring's bandwidth", "NCCL src/graph/tuning.cc: tree all-reduce x 0.92, every protocol"},
      {"tree_ll128_bandwidth_fraction", &c.tree_ll128_bandwidth_fraction, 1, "fraction of the tree's bandwidth", "NCCL src/graph/tuning.cc: tree LL128 across servers x 120/128"},
      {"ll128_bandwidth_fraction", &c.ll128_bandwidth_fraction, 1, "fraction of the ring's bandwidth", "NCCL src/graph/tuning.cc: LL128 carries 120 of every 128 bytes (x 0.92)"},
      {"ll_max_busbw_GBps.ampere", &c.ll_max_busbw[0], 1e-9, "GB/s bus bandwidth", "NCCL src/graph/tuning.cc, llMaxBws, Ampere, one server"},
      {"ll_max_busbw_GBps.hopper", &c.ll_max_busbw[1], 1e-9, "GB/s bus bandwidth", "NCCL src/graph/tuning.cc, llMaxBws, Hopper, one server; with it the 8 x H100 all-reduce at 1 MB runs LL at 27 us, as measured"},
      {"ll_max_busbw_GBps.blackwell", &c.ll_max_busbw[2], 1e-9, "GB/s bus bandwidth", "NCCL src/graph/tuning.cc, llMaxBws, Blackwell, one server"},
      {"ll_max_busbw_GBps.blackwell_ultra", &c.ll_max_busbw[3], 1e-9, "GB/s bus bandwidth", "taken as Blackwell's (B300 is compute capability 10.3, Blackwell's major version)"},
      {"ll_max_busbw_GBps.two_servers", &c.ll_max_busbw_two_servers, 1e-9, "GB/s bus bandwidth", "NCCL src/graph/tuning.cc, llMaxBws, 2 nodes (Intel hosts; AMD 22.5)"},
      {"ll_max_busbw_GBps.more_servers", &c.ll_max_busbw_more_servers, 1e-9, "GB/s bus bandwidth", "NCCL src/graph/tuning.cc, llMaxBws, 3 or more nodes (Intel hosts; AMD 19.0)"},
      {"switch_hop_latency_us", &c.switch_hop_latency, 1e6, "us", "estimate: two more switch traversals per tier above the leaf"},
      {"grad_accumulation_bytes_per_param", &c.grad_accumulation_bytes_per_param, 1, "bytes per parameter", "counted from DeepSpeed's BF16_Optimizer (deepspeed/runtime/bf16_optimizer.py, update_hp_grads after each backward): the bf16 gradient read (2), cast to fp32 written and read (4 + 4), the fp32 sum read and written (4 + 4)"},
      {"grad_reduce_bytes_bf16", &c.grad_reduce_bytes_bf16, 1, "bytes per parameter", "Megatron-LM reduces bf16 training's gradients in fp32 (main_grad buffers)"},
      {"grad_reduce_bytes_fp16", &c.grad_reduce_bytes_fp16, 1, "bytes per parameter", "Megatron-LM reduces fp16 training's gradients in fp16 by default"},
      {"dp_bucket_params", &c.dp_bucket_params, 1, "parameters", "Megatron-core DDP default bucket size up to 40 data-parallel ranks: max(40M, 1M x DP) parameters (distributed_data_parallel_config.py); --dp-bucket-params sets it"},
      {"decode_layer_overhead_us", &c.decode_layer_overhead[0], 1e6, "us per layer per token", "fitted by calibrate --fit to NVIDIA NeMo's Llama-2-7B TensorRT-LLM run: 153.8 ms at TP 1 (128 in, 20 out, batch 1, H100)"},
      {"decode_collective_overhead_us", &c.decode_collective_overhead[0], 1e6, "us per collective", "fitted to the same run's 97.6 ms at TP 8"},
      {"decode_layer_overhead_us.fastertransformer", &c.decode_layer_overhead[1], 1e6, "us per layer per token", "--runtime fastertransformer: fitted by calibrate --fit to FasterTransformer's GPT-20B on A100 (docs/gpt_guide.md): 566 ms at TP 1 (128 in, 20 out, batch 1)"},
      {"decode_collective_overhead_us.fastertransformer", &c.decode_collective_overhead[1], 1e6, "us per collective", "fitted to the same table's 217 ms at TP 8"},
      {"decode_layer_overhead_us.fastertransformer-triton", &c.decode_layer_overhead[2], 1e6, "us per layer per token", "--runtime fastertransformer-triton: fitted by calibrate --fit to FasterTransformer's GPT-175B on Triton, TP 8 on A100 (docs/gpt_guide.md): 488.86 ms (128 in, 8 out, batch 1)"},
      {"decode_collective_overhead_us.fastertransformer-triton", &c.decode_collective_overhead[2], 1e6, "us per collective", "as fastertransformer's (every Triton row is TP 8: the two overheads cannot be told apart there)"},
      {"request_overhead_ms", &c.request_overhead[0], 1e3, "ms per request", "TensorRT-LLM's benchmark times the engine alone: none"},
      {"request_overhead_ms.fastertransformer", &c.request_overhead[1], 1e3, "ms per request", "FasterTransformer run directly: none"},
      {"request_overhead_ms.fastertransformer-triton", &c.request_overhead[2], 1e3, "ms per request", "fitted by calibrate --fit to FasterTransformer's two GPT-175B rows on Triton (128/8 and 512/32 tokens; the GPT-89B rows are held back)"},
      {"optimizer_bytes_per_param", &c.optimizer_bytes_per_param, 1, "bytes of HBM traffic", "Adam: read grad, param, m, v (fp32) and write param, m, v, bf16 copy"},
      {"step_overhead_ms", &c.step_overhead, 1e3, "ms per optimizer step", "per-step host work outside the schedule: fitted by calibrate --fit on the fit rows, whose steps (1.1-18 s) constrain it weakly (Korthikanti's 22B rows and Megatron-LM's 1.7B set it; the fit rows' mean error is 1.55% without it, 1.54% with it); the published step-time series show 0.05-0.30 s more per step than topoplan's fill, drain and DP (README: per microbatch and per step): fit it on your own runs (calibrate --runs FILE --fit)"},
      {"reserved_GiB", &c.reserved_bytes, 1.0 / units::kGiB, "GiB per GPU", "estimate: CUDA context, NCCL buffers, cuBLAS workspace, allocator fragmentation"},
  };
  // clang-format on
  out.insert(out.end(), rest.begin(), rest.end());
  add_overlap_entries(c, out);
  add_moe_entries(c, out);
  return out;
}

/// What a constant may be set to, by its unit: efficiencies and line-rate fractions divide, so
/// they are above 0; times up to 10 s; counts and sizes finite and modest.
std::pair<double, double> calibration_range(const CalibrationEntry& e) {
  const bool divides = e.key.find("efficiency") != std::string::npos ||
                       e.key.ends_with(".bw_fraction") || e.key.ends_with("bandwidth_fraction") ||
                       e.unit.starts_with("GB/s") || e.key == "dp_bucket_params";
  const double lo = divides ? 1e-6 : 0;
  // In-switch reduction delivers more bus bandwidth than the line rate (the switch adds).
  if (e.key.ends_with(".nvls_bw_fraction")) return {0, 4};
  if (e.unit.starts_with("fraction")) return {lo, 1};
  if (e.unit.starts_with("us")) return {0, 1e7};
  if (e.unit == "0 or 1") return {0, 1};
  return {lo, 1e12};
}

void apply_calibration_json(const std::string& text, const std::string& source, Calibration& c) {
  auto doc = detail::parse_json(text, source);
  if (!doc.is_object()) throw_input(source, "(top level)", "expected an object of key: number");
  auto entries = calibration_entries(c);
  std::vector<std::string_view> known;
  for (const auto& e : entries) known.push_back(e.key);
  for (const auto& [key, value] : doc.items()) {
    if (key == "schema" || key == "source" || key == "note") continue;
    CalibrationEntry* e = nullptr;
    for (auto& candidate : entries)
      if (candidate.key == key) e = &candidate;
    if (!e) {  // the same policy as every topoplan format: warn, name the closest key
      warn_input(source, key,
                 detail::unknown_key_message(key, known) +
                     "; topoplan calibrate --constants lists the keys");
      continue;
    }
    const auto [lo, hi] = calibration_range(*e);
    if (!value.is_number() || !(value.get<double>() >= lo && value.get<double>() <= hi))
      throw_input(source, key,
                  fmt::format("expected a number from {:g} to {:g} ({}), got {}", lo, hi, e->unit,
                              value.dump()));
    *e->value = value.get<double>() / e->scale;
  }
}

void apply_calibration_file(const std::string& path, Calibration& c) {
  apply_calibration_json(detail::read_text_file(path), path, c);
}

}  // namespace topoplan
