// Context and expert parallelism, and the search's scale-out properties.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "topoplan/report.hpp"
#include "topoplan/search.hpp"

using namespace topoplan;

namespace {

Plan plan(int tp, int cp, int ep, int pp, int dp, const char* order = "tp-cp-ep-dp-pp") {
  return test::plan(tp, pp, dp, order, cp, ep);
}

using test::eval;

}  // namespace

TEST_CASE("context parallelism: ring attention hides behind attention, costs across servers") {
  Cluster c = test::preset_cluster("dgx-h100", 4);
  Model m = test::preset_model("llama3-70b");
  JobSpec j;
  j.seq_len = 32768;
  j.global_batch = 64;
  Evaluation none = eval(c, m, j, plan(8, 1, 1, 4, 1));
  Evaluation cp = eval(c, m, j, plan(4, 2, 1, 4, 1));  // cp pairs inside a server
  // Activations per GPU: each CP rank keeps half the sequence (and TP halves differently).
  CHECK(cp.comm[Dim::cp] > 0);
  CHECK(cp.time.cp <= cp.comm[Dim::cp]);
  CHECK(cp.shapes[Dim::cp].span_tier == 0);
  // The same degrees with the CP pair split across servers exposes more of the exchange.
  Evaluation far = eval(c, m, j, plan(4, 2, 1, 4, 1, "tp-dp-pp-cp"));
  CHECK(far.shapes[Dim::cp].span_tier >= 1);
  CHECK(far.comm[Dim::cp] > cp.comm[Dim::cp]);
  CHECK(none.memory.activations > 0);
  // Gradients reduce over dp x cp: CP alone (dp = 1) still needs a reduction.
  CHECK(cp.comm[Dim::dp] > 0);
  CHECK(check_plan(c, m, j, plan(4, 3, 1, 4, 1)) != PlanError::none);
}

TEST_CASE("expert parallelism: all-to-alls by tier, experts sharded over ep") {
  Cluster c = test::preset_cluster("dgx-h100", 2);
  Model m = test::preset_model("mixtral-8x7b");
  JobSpec j;
  Evaluation ep1 = eval(c, m, j, plan(2, 1, 1, 1, 8));
  Evaluation inside = eval(c, m, j, plan(2, 1, 4, 1, 8));                 // ep groups in a server
  Evaluation across = eval(c, m, j, plan(2, 1, 4, 1, 8, "tp-dp-ep-pp"));  // one GPU per server...
  CHECK(ep1.time.ep == 0);
  CHECK(inside.time.ep > 0);
  CHECK(inside.memory.weights < ep1.memory.weights);  // experts split 4 ways
  CHECK(inside.shapes[Dim::ep].span_tier == 0);
  CHECK(inside.ep_per_tier[1] == 0);
  CHECK(across.shapes[Dim::ep].span_tier == 1);
  CHECK(across.ep_per_tier[1] > 0);
  CHECK(across.time.ep > inside.time.ep);
  // Invalid: ep on a dense model, ep not dividing the experts or dp x cp.
  Model dense = test::preset_model("llama3-8b");
  CHECK(check_plan(c, dense, j, plan(2, 1, 2, 1, 8)) == PlanError::ep_dense);
  CHECK(check_plan(c, m, j, plan(1, 1, 16, 1, 16)) == PlanError::ep_experts);
  CHECK(check_plan(c, m, j, plan(2, 1, 8, 2, 4)) == PlanError::ep_dp);
}

TEST_CASE("DeepSeek-V3 on 2,048 H800: plans with EP across servers, all-to-all cost per tier") {
  Cluster c = test::preset_cluster("hgx-h800", 256);
  Model m = test::preset_model("deepseek-v3");
  JobSpec j;
  j.global_batch = 1920;
  SearchOptions o;
  o.top_k = 200;
  o.threads = 2;
  SearchResult r = search(c, m, j, Calibration{}, o);
  REQUIRE_FALSE(r.top.empty());
  const Candidate* cross = nullptr;
  for (const auto& cand : r.top)
    if (cand.plan[Dim::ep] > 1 && cand.eval.shapes[Dim::ep].span_tier >= 1) {
      cross = &cand;
      break;
    }
  REQUIRE(cross);
  CHECK(cross->eval.ep_per_tier[1] + cross->eval.ep_per_tier[2] > 0);
  auto doc = nlohmann::json::parse(
      evaluation_json(RunContext{c, m, j, Calibration{}}, cross->plan, cross->eval));
  CHECK(doc["communication"]["ep"].contains("all_to_all_by_tier_s"));
  CHECK(doc["communication"]["ep"]["all_to_all_by_tier_s"].contains("nvlink"));
}

TEST_CASE("the search gives the same plans with 1 thread and with 2") {
  Cluster c = test::preset_cluster("dgx-h100", 64);
  Model m = test::preset_model("llama3-70b");
  JobSpec j;
  j.seq_len = 8192;
  j.global_batch = 1024;
  RunContext ctx{c, m, j, Calibration{}};
  SearchOptions o;
  o.top_k = 20;
  o.threads = 1;
  const std::string one = plan_report_json(ctx, search(c, m, j, ctx.cal, o));
  o.threads = 2;
  const std::string two = plan_report_json(ctx, search(c, m, j, ctx.cal, o));
  CHECK(one == two);
}

TEST_CASE("constraints: bounded degrees, fewer GPUs, memory headroom") {
  Cluster c = test::preset_cluster("dgx-h100", 16);
  Model m = test::preset_model("llama3-70b");
  JobSpec j;
  SearchOptions o;
  o.top_k = 50;
  o.max[Dim::tp] = 4;
  o.max[Dim::cp] = 1;
  SearchResult r = search(c, m, j, Calibration{}, o);
  REQUIRE_FALSE(r.top.empty());
  for (const auto& cand : r.top) {
    CHECK(cand.plan[Dim::tp] <= 4);
    CHECK(cand.plan[Dim::cp] == 1);
  }
  j.gpus = 64;  // half the cluster
  SearchResult half = search(c, m, j, Calibration{}, SearchOptions{});
  REQUIRE_FALSE(half.top.empty());
  CHECK(half.top.front().plan.world() == 64);
  j.gpus = 0;
  j.memory_headroom = 0.3;
  SearchResult roomy = search(c, m, j, Calibration{}, SearchOptions{});
  for (const auto& cand : roomy.top) CHECK(cand.eval.memory.total() <= 0.7 * c.gpu().memory_bytes);
}
