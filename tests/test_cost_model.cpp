#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "topoplan/cost_dims.hpp"
#include "topoplan/cost_model.hpp"
#include "topoplan/error.hpp"
#include "topoplan/gemm.hpp"
#include "topoplan/search.hpp"
#include "topoplan/stage_memory.hpp"

using namespace topoplan;

namespace {

Plan plan(int tp, int pp, int dp, int mb = 1, const char* order = "tp-cp-ep-dp-pp") {
  Plan p = test::plan(tp, pp, dp, order);
  p.micro_batch = mb;
  return p;
}

using test::eval;

}  // namespace

// The seed's central example: 128 GPUs = 16 x dgx-h100, an 80-layer model, TP 8 x PP 4 x DP 4.
TEST_CASE("central example: TP inside a server is far faster than TP across eight servers") {
  Cluster c = test::preset_cluster("dgx-h100", 16);
  Model m = test::preset_model("llama3-70b");
  JobSpec j;  // seq 4096, global batch 512, bf16, ZeRO-1
  Evaluation good = eval(c, m, j, plan(8, 4, 4, 1, "tp-dp-pp"));
  Evaluation bad = eval(c, m, j, plan(8, 4, 4, 1, "dp-pp-tp"));
  CHECK(good.shapes[Dim::tp].span_tier == 0);     // TP group = one server
  CHECK(bad.shapes[Dim::tp].span_tier == 1);      // TP group = eight servers of one leaf
  CHECK(bad.shapes[Dim::tp].per_domain[0] == 1);  // one GPU per server
  CHECK(bad.step_time > 2.0 * good.step_time);
  // Where the time goes: the bad mapping's extra time is exposed TP communication.
  CHECK(bad.time.compute == Approx(good.time.compute));
  CHECK(bad.time.tp > 8.0 * good.time.tp);
  CHECK(bad.time.tp - good.time.tp > 0.85 * (bad.step_time - good.step_time));
  // Same memory: only the placement changed.
  CHECK(bad.memory.total() == Approx(good.memory.total()));
}

TEST_CASE("central example, golden numbers for the good mapping") {
  Cluster c = test::preset_cluster("dgx-h100", 16);
  Model m = test::preset_model("llama3-70b");
  JobSpec j;  // flash attention, no TP overlap, DP overlapped with the backward pass
  Evaluation e = eval(c, m, j, plan(8, 4, 4));
  // 512 sequences / (dp 4 x micro-batch 1) = 128 microbatches.
  REQUIRE(e.microbatches == 128);
  // Matmuls run at 989e12 x 0.617 x 1024 / (1024 + 64): the smallest per-GPU dimension is the
  // attention output's 8192 / 8 = 1024.
  const double rate = 989e12 * 0.617 * 1024.0 / 1088.0;
  // Per token per layer on one GPU: (2 x (Q,O 8192^2 + K,V 8192x1024 + 3 x 8192x28672)) / 8 =
  // 213,909,504 matmul FLOPs + 4 x 8192 x 4096 / 8 = 16,777,216 for scores and values, x3 for
  // forward and backward.
  const double matmul = 3 * (213909504.0 + 16777216.0) / rate;
  // Element-wise: 8 h replicated (no sequence parallelism) + 3 x 28672 / 8 for SwiGLU = 76,288
  // elements forward, x3, 2 bytes each, at 3.35 TB/s x 0.8.
  const double elementwise = 3 * 76288.0 * 2 / (3.35e12 * 0.8);
  // Logits on the last stage: 3 x 2 x 128256 x 8192 / 8 FLOPs and a 12-byte fp32 softmax.
  const double logits = 3 * 2 * 128256.0 * 8192 / 8 / rate + 12 * 128256.0 / 8 / (3.35e12 * 0.8);
  const double t_mb = 4096 * (20 * (matmul + elementwise) + logits);
  CHECK(e.time.compute == Approx(128 * t_mb).epsilon(1e-9));
  CHECK(e.compute.matmul + e.compute.elementwise == Approx(e.time.compute));
  // TP: 4 all-reduces per layer of 4096 x 8192 x 2 B inside a server, by NVLS (tested in
  // test_collectives): 60 us + 1.75 x 67108864 / 487.8e9.
  const double ar = 60e-6 + 1.75 * 67108864 / 487.8e9;
  CHECK(e.time.tp == Approx(128 * 80 * ar).epsilon(1e-9));
  // PP: stages are 32 GPUs apart, across servers; each TP rank sends its 1/8 slice, 32 us +
  // 8388608 / 43e9, then the slices are all-gathered over NVLink (no sequence parallelism):
  // NCCL's Simple protocol, 8.4 + 7 x 3.4 us + 7/8 x 67108864 / 369e9. The fill and the drain
  // each wait for 3 of them.
  const double p2p = 32e-6 + 8388608 / 43e9 + 32.2e-6 + 0.875 * 67108864 / 369e9;
  CHECK(e.time.pp == Approx(6 * p2p).epsilon(1e-9));
  CHECK(e.comm[Dim::pp] == Approx(128 * 2 * p2p).epsilon(1e-9));
  // 1F1B bubble: (pp - 1) x one microbatch's compute and TP time.
  CHECK(e.time.bubble == Approx(3 * (t_mb + 80 * ar)).epsilon(1e-9));
  // The per-step host work is the calibration's, once per step.
  CHECK(e.time.host == Calibration{}.step_overhead);
  // The parts add up.
  CHECK(e.time.total() == Approx(e.step_time).epsilon(1e-12));
  CHECK(e.tokens_per_s == Approx(512 * 4096 / e.step_time));
  CHECK(e.mfu == Approx(e.model_flops_per_gpu / 989e12));
}

TEST_CASE("per-step host work: a fixed time per step, whatever the plan, beside the schedule") {
  Cluster c = test::preset_cluster("dgx-h100", 16);
  Model m = test::preset_model("llama3-70b");
  JobSpec j;
  Calibration none, half;
  none.step_overhead = 0;
  half.step_overhead = 0.5;
  for (const Plan& p : {plan(8, 4, 4), plan(8, 2, 8, 2), plan(4, 4, 8, 1, "tp-dp-pp")}) {
    const Mapping map = Mapping::from_order(p);
    const Evaluation a = evaluate(c, m, j, p, map, none);
    const Evaluation b = evaluate(c, m, j, p, map, half);
    CHECK(a.time.host == 0);
    CHECK(b.time.host == 0.5);
    CHECK(b.step_time == Approx(a.step_time + 0.5).epsilon(1e-12));
    CHECK(b.time.compute == a.time.compute);
    CHECK(b.time.bubble == a.time.bubble);
  }
}

TEST_CASE("memory per GPU: weights, gradients, optimizer state and activations") {
  Cluster c = test::preset_cluster("dgx-h100", 16);
  Model m = test::preset_model("llama3-70b");
  JobSpec j;
  Evaluation e = eval(c, m, j, plan(8, 4, 4));
  // First stage: 20 layers x 855,654,400 / 8 + embedding 128256 x 8192 / 8 = 2,270,478,336.
  // Last stage: same body + output layer 128256 x 8192 / 8 + final norm 8192 / 8: 2,270,479,360.
  const double params = (20 * 855654400.0 + 128256.0 * 8192 + 8192) / 8;
  // The first stage holds min(pp, microbatches) = 4 microbatches in flight, the last only one,
  // so the first stage is the most loaded; its weights are bf16 and its gradients fp32.
  const double first = (20 * 855654400.0 + 128256.0 * 8192) / 8;
  CHECK(e.memory.weights == Approx(2 * first));
  CHECK(e.memory.gradients == Approx(4 * first));
  CHECK(e.memory.optimizer == Approx(12 * first / 4));  // ZeRO-1 over dp 4
  // Activations per layer per microbatch: 8 s b h replicated (Llama has no dropout masks) +
  // s b (4q + 4kv + 6 ffn) / t.
  const double tokens = 4096;
  const double layer = 8 * tokens * 8192 + tokens * (4 * 8192 + 4 * 1024 + 6 * 28672) / 8.0;
  CHECK(e.memory.activations == Approx(layer * 20 * 4));
  CHECK(params > first);
  CHECK(e.fits);
}

