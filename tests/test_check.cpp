#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "helpers.hpp"
#include "topoplan/check_report.hpp"

using namespace topoplan;

namespace {

Plan central(const char* order) {
  Plan p;
  p[Dim::tp] = 8;
  p[Dim::pp] = 4;
  p[Dim::dp] = 4;
  p.order = parse_order(order, "--order");
  return p;
}

const Finding* find(const CheckResult& r, const std::string& rule) {
  for (const auto& f : r.findings)
    if (f.rule == rule) return &f;
  return nullptr;
}

}  // namespace

TEST_CASE("check fails TP taken from eight servers and says where and how much slower") {
  Cluster c = test::preset_cluster("dgx-h100", 16);
  Model m = test::preset_model("llama3-70b");
  JobSpec j;
  RunContext ctx{c, m, j, Calibration{}};
  Plan bad = central("dp-pp-tp");
  CheckResult r = run_check(ctx, bad, Mapping::from_order(bad), CheckOptions{});
  CHECK_FALSE(r.passed());
  const Finding* tier = find(r, "tp-tier");
  REQUIRE(tier);
  CHECK(tier->severity == Severity::error);
  CHECK_THAT(tier->message, Catch::Contains("span leaf (1 GPU per server)"));
  CHECK_THAT(tier->message, Catch::Contains("order tp-dp-pp keeps them on nvlink"));
  CHECK_THAT(tier->message, Catch::Matches(".*tp communication [0-9.]+x slower.*"));
  REQUIRE(find(r, "mapping-slowdown"));
  REQUIRE(find(r, "inverted-hierarchy"));
  CHECK(find(r, "inverted-hierarchy")->severity == Severity::warning);

  Plan good = central("tp-dp-pp");
  CheckResult ok = run_check(ctx, good, Mapping::from_order(good), CheckOptions{});
  CHECK(ok.passed());
  CHECK(ok.findings.empty());
}

TEST_CASE("check reports memory and invalid degrees as errors") {
  Cluster c = test::preset_cluster("dgx-h100", 1);
  Model m = test::preset_model("llama3.1-405b");
  JobSpec j;
  RunContext ctx{c, m, j, Calibration{}};
  Plan p;
  p[Dim::tp] = 8;
  CheckResult r = run_check(ctx, p, Mapping::from_order(p), CheckOptions{});
  REQUIRE(find(r, "memory"));
  CHECK_THAT(find(r, "memory")->message, Catch::StartsWith("needs "));
  p[Dim::tp] = 1;
  p[Dim::dp] = 8;
  p.micro_batch = 3;
  CheckResult inv = run_check(ctx, p, Mapping::from_order(p), CheckOptions{});
  REQUIRE(find(inv, "invalid-degrees"));
  CHECK(find(inv, "invalid-degrees")->message ==
        "micro_batch: dp 8 x micro-batch 3 does not divide the global batch 512");
  CHECK_FALSE(inv.eval);
}

TEST_CASE("check output for CI systems: GitHub annotations and JUnit XML") {
  Cluster c = test::preset_cluster("dgx-h100", 16);
  Model m = test::preset_model("llama3-70b");
  JobSpec j;
  RunContext ctx{c, m, j, Calibration{}};
  Plan bad = central("dp-pp-tp");
  CheckResult r = run_check(ctx, bad, Mapping::from_order(bad), CheckOptions{});
  std::istringstream gh(check_github(r));
  std::regex cmd(R"(^::(error|warning) title=topoplan [a-z-]+::[^\r\n]+$)");
  int lines = 0;
  for (std::string line; std::getline(gh, line); ++lines) CHECK(std::regex_match(line, cmd));
  CHECK(lines == static_cast<int>(r.findings.size()));
  std::string xml = check_junit(r);
  CHECK_THAT(xml, Catch::StartsWith("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>"));
  CHECK_THAT(xml, Catch::Contains("tests=\"9\" failures=\"3\""));
  CHECK_THAT(xml, Catch::Contains(
                      "<testcase classname=\"topoplan.check\" name=\"tp-tier\">\n      <failure"));
  auto doc = nlohmann::json::parse(check_json(ctx, r));
  CHECK(doc["schema"] == "topoplan.check/v1");
  CHECK(doc["passed"] == false);
  CHECK(doc["plan"]["schema"] == "topoplan.plan/v1");
}

