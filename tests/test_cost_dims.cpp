// Golden numbers for each dimension's cost function, computed by hand in the comments on a
// two-tier fabric: NVLink 100 GB/s, 1 us per step; network 10 GB/s, 5 us per step; 2 us launch
// per collective, 10 us more when it leaves the server; no NVLS.
#include <catch2/catch.hpp>
#include <limits>

#include "helpers.hpp"
#include "topoplan/cost_dims.hpp"
#include "topoplan/cost_model.hpp"
#include "topoplan/stage_memory.hpp"

using namespace topoplan;

namespace {

Fabric fabric() {
  Fabric f;
  f.tiers = 2;
  f.bandwidth = {100e9, 10e9};
  f.latency = {1e-6, 5e-6};
  f.base_latency = 2e-6;
  f.network_base_latency = 10e-6;
  // One protocol in effect: every one has LL's latencies and the full bandwidth, so the
  // expectations below are plain alpha-beta.
  f.step_latency.fill(f.latency);
  f.protocol_base.fill(f.base_latency);
  f.ring_fraction.fill(1.0);
  f.tree_fraction.fill(1.0);
  f.ll_ceiling.fill(std::numeric_limits<double>::infinity());
  return f;
}

GroupShape inside(int n) {
  GroupShape g;
  g.size = n;
  g.span_tier = 0;
  return g;
}

GroupShape across(int n, int per_server) {
  GroupShape g;
  g.size = n;
  g.span_tier = 1;
  g.per_domain[0] = per_server;
  return g;
}

PlanCore core() {
  PlanCore c;
  c.layers_per_stage = 2;
  c.moe_layers_per_stage = 2;
  c.microbatches = 8;
  c.tp_bytes = 8e6;
  c.tp_per_layer = 4;
  c.cp_bytes = 1e6;
  c.t_attention_fwd = 1e-4;
  c.ep_bytes = 8e6;
  c.ep_per_layer = 4;
  c.pp_bytes = 2e6;
  return c;
}

}  // namespace

TEST_CASE("tp_time: 4 ring all-reduces per layer inside a server") {
  // Ring all-reduce of 8 MB over 4 GPUs on NVLink: 2 us + 6 steps x 1 us + 6/4 x 8e6 / 100e9
  // = 8 us + 120 us = 128 us. Two layers x 4 = 8 of them: 1.024 ms.
  const Calibration cal;
  const CommTime t = tp_time(core(), inside(4), fabric(), false, false, cal);
  CHECK(t.total == Approx(1.024e-3));
  CHECK(t.exposed == Approx(1.024e-3));
  CHECK(t.algorithm == Algorithm::ring);
  // TP overlap leaves 25% of each half (64 us) exposed when the matmul next to it is longer.
  PlanCore long_matmuls = core();
  long_matmuls.tp_hide = {1e-3, 1e-3, 1e-3, 1e-3};
  CHECK(tp_time(long_matmuls, inside(4), fabric(), false, true, cal).exposed == Approx(0.256e-3));
  // A 32 us QKV matmul hides only 32 of its 64 us forward (exposed 32 instead of 16) and 64 of
  // its backward (16 stays); the other three positions 16 + 16 each: 48 + 96 = 144 us per layer.
  long_matmuls.tp_hide[0] = 32e-6;
  CHECK(tp_time(long_matmuls, inside(4), fabric(), false, true, cal).exposed == Approx(0.288e-3));
  // Nothing to hide behind: all of it.
  CHECK(tp_time(core(), inside(4), fabric(), false, true, cal).exposed == Approx(1.024e-3));
  // Sequence parallelism: all-gather + reduce-scatter, each 2 + 3 x 1 + 3/4 x 80 us = 65 us.
  CHECK(tp_time(core(), inside(4), fabric(), true, false, cal).total == Approx(8 * 130e-6));
  CHECK(tp_time(core(), inside(1), fabric(), false, false, cal).total == 0);
}