TEST_CASE("interleaving keeps at most every microbatch in flight") {
  // Korthikanti et al.'s factor 1 + (pp - 1) / (pp x vpp) on min(pp, m) microbatches, capped at
  // m: with m <= pp the interleaved warm-up runs every chunk's forward first, m whole microbatches.
  Model m = test::preset_model("llama3-70b");  // 80 layers: 20 per stage at pp 4
  JobSpec j;
  Plan p = plan(8, 4, 4);
  p.vpp = 2;
  const double layer = layer_activation_bytes(m, j, p, p.recompute);
  const double many = stage_memory(m, j, p, Calibration{}, 32).activations;
  CHECK(many == Approx(20 * layer * 4 * (1 + 3.0 / 8)));  // min(4, 32) x 1.375 = 5.5
  const double few = stage_memory(m, j, p, Calibration{}, 4).activations;
  CHECK(few == Approx(20 * layer * 4));  // 4 x 1.375 > 4: every one of the 4 microbatches
  const double two = stage_memory(m, j, p, Calibration{}, 2).activations;
  CHECK(two == Approx(20 * layer * 2));
}

TEST_CASE("a plan that does not fit is marked infeasible") {
  Cluster c = test::preset_cluster("dgx-h100", 1);
  Model m = test::preset_model("llama3.1-405b");
  JobSpec j;
  Evaluation e = eval(c, m, j, plan(8, 1, 1));
  CHECK_FALSE(e.fits);
  CHECK(e.memory.total() > c.gpu().memory_bytes);
}

TEST_CASE("ZeRO stages and recomputation change memory as documented") {
  Cluster c = test::preset_cluster("dgx-h100", 16);
  Model m = test::preset_model("llama3-70b");
  JobSpec j;
  Plan p = plan(8, 4, 4);
  p.zero = 0;
  Evaluation z0 = eval(c, m, j, p);
  p.zero = 3;
  Evaluation z3 = eval(c, m, j, p);
  CHECK(z3.memory.weights == Approx(z0.memory.weights / 4));
  CHECK(z3.memory.gradients == Approx(z0.memory.gradients / 4));
  CHECK(z3.memory.optimizer == Approx(z0.memory.optimizer / 4));
  p.zero = 1;
  p.recompute = Recompute::full;
  Evaluation full = eval(c, m, j, p);
  p.recompute = Recompute::none;
  Evaluation none = eval(c, m, j, p);
  CHECK(full.memory.activations < none.memory.activations / 5);
  // Full recomputation runs the forward twice: 4/3 of the compute for the layers.
  CHECK(full.time.compute > 1.3 * none.time.compute);
  CHECK(full.time.tp == Approx(1.5 * none.time.tp));  // 6 collectives per layer instead of 4
  CHECK(full.mfu < none.mfu);
}

TEST_CASE("invalid plans are rejected with a one-line reason") {
  Cluster c = test::preset_cluster("dgx-h100", 16);
  Model m = test::preset_model("llama3-70b");
  JobSpec j;
  CHECK(check_plan(c, m, j, plan(16, 1, 8)) == PlanError::tp_kv_heads);
  CHECK(check_plan(c, m, j, plan(128, 1, 1)) == PlanError::tp_heads);
  CHECK(check_plan(c, m, j, plan(1, 128, 1)) == PlanError::pp_layers);
  CHECK(check_plan(c, m, j, plan(8, 4, 2)) == PlanError::world_mismatch);
  CHECK(check_plan(c, m, j, plan(8, 1, 16, 64)) == PlanError::batch);
  CHECK(describe(PlanError::tp_heads, c, m, j, plan(128, 1, 1)) ==
        "tp: 128 does not divide llama3-70b's 64 attention heads");
  CHECK(describe(PlanError::world_mismatch, c, m, j, plan(8, 4, 2)) ==
        "tp/pp/dp: 8 x 4 x 2 = 64 GPUs, but the cluster has 128");
}

TEST_CASE("the bubble shrinks as the global batch grows") {
  Cluster c = test::preset_cluster("dgx-h100", 16);
  Model m = test::preset_model("llama3-70b");
  JobSpec small, large;
  small.global_batch = 64;
  large.global_batch = 1024;
  Evaluation a = eval(c, m, small, plan(8, 4, 4));
  Evaluation b = eval(c, m, large, plan(8, 4, 4));
  CHECK(a.time.bubble / a.step_time > 4 * (b.time.bubble / b.step_time));
  CHECK(b.mfu > a.mfu);
}

TEST_CASE("gradients in bf16 (--grad-reduce-bf16): half the gradient memory and DP traffic") {
  Cluster c = test::preset_cluster("dgx-h100", 16);
  Model m = test::preset_model("llama3-70b");
  JobSpec j;
  Plan p = plan(8, 4, 4);
  p.zero = 0;  // DP all-reduces the gradients only (ZeRO-1 would add a bf16 parameter gather)
  const Evaluation fp32 = eval(c, m, j, p);
  j.grad_reduce_bf16 = true;
  const Evaluation bf16 = eval(c, m, j, p);
  CHECK(bf16.memory.gradients == Approx(fp32.memory.gradients / 2));
  CHECK(bf16.memory.weights == Approx(fp32.memory.weights));
  CHECK(bf16.memory.optimizer == Approx(fp32.memory.optimizer));
  CHECK(bf16.comm[Dim::dp] < 0.6 * fp32.comm[Dim::dp]);
  // fp16 training reduces in fp16 already: the setting changes nothing there.
  j.dtype = Dtype::fp16;
  const Evaluation fp16 = eval(c, m, j, p);
  j.grad_reduce_bf16 = false;
  CHECK(eval(c, m, j, p).memory.gradients == Approx(fp16.memory.gradients));
}

TEST_CASE("a gradient accumulation pass (--grad-accumulation-pass) after each micro-batch") {
  Cluster c = test::preset_cluster("dgx-h100", 1);
  Model m = test::preset_model("llama3-8b");
  JobSpec j;
  j.global_batch = 64;
  Plan p = plan(1, 1, 8);  // pp 1: every layer on the stage; 64 / 8 = 8 micro-batches
  const Evaluation fused = eval(c, m, j, p);
  j.grad_accumulation_pass = true;
  const Evaluation pass = eval(c, m, j, p);
  const Calibration cal;
  const double layer_params = static_cast<double>(m.counts.layer_params);
  const double per_microbatch = static_cast<double>(m.spec.layers) * layer_params *
                                cal.grad_accumulation_bytes_per_param /
                                (c.gpu().hbm_bandwidth * cal.hbm_efficiency);
  REQUIRE(fused.microbatches == 8);
  CHECK(pass.compute.elementwise - fused.compute.elementwise ==
        Approx(8 * per_microbatch).epsilon(1e-9));
  CHECK(pass.compute.matmul == Approx(fused.compute.matmul));
  CHECK(pass.step_time - fused.step_time == Approx(8 * per_microbatch).epsilon(1e-6));
  CHECK(pass.memory.total() == Approx(fused.memory.total()));
}

