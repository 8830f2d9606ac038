#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "topoplan/check.hpp"
#include "topoplan/inference_report.hpp"

using namespace topoplan;

namespace {

using test::plan;

InferenceEval run(const Cluster& c, const Model& m, const InferenceJob& j, const Plan& p,
                  const Calibration& cal = Calibration{}) {
  REQUIRE(check_inference_plan(c, m, p) == PlanError::none);
  return evaluate_inference(c, m, j, p, Mapping::from_order(p), cal);
}

Model llama2_7b() { return Model(test::dense_spec("llama2-7b", 4096, 32, 32, 11008, 32000, true)); }

}  // namespace

TEST_CASE("the seed's arithmetic: 2 ms of exposed communication per token down to 0.5 ms") {
  // Llama-3-70B at 8-way TP on one DGX H100, batch 1. Make the per-token TP communication
  // exactly 2.0 ms on one interconnect and 0.5 ms on a faster one (160 all-reduces per token).
  Cluster c = test::preset_cluster("dgx-h100", 1);
  Model m = test::preset_model("llama3-70b");
  InferenceJob j;
  j.prompt_len = 512;
  j.output_len = 128;
  Calibration cal;
  cal.collective_base_latency = 0;
  cal.links[static_cast<int>(Link::nvlink4)].step_latency = 0;
  cal.decode_collective_overhead.fill(0);
  const double bytes_only = run(c, m, j, plan(8, 1, 1), cal).decode.tp;
  REQUIRE(bytes_only < 0.5e-3);
  auto with_comm = [&](double per_token) {
    Calibration k = cal;
    k.decode_collective_overhead.fill((per_token - bytes_only) / 160.0);
    return run(c, m, j, plan(8, 1, 1), k);
  };
  InferenceEval slow = with_comm(2.0e-3), fast = with_comm(0.5e-3);
  CHECK(slow.decode.tp == Approx(2.0e-3));
  CHECK(fast.decode.tp == Approx(0.5e-3));
  const double rest = slow.token_latency - slow.decode.tp;  // memory + overhead: unchanged
  CHECK(fast.token_latency - fast.decode.tp == Approx(rest));
  CHECK(fast.decode_tokens_per_s / slow.decode_tokens_per_s ==
        Approx((rest + 2.0e-3) / (rest + 0.5e-3)));
  CHECK(slow.decode_tokens_per_s == Approx(1.0 / slow.token_latency));
}

TEST_CASE("Llama-2-7B on H100: within 15% of the published latencies, and why 8x buys ~1.6x") {
  // NVIDIA NeMo docs, TensorRT-LLM, 128 in / 20 out, batch 1: TP 1 153.8 ms, TP 8 97.6 ms.
  Cluster c = test::preset_cluster("dgx-h100", 1);
  Model m = llama2_7b();
  InferenceJob j;
  j.prompt_len = 128;
  j.output_len = 20;
  InferenceEval tp1 = run(c, m, j, plan(1, 1, 8));
  InferenceEval tp8 = run(c, m, j, plan(8, 1, 1));
  CHECK(tp1.end_to_end == Approx(153.8e-3).epsilon(0.15));
  CHECK(tp8.end_to_end == Approx(97.6e-3).epsilon(0.15));
  const double speedup = tp1.end_to_end / tp8.end_to_end;
  CHECK(speedup > 1.3);
  CHECK(speedup < 2.0);
  // The explanation: TP 8 divides the weight reads by 8, but the per-layer overhead stays and
  // 64 latency-bound all-reduces per token are added; together they dominate the token.
  CHECK(tp8.weight_read == Approx(tp1.weight_read / 8).epsilon(0.02));
  CHECK(tp8.decode.overhead == Approx(tp1.decode.overhead));
  CHECK(tp8.decode.overhead + tp8.decode.tp > 3 * tp8.decode.memory);
  CHECK(tp8.comm_share > 0.2);
}

TEST_CASE("decode with TP across servers ranks far below TP inside a server, and check flags it") {
  Cluster c = test::preset_cluster("dgx-h100", 2);
  Model m = test::preset_model("llama3-70b");
  InferenceJob j;
  j.prompt_len = 1024;
  j.output_len = 256;
  InferenceSearchOptions o;
  o.top_k = 50;
  InferenceSearchResult r = search_inference(c, m, j, Calibration{}, o);
  REQUIRE_FALSE(r.top.empty());
  CHECK(r.top.front().eval.shapes[Dim::tp].span_tier == 0);
  const double best = r.top.front().eval.token_latency;
  for (const auto& cand : r.top)
    if (cand.plan[Dim::tp] == 8 && cand.eval.shapes[Dim::tp].span_tier == 1)
      CHECK(cand.eval.token_latency > 1.25 * best);
  // The same degrees, TP taken across the two servers.
  InferenceContext ctx{c, m, j, Calibration{}};
  Plan across = plan(8, 1, 2, "dp-tp");
  CheckResult bad = run_inference_check(ctx, across, Mapping::from_order(across), CheckOptions{});
  CHECK_FALSE(bad.passed());
  bool tier = false;
  for (const auto& f : bad.findings) tier = tier || f.rule == "tp-tier";
  CHECK(tier);
  Plan inside = plan(8, 1, 2);
  CHECK(run_inference_check(ctx, inside, Mapping::from_order(inside), CheckOptions{}).passed());
}