TEST_CASE("tp_time: FP8 forward all-gathers move half the bytes; the rest stays bf16") {
  const Calibration cal;
  // Sequence parallelism inside a server of 4: a bf16 half (8 MB) 2 + 3 + 60 = 65 us; an FP8
  // all-gather (4 MB) 2 + 3 + 30 = 35 us. Per layer, QKV and MLP-in gather in FP8 forward:
  // (35 + 65) + (65 + 65) + (35 + 65) + (65 + 65) = 460 us; 2 layers 920 us (bf16: 1040).
  PlanCore fp8 = core();
  fp8.tp_gather_bytes = 4e6;
  CHECK(tp_time(fp8, inside(4), fabric(), true, false, cal).total == Approx(920e-6));
  // Without sequence parallelism there is no all-gather: all-reduces in bf16, as before.
  CHECK(tp_time(fp8, inside(4), fabric(), false, false, cal).total == Approx(1.024e-3));
  // Overlapped behind 1 ms matmuls, a quarter of each half stays: forward 8.75 + 16.25 + 8.75 +
  // 16.25, backward 4 x 16.25: 115 us per layer, 230 us for 2.
  fp8.tp_hide = {1e-3, 1e-3, 1e-3, 1e-3};
  CHECK(tp_time(fp8, inside(4), fabric(), true, true, cal).exposed == Approx(230e-6));
}

TEST_CASE("cp_time: ring attention hides behind the attention core") {
  // 4 ranks, one per server: ring bandwidth 10 GB/s. A step: 5 us + 1 MB / 10 GB/s = 105 us.
  // Forward 2 + 3 x 105 = 317 us, backward 2 + 6 x 105 = 632 us. Attention 100 us forward:
  // exposed per layer (317 - 100) + (632 - 200) = 649 us; 2 layers: 1.298 ms of 1.898 ms.
  const CommTime t = cp_time(core(), across(4, 1), fabric());
  CHECK(t.exposed == Approx(1.298e-3));
  CHECK(t.total == Approx(1.898e-3));
  // Full recomputation runs the forward twice: 2 x (2 x 217 + 432) us = 1.732 ms exposed.
  PlanCore full = core();
  full.cp_fwd_passes = 2;
  CHECK(cp_time(full, across(4, 1), fabric()).exposed == Approx(1.732e-3));
}

TEST_CASE("ep_time: the slowest tier of the all-to-all sets its time") {
  // 8 ranks, 4 per server, 8 MB each. NVLink share 3/8 x 8e6 / 100e9 = 30 us; network share
  // 4/8 x 8e6 / 10e9 = 400 us. One all-to-all: 2 + 10 + 5 + 400 = 417 us; 2 MoE layers x 4 = 8.
  const EpTime t = ep_time(core(), across(8, 4), fabric());
  CHECK(t.comm.total == Approx(8 * 417e-6));
  CHECK(t.comm.exposed == t.comm.total);
  CHECK(t.per_tier[0] == Approx(8 * 30e-6));
  CHECK(t.per_tier[1] == Approx(8 * 400e-6));
  PlanCore dense = core();
  dense.moe_layers_per_stage = 0;
  CHECK(ep_time(dense, across(8, 4), fabric()).comm.total == 0);
  // Overlapped (DualPipe): another microbatch's compute hides the all-to-all; only the excess
  // shows, and none when the compute is longer.
  const EpTime hidden = ep_time(core(), across(8, 4), fabric(), true, 3e-3);
  CHECK(hidden.comm.total == Approx(8 * 417e-6));
  CHECK(hidden.comm.exposed == Approx(8 * 417e-6 - 3e-3));
  CHECK(ep_time(core(), across(8, 4), fabric(), true, 1.0).comm.exposed == 0);
}