TEST_CASE("in-network reduction (SHARP) on the leaf speeds up DP all-reduces, not the rest") {
  ClusterSpec s = load_cluster("dgx-h100", "test");
  s.nodes = 16;
  const Cluster plain(s, "test");
  s.tiers[1].in_network_reduction = true;
  const Cluster sharp(s, "test");
  Model m = test::preset_model("llama3-70b");
  JobSpec j;
  Plan p = plan(8, 4, 4);
  p.zero = 0;  // DP all-reduces (ZeRO-1's reduce-scatter + all-gather have no CollNet path here)
  const Evaluation ring = eval(plain, m, j, p);
  const Evaluation in_network = eval(sharp, m, j, p);
  CHECK(in_network.algorithms[Dim::dp] == Algorithm::sharp);
  // DP 4, one member per server: the ring sends 2 x 3/4 of the gradients across, SHARP once; the
  // per-bucket latencies are lower too (one tier up and down against 6 ring steps).
  const double ratio = in_network.comm[Dim::dp] / ring.comm[Dim::dp];
  CHECK(ratio < 1.0 / 1.5);
  CHECK(ratio > 0.6);
  CHECK(in_network.comm[Dim::tp] == Approx(ring.comm[Dim::tp]));
  CHECK(in_network.comm[Dim::pp] == Approx(ring.comm[Dim::pp]));
  p.zero = 1;
  CHECK(eval(sharp, m, j, p).comm[Dim::dp] == Approx(eval(plain, m, j, p).comm[Dim::dp]));
}

TEST_CASE("a collective hidden behind compute still takes its SMs' share of that compute") {
  Cluster c = test::preset_cluster("dgx-h100", 16);
  Model m = test::preset_model("llama3-70b");
  JobSpec j;  // DP overlapped with the backward pass
  const Plan p = plan(8, 4, 4);
  Calibration none;
  none.comm_sm_fraction = 0;
  const Evaluation free = evaluate(c, m, j, p, Mapping::from_order(p), none);
  const Evaluation charged = evaluate(c, m, j, p, Mapping::from_order(p), Calibration{});
  const double share = Calibration{}.comm_sm_fraction;
  REQUIRE(share > 0.1);
  REQUIRE(share < 0.16);  // 16-20 CTAs of a Hopper's 132 SMs
  // DP: the same traffic; the step pays the exposed part and share x the hidden part.
  const double total = free.comm[Dim::dp];
  REQUIRE(charged.comm[Dim::dp] == Approx(total));
  REQUIRE(total - free.time.dp > 0.01);  // mostly hidden
  CHECK(charged.time.dp == Approx(free.time.dp + share * (total - free.time.dp)));
  CHECK(charged.step_time - free.step_time == Approx(charged.time.dp - free.time.dp));
  // Nothing else moves: TP (its overlap has its own estimate) and the compute.
  CHECK(charged.time.tp == Approx(free.time.tp));
  CHECK(charged.time.compute == Approx(free.time.compute));
  // Not overlapped: all of it shows either way, so there is nothing more to charge.
  j.overlap_grad_reduce = false;
  j.overlap_param_gather = false;
  const Evaluation serial = evaluate(c, m, j, p, Mapping::from_order(p), Calibration{});
  CHECK(serial.time.dp == Approx(serial.comm[Dim::dp]));
}

TEST_CASE("op-level selective checkpointing (torchtitan selective-op) sits between none and full") {
  Cluster c = test::preset_cluster("dgx-h100", 16);
  Model m = test::preset_model("llama3-70b");
  JobSpec j;
  Plan p = plan(8, 4, 4);
  auto with = [&](Recompute r) {
    p.recompute = r;
    return eval(c, m, j, p);
  };
  const Evaluation none = with(Recompute::none), sel = with(Recompute::selective);
  const Evaluation op = with(Recompute::selective_op), full = with(Recompute::full);
  // It reruns every second matmul of a layer (K, output, up): more than attention alone, less
  // than the whole forward.
  CHECK(op.compute.matmul > sel.compute.matmul);
  CHECK(op.compute.matmul < full.compute.matmul);
  CHECK(op.compute.elementwise > none.compute.elementwise);
  CHECK(op.mfu < none.mfu);
  // It keeps about one tensor in two: less than Megatron's selective, more than full.
  CHECK(op.memory.activations < sel.memory.activations);
  CHECK(op.memory.activations > 2 * full.memory.activations);
  CHECK(op.memory.weights == Approx(none.memory.weights));
  // Its policy saves reduce-scatter outputs, not all-gathers or all-reduces: the recomputed
  // matmuls gather their inputs again (torchtitan parallelize_llama.py, _save_list).
  CHECK(op.time.tp == Approx((p.sequence_parallel ? 5.0 : 6.0) / 4.0 * none.time.tp));
  p.sequence_parallel = !p.sequence_parallel;
  const Evaluation op_flip = with(Recompute::selective_op), none_flip = with(Recompute::none);
  CHECK(op_flip.time.tp == Approx((p.sequence_parallel ? 5.0 : 6.0) / 4.0 * none_flip.time.tp));
}

TEST_CASE("eager mode (--eager) costs element-wise passes, not matmuls") {
  Cluster c = test::preset_cluster("dgx-h100", 1);
  Model m = test::preset_model("llama3-8b");
  JobSpec j;
  j.global_batch = 64;
  const Plan p = plan(1, 1, 8);
  const Evaluation compiled = eval(c, m, j, p);
  j.eager = true;
  const Evaluation eager = eval(c, m, j, p);
  CHECK(eager.compute.matmul == Approx(compiled.compute.matmul));
  CHECK(eager.compute.elementwise > 2 * compiled.compute.elementwise);
  CHECK(eager.step_time > compiled.step_time);
  CHECK(eager.memory.total() == Approx(compiled.memory.total()));
}

TEST_CASE(
    "FlashAttention-2 kernels (--fa2-attention) slow Hopper's attention, more at long context") {
  Cluster c = test::preset_cluster("dgx-h100", 1);
  Model m = test::preset_model("llama3-8b");
  auto slowdown = [&](int seq) {
    JobSpec j;
    j.seq_len = seq;
    j.global_batch = 8;
    Plan p = plan(1, 1, 8);
    p.recompute = Recompute::full;
    const Evaluation fused = eval(c, m, j, p);
    j.fa2_attention = true;
    const Evaluation fa2 = eval(c, m, j, p);
    CHECK(fa2.compute.elementwise == Approx(fused.compute.elementwise));
    return fa2.compute.matmul / fused.compute.matmul;
  };
  const double short_ctx = slowdown(2048), long_ctx = slowdown(32768);
  CHECK(short_ctx > 1.0);
  CHECK(long_ctx > short_ctx + 0.2);  // attention is most of the FLOPs at 32k tokens
}

TEST_CASE("FP8 TP all-gathers (torchtitan's Float8 TP) cut TP traffic only for fp8 with SP") {
  Cluster c = test::preset_cluster("dgx-h100", 4);
  Model m = test::preset_model("llama3-70b");
  Plan p = plan(8, 1, 4);
  p.sequence_parallel = true;
  JobSpec j;
  j.dtype = Dtype::fp8;
  const Evaluation bf16_gather = eval(c, m, j, p);
  j.fp8_tp_all_gather = true;
  const Evaluation fp8_gather = eval(c, m, j, p);
  // The forward's 2 of 8 collective halves per layer move half the bytes: TP time drops by
  // nearly 1/8 (less: each collective's latency stays), compute does not change.
  const double ratio = fp8_gather.comm[Dim::tp] / bf16_gather.comm[Dim::tp];
  CHECK(ratio < 1.0);
  CHECK(ratio > 0.875 - 1e-9);
  CHECK(fp8_gather.compute.matmul == Approx(bf16_gather.compute.matmul));
  // Off for bf16 training, and without sequence parallelism (all-reduces, no all-gather).
  j.dtype = Dtype::bf16;
  const Evaluation bf16_job = eval(c, m, j, p);
  j.fp8_tp_all_gather = false;
  CHECK(bf16_job.comm[Dim::tp] == Approx(eval(c, m, j, p).comm[Dim::tp]));
  j.dtype = Dtype::fp8;
  j.fp8_tp_all_gather = true;
  p.sequence_parallel = false;
  const Evaluation no_sp = eval(c, m, j, p);
  j.fp8_tp_all_gather = false;
  CHECK(no_sp.comm[Dim::tp] == Approx(eval(c, m, j, p).comm[Dim::tp]));
}