TEST_CASE("inference memory: weights and the KV cache for the batch at full length") {
  Cluster c = test::preset_cluster("dgx-h100", 1);
  Model m = test::preset_model("llama3-70b");
  InferenceJob j;
  j.prompt_len = 4096;
  j.output_len = 4096;
  j.batch = 64;
  InferenceEval e = run(c, m, j, plan(8, 1, 1));
  // KV: 64 x 8192 tokens x 80 layers x 2 x 1024 (8 KV heads x 128) x 2 B / 8 GPUs = 21.5 GB.
  CHECK(e.memory_kv == Approx(64.0 * 8192 * 80 * 2 * 1024 * 2 / 8));
  j.kv_dtype = Dtype::fp8;
  CHECK(run(c, m, j, plan(8, 1, 1)).memory_kv == Approx(e.memory_kv / 2));
  j.batch = 512;
  CHECK_FALSE(run(c, m, j, plan(8, 1, 1)).fits);
}

TEST_CASE("sliding-window layers cache only their window: gpt-oss's KV cache and decode reads") {
  Cluster c = test::preset_cluster("dgx-h100", 1);
  Model oss = test::preset_model("gpt-oss-120b");
  ModelSpec no_window = oss.spec;
  no_window.sliding_layers = 0;
  no_window.sliding_window = 0;
  const Model full(no_window);
  InferenceJob j;
  j.prompt_len = 32768;
  j.output_len = 1024;
  j.batch = 8;
  const InferenceEval e = run(c, oss, j, plan(4, 1, 2)), f = run(c, full, j, plan(4, 1, 2));
  // Half the layers keep 128 of 33,792 tokens: the cache is (1 + 128 / 33792) / 2 of the full one.
  CHECK(e.memory_kv == Approx(f.memory_kv * (0.5 + 0.5 * 128.0 / 33792)));
  CHECK(e.kv_read < f.kv_read);
  CHECK(e.ttft < f.ttft);  // prefill attends to fewer keys
  CHECK(e.memory_weights == Approx(f.memory_weights));
}

TEST_CASE(
    "MoE inference: experts sharded over ep, all-to-alls per MoE layer, only active experts read") {
  Cluster c = test::preset_cluster("dgx-h100", 2);
  Model m = test::preset_model("mixtral-8x7b");
  InferenceJob j;
  j.batch = 1;
  InferenceEval no_ep = run(c, m, j, plan(8, 1, 2));
  Plan p = plan(8, 1, 2);
  p[Dim::ep] = 2;
  InferenceEval ep = run(c, m, j, p);
  CHECK(no_ep.decode.ep == 0);
  CHECK(ep.decode.ep > 0);
  CHECK(ep.memory_weights < no_ep.memory_weights);
  // Batch 1, top-2 of 8 experts: a step reads a quarter of the experts (x ep replicas' tokens).
  CHECK(no_ep.weight_read <
        0.5 * static_cast<double>(m.counts.total_params) * 2 / 8 / (3.35e12 * 0.8));
  Plan dense = plan(8, 1, 2);
  dense[Dim::ep] = 2;
  CHECK(check_inference_plan(c, test::preset_model("llama3-8b"), dense) == PlanError::ep_dense);
}

TEST_CASE("decode reads the weights divided by tp, not by tp x pp, and the explanation says so") {
  // Issue 15.4: a token passes the pp stages one after another, each reading its 1/pp of the
  // layers: per token, pp stages x (layers / pp) / tp = layers / tp. Only tp cuts the read.
  Cluster c = test::preset_cluster("dgx-h100", 2);
  Model m = test::preset_model("llama3-70b");
  InferenceJob j;
  j.batch = 8;
  const InferenceEval tp4 = run(c, m, j, plan(4, 1, 4, "tp-dp-pp"));
  const InferenceEval tp4pp4 = run(c, m, j, plan(4, 4, 1, "tp-pp-dp"));
  const InferenceEval tp8 = run(c, m, j, plan(8, 1, 2, "tp-dp-pp"));
  CHECK(tp4pp4.weight_read == Approx(tp4.weight_read).epsilon(0.06));  // + the head per stage
  CHECK(tp8.weight_read == Approx(tp4.weight_read / 2).epsilon(0.01));
  InferenceContext ctx{c, m, j, Calibration{}};
  const auto lines = explain_token(ctx, plan(4, 4, 1, "tp-pp-dp"), tp4pp4);
  REQUIRE(!lines.empty());
  CHECK(lines.front().find("divided by tp;") != std::string::npos);
  CHECK(lines.front().find("tp x pp") == std::string::npos);
}