TEST_CASE("ep_time: a flex dispatcher sends a token once to each other server it needs") {
  // 2 servers, 128 experts, top 8: a token misses the other server's 64 experts with
  // C(64, 8) / C(128, 8) = 0.0030959, so it crosses once (p = 0.9969041) instead of 4 times on
  // average: share 2 x 0.9969041 / 8 = 0.2492260.
  double miss = 1;
  for (int i = 0; i < 8; ++i) miss *= (64.0 - i) / (128.0 - i);
  CHECK(dispatch_server_share(128, 8, 2) == Approx(2 * (1 - miss) / 8));
  CHECK(dispatch_server_share(128, 8, 2) == Approx(0.2492260).epsilon(1e-6));
  // Inside one server, or one expert per token, nothing is saved; over many servers little is.
  CHECK(dispatch_server_share(128, 8, 1) == 1);
  CHECK(dispatch_server_share(64, 1, 8) == Approx(1));
  CHECK(dispatch_server_share(256, 8, 64) > 0.9);
  CHECK(dispatch_server_share(256, 8, 64) < 1);
  // The network share of the all-to-all above shrinks by it; NVLink's is the same.
  PlanCore flex = core();
  flex.ep_once_per_server = true;
  flex.experts = 128;
  flex.top_k = 8;
  const EpTime t = ep_time(flex, across(8, 4), fabric());
  CHECK(t.per_tier[0] == Approx(8 * 30e-6));
  CHECK(t.per_tier[1] == Approx(8 * 400e-6 * dispatch_server_share(128, 8, 2)));
  CHECK(t.comm.total == Approx(8 * (17e-6 + 400e-6 * dispatch_server_share(128, 8, 2))));
}

TEST_CASE("pp_hop_time: scatter/gather sends a TP slice, then all-gathers without SP") {
  // Send 2 MB across servers: 2 + 10 + 5 us + 2e6 / 10e9 = 217 us. Without sequence parallelism
  // the receiver all-gathers the 8 MB over TP 4: 2 + 3 + 3/4 x 80 = 65 us more.
  CHECK(pp_hop_time(core(), across(2, 1), inside(4), fabric(), true).total == Approx(217e-6));
  CHECK(pp_hop_time(core(), across(2, 1), inside(4), fabric(), false).total == Approx(282e-6));
  CHECK(pp_hop_time(core(), inside(1), inside(4), fabric(), false).total == 0);
}

TEST_CASE("pipeline_time: bubble (pp - 1) / vpp microbatches; sends in fill and drain") {
  // 1 s of work per microbatch, 10 ms per hop, pp 4, vpp 2, 8 microbatches.
  const PipelineTime overlapped = pipeline_time(1.0, 0.01, 4, 2, 8, true);
  CHECK(overlapped.bubble == Approx(1.5));    // 3 x 1.0 / 2
  CHECK(overlapped.exposed == Approx(0.14));  // 2 x (4 x 2 - 1) x 0.01
  CHECK(overlapped.total == Approx(0.32));    // 8 x 2 x 2 x 0.01
  const PipelineTime waiting = pipeline_time(1.0, 0.01, 4, 2, 8, false);
  CHECK(waiting.per_microbatch == Approx(1.04));  // + 2 x 2 sends
  CHECK(waiting.bubble == Approx(1.56));          // 3 x 1.04 / 2
  CHECK(waiting.exposed == Approx(0.32));         // every microbatch waits
  CHECK(pipeline_time(1.0, 0.01, 1, 1, 8, true).exposed == 0);
}

namespace {

/// 100M parameters per GPU, fp32 gradients (400 MB), bf16 parameters (200 MB), reduced over dp 4
/// with one GPU per server (ring bandwidth 10 GB/s).
PlanCore dp_core() {
  PlanCore c = core();
  c.params_gpu = 100e6;
  c.grad_bytes_per_param = 4;
  c.dense_grad_bytes = 4e8;
  c.dense_param_bytes = 2e8;
  c.dp_bucket_params = 40e6;
  return c;
}

PlanShapes dp_shapes() {
  PlanShapes sh;
  sh.grad = across(4, 1);
  sh.expert_grad = inside(1);
  return sh;
}

}  // namespace