namespace {

/// Megatron-Bridge's Llama 3 70B recipe on one NVL72 rack of `cluster` (64 GPUs, TP 2, PP 4,
/// VP 5, 8k tokens), evaluated in FP8 and in `d`; `j` is the job in `d`.
struct FormatPair {
  Cluster c;
  Model m;
  Plan p;
  JobSpec j;
  Evaluation fp8, other;
};
FormatPair llama70b_rack_fp8_and(const char* cluster, Dtype d) {
  FormatPair r{test::preset_cluster(cluster, 1),
               test::preset_model("llama3-70b"),
               plan(2, 4, 8),
               test::job(8192, 256),
               {},
               {}};
  r.p.vpp = 5;
  r.p.sequence_parallel = true;
  r.j.gpus = 64;
  r.j.dtype = Dtype::fp8;
  r.fp8 = eval(r.c, r.m, r.j, r.p);
  r.j.dtype = d;
  r.other = eval(r.c, r.m, r.j, r.p);
  return r;
}

/// One layer's saved activation bytes (no recomputation) were the job trained in `d`.
double saved_bytes(const Model& m, JobSpec j, const Plan& p, Dtype d) {
  j.dtype = d;
  return layer_activation_bytes(m, j, p, Recompute::none);
}

}  // namespace

TEST_CASE("NVFP4 training: FP4 linear layers, cheaper casts and saved inputs, FP4 GPUs only") {
  auto [c, m, p, j, fp8, fp4] = llama70b_rack_fp8_and("gb300-nvl72", Dtype::nvfp4);
  // The linear layers run at the FP4 peak (3x the FP8 one on GB300) times its own efficiency;
  // attention and the logits stay bf16, so the matmul time drops by less than the peak ratio.
  const Calibration cal;
  const int u = static_cast<int>(Arch::blackwell_ultra);
  const double linear_speedup = c.gpu().peak_flops_fp4 * cal.gemm_efficiency_fp4[u] /
                                (c.gpu().peak_flops_fp8 * cal.gemm_efficiency_fp8[u]);
  CHECK(linear_speedup > 1.5);
  CHECK(fp4.compute.matmul < fp8.compute.matmul);
  CHECK(fp8.compute.matmul / fp4.compute.matmul < linear_speedup);
  CHECK(fp4.step_time < fp8.step_time);
  // Quantizing to NVFP4 writes 0.5625 bytes per element where FP8 writes 1, but the copies an FP8
  // recipe only transposes NVFP4 quantizes again from bf16.
  const double fp8_bytes = quantization_bytes(m, 2, cal, Dtype::fp8),
               fp4_bytes = quantization_bytes(m, 2, cal, Dtype::nvfp4);
  CHECK(fp4_bytes < fp8_bytes);
  CHECK(fp4_bytes > 0.7 * fp8_bytes);
  // The saved quantized inputs take 0.5625 bytes: fewer activation bytes than fp8, fewer than bf16.
  const double bf16_act = saved_bytes(m, j, p, Dtype::bf16);
  const double fp8_act = saved_bytes(m, j, p, Dtype::fp8);
  const double fp4_act = saved_bytes(m, j, p, Dtype::nvfp4);
  CHECK(fp4_act < fp8_act);
  CHECK(fp8_act < bf16_act);
  // TP traffic stays bf16.
  CHECK(fp4.comm[Dim::tp] == Approx(fp8.comm[Dim::tp]));
  // Against the 16-bit peak an NVFP4 run can pass 100%; against the FP4 peak it cannot.
  CHECK(fp4.mfu_format_peak == Approx(fp4.model_flops_per_gpu / c.gpu().peak_flops_fp4));
  CHECK(fp4.mfu_format_peak < 1.0);
  // A GPU without FP4 tensor cores cannot train in NVFP4.
  CHECK_THROWS_WITH(validate(j, test::preset_cluster("dgx-h100", 1).gpu()),
                    Catch::Contains("nvfp4 training needs FP4 tensor cores"));
  CHECK_NOTHROW(validate(j, c.gpu()));
}

TEST_CASE("FP8 attention: fused attention's matmuls at the FP8 rate, nothing else changes") {
  auto [c, m, p, j, fp8, mx] = llama70b_rack_fp8_and("gb200-nvl72", Dtype::mxfp8);
  const Calibration cal;
  const PlanCore off = prepare(c, m, j, p, cal);
  j.fp8_attention = true;
  CHECK_NOTHROW(validate(j, c.gpu()));
  const PlanCore on = prepare(c, m, j, p, cal);
  // The same fraction of the FP8 peak as bf16 attention reaches of the 16-bit one: on GB200
  // (5 dense FP8 PFLOP/s, 2.5 bf16) attention takes half the time.
  const double ratio = c.gpu().peak_flops / c.gpu().peak_flops_fp8;
  CHECK(ratio == Approx(0.5));
  CHECK(on.t_attention_fwd == Approx(off.t_attention_fwd * ratio));
  // Forward and the backward's two passes, no recomputation: three attention passes per layer.
  CHECK(off.t_matmul - on.t_matmul ==
        Approx(3 * on.layers_per_stage * (off.t_attention_fwd - on.t_attention_fwd)));
  CHECK(on.t_elementwise == Approx(off.t_elementwise));
  const Evaluation faster = eval(c, m, j, p);
  CHECK(faster.step_time < mx.step_time);
  CHECK(faster.comm[Dim::tp] == Approx(mx.comm[Dim::tp]));
  // Only with FP8 multiplies, and only in fused attention.
  j.dtype = Dtype::bf16;
  CHECK_THROWS_WITH(validate(j, c.gpu()),
                    Catch::Contains("expected fp8, mxfp8 or nvfp4 training on FP8 tensor cores"));
  j.dtype = Dtype::fp8;
  CHECK_NOTHROW(validate(j, c.gpu()));
  j.dtype = Dtype::nvfp4;  // NVFP4 linear layers, FP8 attention (MLPerf v5.1's 405B on GB200)
  CHECK_NOTHROW(validate(j, c.gpu()));
  j.fp8_attention = false;
  const PlanCore fp4_off = prepare(c, m, j, p, cal);
  j.fp8_attention = true;
  CHECK(prepare(c, m, j, p, cal).t_attention_fwd == Approx(fp4_off.t_attention_fwd * ratio));
  j.dtype = Dtype::fp8;
  j.fa2_attention = true;
  CHECK_THROWS_WITH(validate(j, c.gpu()), Catch::Contains("got FlashAttention-2"));
}