TEST_CASE("check flags expert-parallel groups placed across servers when they fit inside one") {
  Cluster c = test::preset_cluster("dgx-h100", 2);
  Model m = test::preset_model("mixtral-8x7b");
  JobSpec j;
  RunContext ctx{c, m, j, Calibration{}};
  Plan across = test::plan(2, 1, 8, "tp-dp-ep-pp", 1, 4);
  CheckResult r = run_check(ctx, across, Mapping::from_order(across), CheckOptions{});
  const Finding* ep = find(r, "ep-tier");
  REQUIRE(ep);
  CHECK_THAT(ep->message, Catch::Contains("ep groups of 4"));
  CHECK_THAT(ep->message, Catch::Contains("span leaf"));
  Plan inside = test::plan(2, 1, 8, "tp-cp-ep-dp-pp", 1, 4);
  CHECK_FALSE(find(run_check(ctx, inside, Mapping::from_order(inside), CheckOptions{}), "ep-tier"));
}

TEST_CASE("check warns when the experts' other TP choice is clearly faster (expert-tp)") {
  Cluster c = test::preset_cluster("dgx-h100", 4);
  Model m = test::preset_model("mixtral-8x7b");
  JobSpec j;
  // Graphed: launched eagerly, both plans' small MoE layers would wait on the host alike
  // (moe_host_wait, test_cost_model.cpp), and neither choice would be faster.
  j.cuda_graphs = true;
  RunContext ctx{c, m, j, Calibration{}};
  // tp 2 cp 2 ep 8 pp 2 dp 4, experts unfolded: folding them over TP is costed and faster.
  Plan p;
  p.degree = DimArray<int>{{2, 2, 8, 4, 2}};
  p.sequence_parallel = true;
  const CheckResult r = run_check(ctx, p, Mapping::from_order(p), CheckOptions{});
  const auto alt = with_other_expert_tp(c, m, j, ctx.cal, p);
  REQUIRE(alt);
  REQUIRE(r.eval);
  CHECK(alt->eval.step_time < 0.95 * r.eval->step_time);
  const Finding* f = find(r, "expert-tp");
  REQUIRE(f);
  CHECK(f->severity == Severity::warning);
  CHECK_THAT(f->message, Catch::Contains("--expert-tp 1"));
  // The folded plan itself: the unfolded one is slower, so no finding.
  p.expert_tp = 1;
  CHECK_FALSE(find(run_check(ctx, p, Mapping::from_order(p), CheckOptions{}), "expert-tp"));
}

TEST_CASE("check warns when eager MoE layers wait on their host (moe-host-bound)") {
  Cluster c = test::preset_cluster("dgx-b200", 1);
  Model m = test::preset_model("mixtral-8x7b");
  JobSpec j;
  Plan p = test::plan(1, 1, 8, "tp-cp-ep-dp-pp", 1, 8);
  p.zero = 1;
  const CheckResult eager =
      run_check(RunContext{c, m, j, Calibration{}}, p, Mapping::from_order(p), CheckOptions{});
  REQUIRE(eager.eval);
  CHECK(eager.eval->time.moe_host > 0.05 * eager.eval->step_time);
  const Finding* f = find(eager, "moe-host-bound");
  REQUIRE(f);
  CHECK(f->severity == Severity::warning);
  CHECK_THAT(f->message, Catch::Contains("--cuda-graphs"));
  CHECK_THAT(f->message, Catch::Contains("micro-batch 1"));
  // Graphed, the same plan does not wait.
  j.cuda_graphs = true;
  const CheckResult graphed =
      run_check(RunContext{c, m, j, Calibration{}}, p, Mapping::from_order(p), CheckOptions{});
  CHECK_FALSE(find(graphed, "moe-host-bound"));
}