TEST_CASE("dp_time: bucketed reductions, the backward window and the last bucket") {
  // 40M-parameter buckets: 3 buckets of 133.3 MB.
  const PlanCore c = dp_core();
  const PlanShapes sh = dp_shapes();
  // ZeRO-1: a reduce-scatter bucket 12 + 3 x 5 us + 3/4 x 133.3 MB / 10 GB/s = 10.027 ms, x 3 =
  // 30.081 ms; the gather 3 x (27 us + 5 ms) = 15.081 ms. Compute 30 ms: window 20 ms; the last
  // bucket (40% of the parameters) is exposed anyway: max(10.081, 12.032) + 15.081 ms.
  const CommTime z1 = dp_time(c, sh, fabric(), 1, 0.03, true);
  CHECK(z1.total == Approx(0.045162));
  CHECK(z1.exposed == Approx(0.0120324 + 0.015081));
  // ZeRO-0: ring all-reduce (20.042 ms a bucket) beats the tree (26.699 ms): 60.126 ms, of
  // which max(60.126 - 20, 0.4 x 60.126) = 40.126 ms exposed.
  const CommTime z0 = dp_time(c, sh, fabric(), 0, 0.03, true);
  CHECK(z0.algorithm == Algorithm::ring);
  CHECK(z0.total == Approx(0.060126));
  CHECK(z0.exposed == Approx(0.040126));
  // Without overlap it is all exposed.
  CHECK(dp_time(c, sh, fabric(), 0, 0.03, false).exposed == Approx(0.060126));
  // --overlap-param-gather: ZeRO-1's 15.081 ms gather runs under the next step's first forward
  // pass (10 ms of the 30), but its first bucket (40%, 6.032 ms) is exposed anyway.
  const CommTime hidden = dp_time(c, sh, fabric(), 1, 0.03, true, true);
  CHECK(hidden.total == Approx(z1.total));
  CHECK(hidden.exposed == Approx(0.0120324 + 0.4 * 0.015081));
  // A 2 ms forward pass (6 ms of compute) hides only 2 ms of it; the reduce-scatter, not
  // overlapped here, shows in full.
  CHECK(dp_time(c, sh, fabric(), 1, 0.006, false, true).exposed ==
        Approx(0.030081 + 0.015081 - 0.002));
  // ZeRO-0 has no gather to hide.
  CHECK(dp_time(c, sh, fabric(), 0, 0.03, true, true).exposed == Approx(z0.exposed));
  // A 60M-parameter embedding is a bucket of its own, the last the backward reduces: 60% of
  // the 30.081 ms reduce-scatter shows (18.05 ms), not the 40% of a 40M bucket.
  PlanCore embedded = c;
  embedded.embedding_bucket_params = 60e6;
  CHECK(dp_time(embedded, sh, fabric(), 1, 0.03, true).exposed ==
        Approx(0.6 * 0.030081 + 0.015081));
  // Smaller than a bucket, it changes nothing.
  embedded.embedding_bucket_params = 10e6;
  CHECK(dp_time(embedded, sh, fabric(), 1, 0.03, true).exposed == Approx(z1.exposed));
}

TEST_CASE("dp_time: an interleaved schedule reduces and gathers each model chunk on its own") {
  // The same 100M parameters as above (reduce-scatter 30.081 ms, gather 15.081 ms per step), now
  // in 4 model chunks on each of 4 pipeline stages, 8 microbatches: consecutive chunks' last
  // backwards (first forwards) are min(8, 4) = 4 chunk passes apart.
  PlanCore c = dp_core();
  c.pp = 4;
  c.vpp = 4;
  const PlanShapes sh = dp_shapes();
  // 30 ms of compute a microbatch: backward 20 ms, a chunk's 5 ms; 4 of them (20 ms) between two
  // chunks' reductions, each 7.52 ms: only the last chunk's, after all the compute, shows
  // (30.081 / 4 = 7.52025 ms). The gather: the first chunk's 3.77 ms (its one bucket is the
  // whole chunk) shows, the others hide behind 4 forward passes of 2.5 ms.
  const CommTime fast = dp_time(c, sh, fabric(), 1, 0.03, true, true);
  CHECK(fast.total == Approx(0.045162));
  CHECK(fast.exposed == Approx(0.00752025 + 0.00377025));
  // 6 ms a microbatch: chunks 4 x 1 ms apart in the backward, 4 x 0.5 ms in the forward; each
  // of the 3 later chunks' shares shows beyond that: 7.52 + 0.75 x (30.081 - 16) ms and 3.77 +
  // 0.75 x (15.081 - 8) ms.
  const CommTime slow = dp_time(c, sh, fabric(), 1, 0.006, true, true);
  CHECK(slow.exposed == Approx(0.018081 + 0.009081));
  // Without overlap nothing hides; a schedule without interleaving keeps the one-chunk rules.
  CHECK(dp_time(c, sh, fabric(), 1, 0.03, false, false).exposed == Approx(0.045162));
  c.vpp = 1;
  CHECK(dp_time(c, sh, fabric(), 1, 0.03, true, true).exposed ==
        Approx(0.0120324 + 0.4 * 0.015081));
}