TEST_CASE("MXFP8 training: FP8 multiplies, block-scaled quantizations, Blackwell GPUs only") {
  auto [c, m, p, j, fp8, mx] = llama70b_rack_fp8_and("gb200-nvl72", Dtype::mxfp8);
  // The multiplies run on the same FP8 tensor cores at the same rate: the matmul time is FP8's.
  CHECK(mx.compute.matmul == Approx(fp8.compute.matmul));
  // Each quantization writes 1 + 1/32 bytes per element, and the copies the per-tensor recipe
  // only transposes are quantized again from bf16 (read 2, write 1.03125 instead of read 1,
  // write 1): more element-wise traffic than FP8's.
  const Calibration cal;
  const double fp8_bytes = quantization_bytes(m, 2, cal, Dtype::fp8),
               mx_bytes = quantization_bytes(m, 2, cal, Dtype::mxfp8);
  CHECK(mx_bytes > fp8_bytes);
  CHECK(mx_bytes < 1.5 * fp8_bytes);
  CHECK(mx.compute.elementwise > fp8.compute.elementwise);
  CHECK(mx.step_time > fp8.step_time);
  // Saved quantized inputs at 1.03125 bytes: a little above FP8's 1, below bf16's 2.
  const double fp8_act = saved_bytes(m, j, p, Dtype::fp8);
  const double bf16_act = saved_bytes(m, j, p, Dtype::bf16);
  const double mx_act = saved_bytes(m, j, p, Dtype::mxfp8);
  CHECK(mx_act > fp8_act);
  CHECK(mx_act < bf16_act);
  // --fp8-param-gather with MXFP8 weights: Megatron-core gathers them in bf16 into the gradient
  // buffer (--reuse-grad-buf-for-mxfp8-param-ag) and casts each to MXFP8, both ways, once a step:
  // the gather moves what a bf16 one does, and the step pays the cast of the stage's layer
  // weights (read 2 bytes, write 2 x 1.03125) at the HBM efficiency.
  Plan z = plan(1, 4, 16);
  j.fp8_param_gather = false;
  const PlanCore bf16_gather = prepare(c, m, j, z, cal);
  j.fp8_param_gather = true;
  CHECK(mxfp8_params_gathered_in_bf16(j));
  const PlanCore mx_gather = prepare(c, m, j, z, cal);
  CHECK(mx_gather.dense_param_bytes == Approx(bf16_gather.dense_param_bytes));
  const double layer_params = most_loaded_stage(m, z).layer_params;
  CHECK(mx_gather.optimizer_time - bf16_gather.optimizer_time ==
        Approx(layer_params * (2.0 + 2 * 1.03125) / (c.gpu().hbm_bandwidth * cal.hbm_efficiency)));
  CHECK(layer_params > 0.9 * static_cast<double>(m.counts.total_params) /
                           4);  // a quarter of the model, less the ends
  j.dtype = Dtype::fp8;  // per-tensor FP8 weights travel in FP8 and are cast by the optimizer
  CHECK_FALSE(mxfp8_params_gathered_in_bf16(j));
  j.dtype = Dtype::mxfp8;
  j.fp8_param_gather = false;
  // MFU is against the 16-bit peak; mfu_format_peak against the FP8 one the multiplies run at.
  CHECK(mx.mfu == Approx(mx.model_flops_per_gpu / c.gpu().peak_flops));
  CHECK(mx.mfu_format_peak == Approx(mx.model_flops_per_gpu / c.gpu().peak_flops_fp8));
  CHECK(mx.mfu_format_peak < mx.mfu);
  // Hopper has FP8 tensor cores but no block-scaled ones.
  CHECK_THROWS_WITH(validate(j, test::preset_cluster("dgx-h100", 1).gpu()),
                    Catch::Contains("mxfp8 training needs block-scaled FP8 tensor cores"));
  CHECK_NOTHROW(validate(j, c.gpu()));
}

TEST_CASE("FP8 parameter all-gathers move the layers' weights at 1 byte, the rest at 2") {
  Cluster c = test::preset_cluster("dgx-h100", 4);
  Model m = test::preset_model("llama3-8b");
  Plan p = plan(1, 4, 8);  // embedding on the first stage, head on the last
  JobSpec j;
  j.dtype = Dtype::fp8;
  const Calibration cal;
  const PlanCore bf16_gather = prepare(c, m, j, p, cal);
  j.fp8_param_gather = true;
  const PlanCore fp8_gather = prepare(c, m, j, p, cal);
  // The most loaded stage (the first: 8 layers and the 128256 x 4096 embedding) gathers its
  // layers' weights at 1 byte and the embedding at 2.
  const double layers = most_loaded_stage(m, p).layer_params;
  const double embedding = fp8_gather.params_gpu - layers;
  CHECK(embedding == Approx(128256.0 * 4096).epsilon(0.01));
  CHECK(bf16_gather.dense_param_bytes == Approx(2.0 * fp8_gather.params_gpu));
  CHECK(fp8_gather.dense_param_bytes == Approx(layers + 2.0 * embedding));
  // nvfp4 training gathers the layers' weights in NVFP4 under --fp4-param-gather (0.5625 bytes),
  // and neither flag applies to the other format.
  j.dtype = Dtype::nvfp4;
  const PlanCore fp8_flag_on_fp4 = prepare(c, m, j, p, cal);
  CHECK(fp8_flag_on_fp4.dense_param_bytes == Approx(bf16_gather.dense_param_bytes));
  j.fp8_param_gather = false;
  j.fp4_param_gather = true;
  const PlanCore fp4_gather = prepare(c, m, j, p, cal);
  CHECK(fp4_gather.dense_param_bytes == Approx(0.5625 * layers + 2.0 * embedding));
  j.dtype = Dtype::fp8;
  CHECK(prepare(c, m, j, p, cal).dense_param_bytes == Approx(bf16_gather.dense_param_bytes));
  // Gradients are reduced as before; bf16 training ignores the flag.
  CHECK(fp8_gather.dense_grad_bytes == Approx(bf16_gather.dense_grad_bytes));
  j.dtype = Dtype::bf16;
  CHECK(prepare(c, m, j, p, cal).dense_param_bytes == Approx(bf16_gather.dense_param_bytes));
}

TEST_CASE("DP buckets: Megatron-core's max(40M, 1M x DP) unless the job sets them") {
  Cluster c = test::preset_cluster("dgx-h100", 64);
  Model m = test::preset_model("llama3-8b");
  const Calibration cal;
  JobSpec j;
  j.global_batch = 512;
  CHECK(prepare(c, m, j, plan(8, 1, 8), cal).dp_bucket_params == Approx(40e6));
  CHECK(prepare(c, m, j, plan(1, 1, 512), cal).dp_bucket_params == Approx(512e6));
  Plan cp = plan(2, 1, 64);
  cp[Dim::cp] = 4;  // the DP group counts the CP ranks: 256
  CHECK(prepare(c, m, j, cp, cal).dp_bucket_params == Approx(256e6));
  j.dp_bucket_params = 104857600;  // Apex's 200 MB of bf16 gradients
  CHECK(prepare(c, m, j, plan(1, 1, 512), cal).dp_bucket_params == Approx(104857600.0));
  // The embedding (128256 x 4096, over TP 2) is its own bucket on the stage that holds it.
  CHECK(prepare(c, m, j, plan(2, 1, 256), cal).embedding_bucket_params ==
        Approx(128256.0 * 4096 / 2));
  // With pipeline stages, only when the first stage (the embedding's) is the most loaded.
  Plan staged = plan(1, 4, 128);
  staged.first_stage_layers = 10;  // 10 / 8 / 8 / 6 of the 32 layers
  staged.last_stage_layers = 6;
  CHECK(prepare(c, m, j, staged, cal).embedding_bucket_params == Approx(128256.0 * 4096));
  staged.first_stage_layers = 6;  // 6 / 8 / 8 / 10: the last stage holds the most
  staged.last_stage_layers = 10;
  CHECK(prepare(c, m, j, staged, cal).embedding_bucket_params == 0.0);
  // Fewer, larger buckets pay fewer ring latencies: DP time falls at 512 ranks.
  j.dp_bucket_params = 40000000;
  const Evaluation small = eval(c, m, j, plan(1, 1, 512));
  j.dp_bucket_params = 0;
  const Evaluation large = eval(c, m, j, plan(1, 1, 512));
  CHECK(total_comm(large, Dim::dp) < total_comm(small, Dim::dp));
}