TEST_CASE("serving parts by hand: prefill, decode, collectives, pipeline hops, memory") {
  // Two servers of 2 GPUs (NVLink 100 GB/s; the network 2 x 400 Gb/s NICs = 50 GB/s per GPU),
  // every step 1 us, no launch latency, achieved bandwidth = line rate, no NVLS. GPU: 1e15 FLOP/s
  // at 50% (no small-matrix penalty), HBM 1e12 B/s at 50%. Model: h 1024, 4 layers, 8 heads of
  // 128, MLP 4096 (not gated), vocab 1000 (see test_cost_dims.cpp for its counts). TP 2 inside a
  // server, PP 2 across; batch 2, prompt 100, output 11, bf16.
  GpuSpec gpu;
  gpu.name = "g";
  gpu.peak_flops = 1e15;
  gpu.memory_bytes = 80.0 * 1024 * 1024 * 1024;
  gpu.hbm_bandwidth = 1e12;
  ClusterSpec cs;
  cs.name = "two-by-two";
  cs.gpu = gpu;
  cs.nodes = 2;
  cs.nics_per_server = 2;
  cs.nic_bandwidth = 50e9;
  cs.tiers = {{"nvlink", 2, Link::nvlink4, 100e9, 0, 1}, {"leaf", 0, Link::infiniband, 50e9, 0, 1}};
  const Cluster c(cs, "test");
  Calibration cal;
  cal.gemm_efficiency[static_cast<int>(Arch::hopper)] = 0.5;
  cal.gemm_half_dim = 0;
  cal.hbm_efficiency = 0.5;
  for (Link l : {Link::nvlink4, Link::infiniband})
    cal.links[static_cast<int>(l)] = {1.0, 1e-6, 0.0};
  cal.collective_base_latency = cal.network_base_latency = 0;
  cal.decode_layer_overhead.fill(10e-6);
  cal.decode_collective_overhead.fill(0);
  cal.reserved_bytes = 0;
  const Model m(test::dense_spec("small", 1024, 4, 8, 4096, 1000, false));
  InferenceJob j;
  j.batch = 2;
  j.prompt_len = 100;
  j.output_len = 11;
  const Plan p = plan(2, 2, 1);
  const InferenceEval e = run(c, m, j, p, cal);
  // Prefill, 200 tokens: the weight multiplies, 200 x (4 x 25,165,824 + 2,048,000) / 2 FLOPs
  // at 5e14 = 20.542 us, are bound by reading the weights once, stage after stage: 4 layers x
  // 12,584,960 params / 2 x 2 B + the head's 1,024,000 B at 5e11 = 102.728 us. Attention,
  // 200 x 4 x 4,096 x 100 / 2 / 2 FLOPs at 5e14 = 0.164 us; element-wise 200 x 4 x (8 x 1024 +
  // 2 x 4096 / 2) x 2 B at 5e11 = 39.322 us.
  CHECK(e.prefill.compute == Approx(102.72768e-6 + 0.16384e-6 + 39.3216e-6));
  CHECK(e.prefill.overhead == Approx(40e-6));  // 4 layers x 10 us
  // TP all-reduce of 409,600 B over 2 GPUs: one-shot 1 us + 409,600 / 1e11 = 5.096 us (ring:
  // 6.096 us); 2 per layer.
  CHECK(e.prefill.tp == Approx(8 * 5.096e-6));
  // One hop across servers: 1 us + 409,600 / 5e10.
  CHECK(e.prefill.pp == Approx(9.192e-6));
  // Decode, a micro-batch of 1 per stage: the last stage reads 2 layers x 12,584,960 params / 2 x
  // 2 B + the head 1,024,000 B, and its KV cache 105.5 tokens x 2 layers x 2,048 B, at 5e11;
  // the pp stages run one after another.
  CHECK(e.weight_read == Approx(2 * 26193920 / 5e11));
  CHECK(e.kv_read == Approx(2 * 432128 / 5e11));
  CHECK(e.decode.memory == Approx(2 * (26193920 + 432128) / 5e11));
  CHECK(e.decode.tp == Approx(8 * 1.02048e-6));  // 2,048 B one-shot all-reduces
  CHECK(e.decode.pp == Approx(1.04096e-6));      // one hop of 2,048 B
  CHECK(e.decode.overhead == Approx(40e-6));
  CHECK(e.token_latency == Approx(1.06504192e-4 + 40e-6 + 8.16384e-6 + 1.04096e-6));
  CHECK(e.tp_algorithm == Algorithm::one_shot);
  // Memory on the last stage: its weights, the KV cache of 2 sequences x 111 tokens x 2 layers,
  // the prefill's activations 200 x (4 x 1024 + 2 x 4096 / 2) x 2 B and fp32 logits 2 x 500 x 4.
  CHECK(e.memory_weights == Approx(26193920));
  CHECK(e.memory_kv == Approx(909312));
  CHECK(e.memory_other == Approx(3276800 + 4000));
}