namespace {

/// A small dense model: h 1024, 4 layers, 8 heads of 128, MLP 4096 (not gated), vocab 1000.
/// Per layer: attention 4 h^2 = 4,194,304, MLP 2 x 1024 x 4096 = 8,388,608, norms 2,048
/// parameters; forward matmul FLOPs per token 2 x 12,582,912 = 25,165,824; attention scores
/// 4 x 1024 = 4,096 FLOPs per token per unit of sequence; logits 2 x 1000 x 1024 = 2,048,000.
Model small_model() { return Model(test::dense_spec("small", 1024, 4, 8, 4096, 1000, false)); }

Plan one_gpu() {
  Plan p;
  p.zero = 0;
  return p;
}

/// Round numbers for the stage_compute tests: GEMMs at 50% (no small-matrix penalty), HBM at 50%.
Calibration round_calibration() {
  Calibration cal;
  cal.gemm_efficiency[static_cast<int>(Arch::hopper)] = 0.5;
  cal.gemm_half_dim = 0;
  cal.gemm_half_rows = cal.gemm_half_cols = cal.gemm_half_depth = 0;  // FP8 GEMMs at the ceiling
  cal.hbm_efficiency = 0.5;
  return cal;
}

/// A hopper GPU with a 1e15 FLOP/s bf16 peak and 1e12 B/s of HBM.
GpuSpec round_gpu() {
  GpuSpec gpu;
  gpu.arch = Arch::hopper;
  gpu.peak_flops = 1e15;
  gpu.hbm_bandwidth = 1e12;
  return gpu;
}

}  // namespace

TEST_CASE("stage_compute: matmuls at the GEMM efficiency, element-wise at the HBM rate") {
  // Peak 1e15 FLOP/s at 50% (no small-matrix penalty): 5e14. HBM 1e12 at 50%: 5e11 B/s.
  // Per token per layer, s = 1000: forward 25,165,824 + 4,096 x 1000 = 29,261,824 FLOPs, x 3 for
  // the backward: 87,785,472 / 5e14 = 175.570944 ns. Element-wise: 3 x (8 x 1024 + 2 x 4096)
  // elements x 2 bytes / 5e11 = 196.608 ns. Logits: 3 x 2,048,000 / 5e14 = 12.288 ns matmul,
  // 12 x 1000 / 5e11 = 24 ns element-wise. 1000 tokens, 4 layers.
  const Calibration cal = round_calibration();
  const GpuSpec gpu = round_gpu();
  JobSpec j;
  j.seq_len = 1000;
  const StageCompute w = stage_compute(small_model(), j, one_gpu(), cal, gpu, 4);
  CHECK(w.matmul == Approx(1000 * (4 * 175.570944e-9 + 12.288e-9)));
  CHECK(w.elementwise == Approx(1000 * (4 * 196.608e-9 + 24e-9)));
  CHECK(w.attention_fwd == Approx(1000 * 4096.0 * 1000 / 5e14));
  // Full recomputation repeats the forward: 4/3 of the layers' matmul time.
  Plan full = one_gpu();
  full.recompute = Recompute::full;
  CHECK(stage_compute(small_model(), j, full, cal, gpu, 4).matmul ==
        Approx(1000 * (4 * 175.570944e-9 * 4 / 3 + 12.288e-9)));
}

TEST_CASE("stage_compute: fp8 training runs the linear layers at the FP8 rate, the rest in bf16") {
  // As above, with FP8 peak 2e15 at 40%: 8e14. Per token per layer the linear layers' 3 x
  // 25,165,824 FLOPs take 94.371840 ns, attention's 3 x 4,096,000 at the bf16 5e14 24.576 ns;
  // the logits stay bf16 (12.288 ns); element-wise traffic stays 2-byte, and the FP8 casts add
  // 4 x (1024 + 3072 + 2 x 1024 + 4096) + 2 x (2 x 1024 + 4096) = 53,248 bytes: 106.496 ns.
  Calibration cal = round_calibration();
  cal.gemm_efficiency_fp8[static_cast<int>(Arch::hopper)] = 0.4;
  GpuSpec gpu = round_gpu();
  gpu.peak_flops_fp8 = 2e15;
  JobSpec j;
  j.seq_len = 1000;
  j.dtype = Dtype::fp8;
  const StageCompute w = stage_compute(small_model(), j, one_gpu(), cal, gpu, 4);
  CHECK(w.matmul == Approx(1000 * (4 * (94.37184e-9 + 24.576e-9) + 12.288e-9)));
  CHECK(w.elementwise == Approx(1000 * (4 * (196.608e-9 + 106.496e-9) + 24e-9)));
  // A GPU without FP8 tensor cores refuses fp8 training.
  GpuSpec a100 = gpu;
  a100.name = "a100-80gb";
  a100.peak_flops_fp8 = 0;
  CHECK_THROWS_WITH(validate(j, a100), Catch::Contains("fp8 training needs FP8 tensor cores"));
}