TEST_CASE("TP overlap hides a collective only behind the matmul next to it") {
  Cluster c = test::preset_cluster("dgx-h100", 16);
  JobSpec j;
  j.tp_comm_overlap = true;
  const double frac = Calibration{}.tp_overlap_exposed_fraction;
  Plan p = plan(8, 4, 4);
  p.sequence_parallel = true;
  // 70B: nearly every matmul outlasts its all-gather or reduce-scatter (only the attention
  // output's forward does not: its reduce-scatter, 191 us with NCCL's Simple latencies, against
  // a 115 us matmul): close to the calibrated fraction stays exposed, 6.5% above it.
  const Evaluation big = eval(c, test::preset_model("llama3-70b"), j, p);
  CHECK(big.time.tp >= frac * big.comm[Dim::tp] * (1 - 1e-9));
  CHECK(big.time.tp < 1.08 * frac * big.comm[Dim::tp]);
  // 8B in FP8 at TP 8: the QKV and attention-output matmuls are shorter than the collectives
  // around them, so more than the fraction stays exposed; without overlap all of it.
  j.dtype = Dtype::fp8;
  const Evaluation small = eval(c, test::preset_model("llama3-8b"), j, p);
  CHECK(small.time.tp > 1.2 * frac * small.comm[Dim::tp]);
  j.tp_comm_overlap = false;
  const Evaluation none = eval(c, test::preset_model("llama3-8b"), j, p);
  CHECK(small.time.tp < none.time.tp);
  CHECK(none.time.tp == Approx(none.comm[Dim::tp]));
}

TEST_CASE("the evaluation names each ring's NCCL protocol, and none for other algorithms") {
  Cluster c = test::preset_cluster("dgx-h100", 16);
  const Evaluation good = eval(c, test::preset_model("llama3-70b"), JobSpec{}, plan(8, 4, 4));
  // TP inside a server: NVLS (no protocol); DP's large gradient buckets: ring Simple; PP: sends.
  CHECK(good.algorithms[Dim::tp] == Algorithm::nvls);
  CHECK(good.protocols[Dim::tp] == Protocol::none);
  CHECK(good.algorithms[Dim::dp] == Algorithm::ring);
  CHECK(good.protocols[Dim::dp] == Protocol::simple);
  CHECK(good.protocols[Dim::pp] == Protocol::none);
  CHECK(collective_name(good.algorithms[Dim::dp], good.protocols[Dim::dp]) == "ring Simple");
  CHECK(collective_name(Algorithm::nvls, Protocol::none) == "nvls");
}

TEST_CASE("the slowest stage: the last runs the logits, unless an uneven split leaves it lighter") {
  Cluster c = test::preset_cluster("dgx-h100", 16);
  const Calibration cal;
  JobSpec j;
  j.seq_len = 8192;
  j.global_batch = 16;
  auto matmul = [&](const Model& m, const Plan& p, double layers) {
    return stage_compute(m, j, p, cal, c.gpu(), layers).matmul;
  };
  // Llama 3.1 405B, TP 8 x PP 16: 126 layers as 7 / 8 x 14 / 7. The logits (a 128,256-entry
  // vocabulary) weigh less than a layer, so the middle stages' 8 layers set the pace, not the
  // last stage's 7 plus the logits.
  const Model big = test::preset_model("llama3.1-405b");
  const Plan p = plan(8, 16, 1);
  const Evaluation e = eval(c, big, j, p);
  const double logits = matmul(big, p, 0);
  REQUIRE(matmul(big, p, 8) - logits > matmul(big, p, 7));
  CHECK(e.compute.matmul == Approx(e.microbatches * (matmul(big, p, 8) - logits)));
  // A small model with the same vocabulary: the logits outweigh several layers, and the last
  // stage is the slowest even with one layer fewer (9 layers as 1 / 3 x 2 / 2 on 4 stages).
  const Model small(test::dense_spec("small", 1024, 9, 8, 4096, 128256, true));
  const Plan q = plan(8, 4, 4);
  const Evaluation f = eval(c, small, j, q);
  REQUIRE(matmul(small, q, 2) > matmul(small, q, 3) - matmul(small, q, 0));
  CHECK(f.compute.matmul == Approx(f.microbatches * matmul(small, q, 2)));
  // The same plan with each TP group across eight servers: a layer's collectives now outweigh
  // the logits, and a middle stage (3 layers, 3 layers' collectives) sets the pace, not the
  // last (2 layers, the logits, 2 layers' collectives).
  const Plan spread = plan(8, 4, 4, 1, "dp-pp-tp");
  const Evaluation g = eval(c, small, j, spread);
  REQUIRE(g.shapes[Dim::tp].span_tier > 0);
  const PlanCore core = prepare(c, small, j, spread, cal);
  CHECK(core.layers_per_stage == 2);
  CHECK(core.other_layers == 3);
  const Mapping map = Mapping::from_order(spread);
  const CommTime last_tp =
      tp_time(core, plan_shapes(c, map).dims[Dim::tp], make_fabric(c, cal), false, false, cal);
  CHECK(g.time.tp == Approx(g.microbatches * last_tp.exposed * 3 / 2));
  CHECK(g.compute.matmul ==
        Approx(g.microbatches * (matmul(small, spread, 3) - matmul(small, spread, 0))));
  CHECK(g.time.compute + g.time.tp > g.microbatches * (matmul(small, spread, 2) + last_tp.exposed));
}

namespace {

/// Llama 3 70B, FP8, FSDP over 64 GB200 at micro-batch 2: Megatron-Bridge's benchmark setting
/// (perf_recipes/llama/gb200/llama3.py), which offloads 40 layers' activations.
struct OffloadCase {
  Cluster c = [] {
    ClusterSpec s = load_cluster("gb200-nvl72", "test");
    return Cluster(s, "gb200-nvl72");
  }();
  Model m = test::preset_model("llama3-70b");
  JobSpec j = [] {
    JobSpec x;
    x.seq_len = 8192;
    x.global_batch = 256;
    x.dtype = Dtype::fp8;
    x.grad_reduce_bf16 = true;  // the recipes' grad_reduce_in_fp32 = False
    x.gpus = 64;
    return x;
  }();
  Plan p = [] {
    Plan x = test::plan(1, 1, 64);
    x.zero = 3;
    x.micro_batch = 2;
    return x;
  }();
};

}  // namespace

TEST_CASE("activation offloading frees the offloaded layers' activations for host-link copies") {
  OffloadCase k;
  const Evaluation kept = eval(k.c, k.m, k.j, k.p);
  Plan off = k.p;
  off.offload_layers = 40;
  const Evaluation e = eval(k.c, k.m, k.j, off);
  // Half the 80 layers' activations leave the GPU; the rest of memory is unchanged.
  CHECK(e.memory.activations == Approx(kept.memory.activations / 2));
  CHECK(e.memory.total() - e.memory.activations ==
        Approx(kept.memory.total() - kept.memory.activations));
  CHECK_FALSE(kept.fits);
  CHECK(e.fits);
  // Each copy of a layer's activations (16,384 tokens) at 225 GB/s x 0.8 outlasts the next
  // layer's forward but not its backward: the forward's excess shows, once per offloaded layer.
  const double bytes = kept.memory.activations / 80;
  const double copy = bytes / (225e9 * 0.8);
  const double fwd = kept.time.compute / 2 / 80 / 3;  // per microbatch and layer, at most
  CHECK(copy > fwd);
  CHECK(e.time.offload > 0);
  CHECK(e.time.offload < 2 * 40 * copy);  // the backward's copies hide
  CHECK(e.time.compute == Approx(kept.time.compute));
  CHECK(e.step_time == Approx(kept.step_time + e.time.offload));
  CHECK(e.time.total() == Approx(e.step_time));
}