TEST_CASE(
    "serving runtimes: their own decode overheads, NCCL-only all-reduce, a per-request cost") {
  // GPT-3 175B at TP 8 on one DGX A100 (FasterTransformer's published setting).
  Cluster c = test::preset_cluster("dgx-a100", 1);
  Model m = test::preset_model("gpt3-175b");
  InferenceJob j;
  j.prompt_len = 128;
  j.output_len = 8;
  j.weight_dtype = j.kv_dtype = Dtype::fp16;
  const Calibration cal;
  const InferenceEval trt = run(c, m, j, plan(8, 1, 1), cal);
  j.runtime = Runtime::fastertransformer;
  const InferenceEval ft = run(c, m, j, plan(8, 1, 1), cal);
  j.runtime = Runtime::fastertransformer_triton;
  const InferenceEval triton = run(c, m, j, plan(8, 1, 1), cal);
  // TensorRT-LLM's one-shot all-reduce is latency-bound and cheaper than NCCL's ring or tree,
  // which FasterTransformer runs by default.
  CHECK(trt.tp_algorithm == Algorithm::one_shot);
  CHECK(ft.tp_algorithm != Algorithm::one_shot);
  CHECK(ft.decode.tp > trt.decode.tp);
  // Each runtime's per-layer cost: 96 layers x its constant.
  for (const auto& [e, r] : {std::pair{&trt, 0}, std::pair{&ft, 1}, std::pair{&triton, 2}})
    CHECK(e->decode.overhead == Approx(96 * cal.decode_layer_overhead[r]));
  // The server's per-request cost is paid once, in the time to the first token.
  CHECK(triton.prefill.overhead ==
        Approx(96 * cal.decode_layer_overhead[2] + cal.request_overhead[2]));
  CHECK(cal.request_overhead[2] > 0.05);
  CHECK(triton.end_to_end == Approx(triton.ttft + 7 * triton.token_latency));
  CHECK(parse_runtime("fastertransformer-triton", "--runtime") ==
        Runtime::fastertransformer_triton);
  CHECK_THROWS_AS(parse_runtime("vllm", "--runtime"), InputError);
}

TEST_CASE("FP8 weights: prefill runs at the FP8 GEMM efficiency, bf16 weights do not") {
  Cluster c = test::preset_cluster("dgx-h100", 1);
  Model m = llama2_7b();
  InferenceJob j;
  j.prompt_len = 2048;
  j.output_len = 1;
  Calibration cal;
  auto compute = [&](Dtype d, double fp8_eff) {
    j.weight_dtype = j.kv_dtype = d;
    cal.gemm_efficiency_fp8[static_cast<int>(Arch::hopper)] = fp8_eff;
    return run(c, m, j, plan(1, 1, 8), cal).prefill.compute;
  };
  // Halving the FP8 efficiency nearly doubles FP8 prefill (the element-wise part is unchanged)
  // and leaves bf16's alone.
  CHECK(compute(Dtype::fp8, 0.25) > 1.8 * compute(Dtype::fp8, 0.5));
  CHECK(compute(Dtype::bf16, 0.25) == Approx(compute(Dtype::bf16, 0.5)));
}

TEST_CASE("a short prompt's prefill takes at least one read of the weights") {
  // Llama-2-7B on one H100 in bf16: below ~160 prompt tokens the multiplies do fewer FLOPs per
  // weight byte than the GPU's achieved ridge, so prefill cannot beat the decode step's read.
  Cluster c = test::preset_cluster("dgx-h100", 1);
  Model m = llama2_7b();
  InferenceJob j;
  j.output_len = 1;
  auto at = [&](int prompt) {
    j.prompt_len = prompt;
    return run(c, m, j, plan(1, 1, 8));
  };
  for (int prompt : {1, 16, 64, 128}) {
    INFO("prompt " << prompt);
    const InferenceEval e = at(prompt);
    CHECK(e.prefill.compute >= e.weight_read);
  }
  // A long prompt is bound by the tensor cores: well above the read.
  CHECK(at(4096).prefill.compute > 10 * at(4096).weight_read);
}