TEST_CASE("stage_memory: weights, gradients, Adam state, activations, logits") {
  // 4 x 12,584,960 + 1,024,000 embedding + 1,025,024 head and final norm = 52,388,864
  // parameters: bf16 weights 2 B, fp32 gradients 4 B, Adam 12 B each. Activations per layer
  // (1000 tokens, h 1024, no dropout): 8 x 1000 x 1024 replicated + 1000 x (4 x 1024 + 4 x 1024
  // + 4 x 4096) = 32,768,000 B, x 4 layers. Logits 1000 x 1000 x 4 B; 3 GiB reserved.
  const Calibration cal;
  JobSpec j;
  j.seq_len = 1000;
  const double params = 52388864;
  const MemoryBreakdown m = stage_memory(small_model(), j, one_gpu(), cal, 1);
  CHECK(m.weights == Approx(2 * params));
  CHECK(m.gradients == Approx(4 * params));
  CHECK(m.optimizer == Approx(12 * params));
  CHECK(m.activations == Approx(4 * 32768000.0));
  CHECK(m.other == Approx(3.0 * 1024 * 1024 * 1024 + 4e6));
  // ZeRO-1 over dp 4 shards the Adam state: 3 B per parameter.
  Plan z1 = one_gpu();
  z1.zero = 1;
  z1[Dim::dp] = 4;
  CHECK(stage_memory(small_model(), j, z1, cal, 1).optimizer == Approx(3 * params));
  // pp 2 over 5 layers: the first stage holds 2 layers and 2 microbatches in flight (1F1B), the
  // last 3 layers, one microbatch and the logits; the worse of the two is reported.
  ModelSpec five = small_model().spec;
  five.layers = 5;
  Plan pp2 = one_gpu();
  pp2[Dim::pp] = 2;
  const MemoryBreakdown m2 = stage_memory(Model(five), j, pp2, cal, 8);
  const double layer = 12584960;
  const double first = 2 * layer + 1024000, last = 3 * layer + 1025024;
  const double first_total = 18 * first + 2 * 2 * 32768000.0 + 3.0 * 1024 * 1024 * 1024;
  const double last_total = 18 * last + 3 * 32768000.0 + 3.0 * 1024 * 1024 * 1024 + 4e6;
  CHECK(m2.total() == Approx(std::max(first_total, last_total)));
}

TEST_CASE("activation memory: dropout masks, and FP8 copies of the linear layers' inputs") {
  const Calibration cal;
  JobSpec j;
  j.seq_len = 1000;
  ModelSpec drop = small_model().spec;
  drop.dropout = true;
  // Korthikanti et al.'s 34 s b h with its two 1-byte dropout masks: 10 x 1000 x 1024
  // replicated + 1000 x (4 x 1024 + 4 x 1024 + 4 x 4096) = 34,816,000 B per layer.
  CHECK(stage_memory(Model(drop), j, one_gpu(), cal, 1).activations == Approx(4 * 34816000.0));
  // fp8 training: the QKV and FC1 inputs in 1 byte (6 h replicated), the projection's input
  // copied once more (5 q), FC2's input in 1 byte (2 + 1 per ffn element of a non-gated MLP):
  // 6 x 1000 x 1024 + 1000 x (5 x 1024 + 4 x 1024 + 3 x 4096) = 27,648,000 B per layer.
  JobSpec f = j;
  f.dtype = Dtype::fp8;
  CHECK(stage_memory(small_model(), f, one_gpu(), cal, 1).activations == Approx(4 * 27648000.0));
}