TEST_CASE("activation offloading follows Megatron-core's rules and needs a host link") {
  OffloadCase k;
  Plan p = k.p;
  p.offload_layers = 80;  // every layer: Megatron-core allows fewer than the model's
  CHECK(check_plan(k.c, k.m, k.j, p) == PlanError::offload);
  CHECK(describe(PlanError::offload, k.c, k.m, k.j, p) ==
        "offload_layers: 80: expected fewer than llama3-70b's 80 layers");
  p.offload_layers = 40;
  p.recompute = Recompute::full;
  CHECK(check_plan(k.c, k.m, k.j, p) == PlanError::offload);
  p.recompute = Recompute::none;
  p[Dim::pp] = 2;
  p[Dim::dp] = 32;
  CHECK(check_plan(k.c, k.m, k.j, p) == PlanError::offload);
  CHECK(
      describe(PlanError::offload, k.c, k.m, k.j, p).starts_with("offload_layers: 40 needs pp 1"));
  // A GPU file without host_link_GBps: nothing to copy over.
  ClusterSpec s = load_cluster("gb200-nvl72", "test");
  s.gpu.host_link_bandwidth = 0;
  const Cluster no_link(s, "no-link");
  CHECK(check_plan(no_link, k.m, k.j, k.p) == PlanError::none);
  Plan q = k.p;
  q.offload_layers = 40;
  CHECK(check_plan(no_link, k.m, k.j, q) == PlanError::offload);
}

TEST_CASE("the search offloads the fewest layers that fit where recomputing would cost more") {
  OffloadCase k;
  SearchOptions o;
  o.fixed[Dim::tp] = 1;
  o.fixed[Dim::cp] = 1;
  o.fixed[Dim::ep] = 1;
  o.fixed[Dim::pp] = 1;
  o.fixed[Dim::dp] = 64;
  o.micro_batch = 2;
  o.zero = 3;
  o.top_k = 3;
  const SearchResult r = search(k.c, k.m, k.j, Calibration{}, o);
  REQUIRE(!r.top.empty());
  const Candidate& best = r.top.front();
  CHECK(best.eval.fits);
  CHECK(best.plan.recompute == Recompute::none);
  REQUIRE(best.plan.offload_layers > 0);
  // One layer fewer does not fit.
  Plan fewer = best.plan;
  --fewer.offload_layers;
  CHECK_FALSE(prepare(k.c, k.m, k.j, fewer, Calibration{}).fits);
  // Recomputing instead (the fastest that fits) is slower.
  for (const Candidate& other : r.top)
    if (other.plan.offload_layers == 0) CHECK(other.eval.step_time > best.eval.step_time);
  // Off when the job says so (--no-activation-offload, or a stack without it).
  JobSpec no = k.j;
  no.activation_offload = false;
  const SearchResult r2 = search(k.c, k.m, no, Calibration{}, o);
  REQUIRE(!r2.top.empty());
  CHECK(r2.top.front().plan.offload_layers == 0);
  CHECK(r2.top.front().eval.step_time > best.eval.step_time);
}

namespace {

/// Mixtral 8x7B (32 MoE layers, top 2, hidden 4096) with its experts over one DGX H100.
struct MoeCase {
  Cluster c = test::preset_cluster("dgx-h100", 1);
  Model m = test::preset_model("mixtral-8x7b");
  JobSpec j = test::job(4096, 64);
  Plan p = [] {
    Plan x = test::plan(1, 1, 8, "tp-cp-ep-dp-pp", 1, 8);
    x.zero = 1;
    return x;
  }();
  Evaluation with(const Calibration& cal, bool graphs = false) const {
    JobSpec k = j;
    k.cuda_graphs = graphs;
    REQUIRE(check_plan(c, m, k, p) == PlanError::none);
    return evaluate(c, m, k, p, Mapping::from_order(p), cal);
  }
};

}  // namespace

TEST_CASE("MoE layers: the routed token copies' HBM traffic, top_k per token per MoE layer") {
  MoeCase k;
  Calibration none;
  none.moe_routed_copy_bytes = 0;
  none.moe_layer_host = 0;
  Calibration some = none;
  some.moe_routed_copy_bytes = 50;
  const Evaluation a = k.with(none), b = k.with(some);
  // 8 microbatches of 4,096 tokens, 32 layers, 2 copies of 4,096 elements, 50 bytes each, at
  // 3.35 TB/s x 0.8: nothing else moves.
  const double bytes = 8.0 * 4096 * 32 * 2 * 4096 * 50;
  CHECK(b.compute.elementwise - a.compute.elementwise == Approx(bytes / (3.35e12 * 0.8)));
  CHECK(b.compute.matmul == Approx(a.compute.matmul));
  CHECK(b.time.ep == Approx(a.time.ep));
  // A dense model has no routed copies.
  const Model dense = test::preset_model("llama3-8b");
  Plan dp8 = test::plan(1, 1, 8);
  dp8.zero = 1;
  const Evaluation d0 = evaluate(k.c, dense, k.j, dp8, Mapping::from_order(dp8), none);
  const Evaluation d1 = evaluate(k.c, dense, k.j, dp8, Mapping::from_order(dp8), some);
  CHECK(d1.step_time == d0.step_time);
}

TEST_CASE("MoE layers launched eagerly: a microbatch takes at least their host time") {
  MoeCase k;
  Calibration cal;
  cal.moe_routed_copy_bytes = 0;
  cal.moe_layer_host = 0;
  const Evaluation gpu = k.with(cal);
  CHECK(gpu.time.moe_host == 0);
  // A host slower than the GPU: each of the 8 microbatches takes 32 x the host time, and the
  // wait is what the GPU work leaves of it.
  const double per_mb = (gpu.time.compute + gpu.time.tp + gpu.time.cp + gpu.time.ep) / 8;
  cal.moe_layer_host = 2 * per_mb / 32;
  const Evaluation host = k.with(cal);
  CHECK(host.time.moe_host == Approx(8 * per_mb));
  CHECK(host.time.compute + host.time.ep + host.time.moe_host ==
        Approx(8 * 32 * cal.moe_layer_host));
  CHECK(host.step_time == Approx(gpu.step_time + host.time.moe_host));
  CHECK(host.time.total() == Approx(host.step_time));
  // A host faster than the GPU hides; CUDA graphs take the launches off it.
  cal.moe_layer_host = 0.5 * per_mb / 32;
  CHECK(k.with(cal).time.moe_host == 0);
  cal.moe_layer_host = 2 * per_mb / 32;
  const Evaluation graphed = k.with(cal, true);
  CHECK(graphed.time.moe_host == 0);
  CHECK(graphed.step_time == Approx(gpu.step_time));
  // Dense layers never wait: nothing syncs on routing.
  const Model dense = test::preset_model("llama3-8b");
  Plan dp8 = test::plan(1, 1, 8);
  dp8.zero = 1;
  CHECK(evaluate(k.c, dense, k.j, dp8, Mapping::from_order(dp8), cal).time.moe_host == 0);
}

TEST_CASE("multi-token prediction: its layer, projection and logits run on the last stage") {
  ModelSpec s = test::dense_spec("mtp", 4096, 32, 32, 14336, 128256, true);
  const Model plain(s);
  s.mtp_layers = 1;
  const Model mtp(s);
  const Cluster c = test::preset_cluster("dgx-h100", 1);
  const JobSpec j = test::job(4096, 64);
  Plan p = test::plan(1, 4, 2);
  p.zero = 1;
  const Calibration cal;
  const GpuSpec& gpu = c.gpu();
  // The last stage's head: without MTP the logits (a stage of no layers computes only them).
  const StageCompute head = stage_compute(plain, j, p, cal, gpu, 0);
  const StageCompute eight = stage_compute(plain, j, p, cal, gpu, 8);
  const double layer = stage_compute(plain, j, p, cal, gpu, 9).matmul - eight.matmul;
  const StageCompute last = stage_compute(mtp, j, p, cal, gpu, 8);
  // One more layer and the logits again, and the 2h x h projection (a fifth of a layer's
  // linear FLOPs at most here).
  const double extra = last.matmul - eight.matmul;
  CHECK(extra > layer + head.matmul);
  CHECK(extra < 1.2 * layer + head.matmul);
  CHECK(last.head_matmul == Approx(head.head_matmul + extra));
  // The other stages do not run it.
  CHECK(last.without_head().matmul == Approx(eight.without_head().matmul));
  // Its parameters sit on the last stage: 32 / 4 layers each, the module beside the head.
  const StageParams a = stage_params(plain, p), b = stage_params(mtp, p);
  CHECK(b.first == a.first);
  CHECK(b.middle == a.middle);
  CHECK(b.last - a.last == Approx(static_cast<double>(mtp.counts.mtp_params)));
  // The step: the last stage is now the slowest; fewer layers there balance it.
  const Evaluation even = test::eval(c, mtp, j, p);
  CHECK(even.step_time > test::eval(c, plain, j, p).step_time);
  Plan lighter = p;
  lighter.first_stage_layers = 9;
  lighter.last_stage_layers = 7;
  CHECK(test::eval(c, mtp, j, lighter).step_time < even.step_time);
  // Model FLOPs count it (Megatron-Bridge's flop_utils counts MTP layers and logits too).
  CHECK(even.model_flops_per_gpu * even.step_time >
        test::eval(c, plain, j, p).model_flops_per_gpu * test::eval(c, plain, j, p).step_time);
}

TEST_CASE("recomputed modules keep less activation memory and compute a little more") {
  const Model ds = test::preset_model("deepseek-v3");
  const Cluster c = test::preset_cluster("hgx-h800", 2);
  JobSpec j = test::job(4096, 64);
  j.dtype = Dtype::fp8;
  Plan p = test::plan(1, 1, 16, "tp-cp-ep-dp-pp", 1, 16);
  p.zero = 1;
  const double tokens = 4096, h = 7168;
  const double keep = layer_activation_bytes(ds, j, p, Recompute::none);
  const StageCompute base = stage_compute(ds, j, p, Calibration{}, c.gpu(), 4);
  // The norms' outputs: the QKV and MLP inputs, FP8 copies (1 byte) of the full width.
  j.recompute_modules = kRecomputeLayernorm;
  CHECK(keep - layer_activation_bytes(ds, j, p, Recompute::none) == Approx(2 * tokens * h));
  CHECK(stage_compute(ds, j, p, Calibration{}, c.gpu(), 4).elementwise > base.elementwise);
  // MLA's Q, K and V (topoplan's 2 q_dim + 4 kv_dim bytes per token), its latents kept instead.
  j.recompute_modules = kRecomputeMlaUpProj;
  const double qkv = 2.0 * ds.counts.q_dim + 4.0 * ds.counts.kv_dim;
  const double latents = 2.0 * (1536 + 512 + 64);
  CHECK(keep - layer_activation_bytes(ds, j, p, Recompute::none) ==
        Approx(tokens * (qkv - latents)));
  const StageCompute up = stage_compute(ds, j, p, Calibration{}, c.gpu(), 4);
  CHECK(up.matmul > base.matmul);
  CHECK(up.matmul < 1.15 * base.matmul);  // the up-projections are a small part of a layer
  // The experts' SwiGLU output (the FC2 input, FP8): 58 of 61 layers, 8 routed + 1 shared x 2048.
  j.recompute_modules = kRecomputeMoeAct;
  CHECK(keep - layer_activation_bytes(ds, j, p, Recompute::none) ==
        Approx(tokens * 58.0 / 61.0 * 9 * 2048));
  // Under full recomputation a layer keeps its input only, modules or not; none are rerun.
  j.recompute_modules = kRecomputeLayernorm | kRecomputeMlaUpProj | kRecomputeMoeAct;
  Plan full = p;
  full.recompute = Recompute::full;
  JobSpec none = j;
  none.recompute_modules = 0;
  CHECK(stage_compute(ds, j, full, Calibration{}, c.gpu(), 4).matmul ==
        Approx(stage_compute(ds, none, full, Calibration{}, c.gpu(), 4).matmul));
  // Nor in the layers a partial full recomputation keeps (Megatron's modules are selective's).
  Plan partial = full;
  partial.recompute_layers = 2;
  CHECK(stage_compute(ds, j, partial, Calibration{}, c.gpu(), 4).elementwise ==
        Approx(stage_compute(ds, none, partial, Calibration{}, c.gpu(), 4).elementwise));
  CHECK(stage_memory(ds, j, partial, Calibration{}, 4).activations ==
        Approx(stage_memory(ds, none, partial, Calibration{}, 4).activations));
  // Names: Megatron-core's, comma-separated; anything else is an input error naming the flag.
  CHECK(parse_recompute_modules("moe_act,layernorm", "--recompute-modules") ==
        (kRecomputeMoeAct | kRecomputeLayernorm));
  CHECK(recompute_modules_string(kRecomputeMoeAct | kRecomputeLayernorm) == "layernorm,moe_act");
  CHECK(recompute_modules_string(0) == "none");
  CHECK(parse_recompute_modules("none", "x") == 0);
  CHECK_THROWS_WITH(parse_recompute_modules("mlp", "--recompute-modules"),
                    Catch::Contains("--recompute-modules") && Catch::Contains("'mlp'"));
}

TEST_CASE("the job's multi-token-prediction count replaces the model's, and the model's fills it") {
  ModelSpec m = test::preset_model("deepseek-v3").spec;
  JobSpec j;
  apply_mtp_layers(m, j, "x");
  CHECK(m.mtp_layers == 1);  // -1: the model's own
  CHECK(j.mtp_layers == 1);
  j.mtp_layers = 0;
  apply_mtp_layers(m, j, "x");
  CHECK(m.mtp_layers == 0);
  const Model none(m);
  CHECK(none.counts.mtp_params == 0);
  CHECK(none.counts.mtp_layers == 0);
  j.mtp_layers = kMaxMtpLayers + 1;
  CHECK_THROWS_WITH(apply_mtp_layers(m, j, "--mtp-layers"),
                    Catch::StartsWith("--mtp-layers: expected a whole number"));
  j.mtp_layers = -2;
  CHECK_THROWS(apply_mtp_layers(m, j, "--mtp-layers"));
  // Trained without its module, DeepSeek-V3's step is shorter on topoplan's split (2 / 4 x 14 /
  // 3, whose last stage, with the module, is the slowest).
  Cluster c = test::preset_cluster("hgx-h800", 256);
  JobSpec t = test::job(4096, 15360);
  t.dtype = Dtype::fp8;
  Plan p;
  p[Dim::pp] = 16;
  p[Dim::ep] = 64;
  p[Dim::dp] = 128;
  p.zero = 1;
  const Model with = test::preset_model("deepseek-v3");
  const Evaluation a = test::eval(c, none, t, p), b = test::eval(c, with, t, p);
  CHECK(a.step_time < b.step_time);
}
