#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "topoplan/report.hpp"

using namespace topoplan;

TEST_CASE("evaluate's JSON is a topoplan.plan/v1 object whose breakdown adds up") {
  Cluster c = test::preset_cluster("dgx-h100", 16);
  Model m = test::preset_model("llama3-70b");
  JobSpec j;
  const Plan p = test::plan(8, 4, 4);
  Evaluation e = evaluate(c, m, j, p, Mapping::from_order(p), Calibration{});
  auto doc = nlohmann::json::parse(evaluation_json(RunContext{c, m, j, Calibration{}}, p, e));
  CHECK(doc["schema"] == "topoplan.plan/v1");
  for (const char* key :
       {"step_time_s", "tokens_per_s", "mfu", "mfu_format_peak", "model_tflops_per_gpu",
        "memory_gib_per_gpu", "fits", "breakdown", "tp", "pp", "dp", "micro_batch", "order"})
    CHECK(doc.contains(key));
  CHECK(doc["mfu_format_peak"] == doc["mfu"]);  // bf16: the same peak
  CHECK(doc["tp"] == 8);
  CHECK(doc["order"] == "tp-cp-ep-dp-pp");
  double sum = 0;
  for (auto& [k, v] : doc["breakdown"].items()) sum += v.get<double>();
  CHECK(sum == Approx(doc["step_time_s"].get<double>()).epsilon(1e-5));
  CHECK(doc["communication"]["tp"]["tier"] == "nvlink");
  CHECK(doc["communication"]["pp"]["tier"] == "leaf");
  CHECK(doc["expected_error"]["known_gap"].is_null());  // llama3-70b: every run of it checked
  // The band's bias: the JSON's signed figure, and the text line's direction word with it.
  const double bias = doc["expected_error"]["bias"].get<double>();
  CHECK(std::abs(bias) > 0);
  CHECK(std::abs(bias) <= doc["expected_error"]["mean_abs_error"].get<double>());
  const std::string text = evaluation_text(RunContext{c, m, j, Calibration{}}, p, e);
  CHECK(text.find(bias < 0 ? "slow on average" : "fast on average") != std::string::npos);
}

TEST_CASE(
    "evaluate names a model whose published runs topoplan misses (expected_error.known_gap)") {
  Cluster c = test::preset_cluster("dgx-b300", 8);
  Model m = test::preset_model("gpt-oss-120b");
  JobSpec j;
  j.seq_len = 4096;
  j.dtype = Dtype::mxfp8;
  Plan p = test::plan(1, 1, 64);
  p[Dim::ep] = 8;
  p.micro_batch = 4;
  Evaluation e = evaluate(c, m, j, p, Mapping::from_order(p), Calibration{});
  const RunContext ctx{c, m, j, Calibration{}};
  auto doc = nlohmann::json::parse(evaluation_json(ctx, p, e));
  const auto& gap = doc["expected_error"]["known_gap"];
  REQUIRE(gap.is_object());
  CHECK(gap["model"] == "gpt-oss-120b");
  CHECK(gap["runs"].get<int>() >= 3);
  CHECK(gap["mean_abs_error"].get<double>() > 0.3);
  const std::string text = evaluation_text(ctx, p, e);
  CHECK(text.find("published training runs of gpt-oss-120b") != std::string::npos);
  CHECK(text.find("not to be trusted") != std::string::npos);
}

TEST_CASE("evaluate names the runs of a model it misses when its other runs are checked") {
  Cluster c = test::preset_cluster("gb200-nvl72", 4);
  Model m = test::preset_model("deepseek-v3");
  JobSpec j;
  j.seq_len = 4096;
  j.global_batch = 4096;
  j.dtype = Dtype::mxfp8;
  j.gpus = 256;
  Plan p = test::plan(1, 4, 64);
  p[Dim::ep] = 64;
  p.vpp = 4;
  Evaluation e = evaluate(c, m, j, p, Mapping::from_order(p), Calibration{});
  const RunContext ctx{c, m, j, Calibration{}};
  auto doc = nlohmann::json::parse(evaluation_json(ctx, p, e));
  const auto& gap = doc["expected_error"]["known_gap"];
  REQUIRE(gap.is_object());
  const int missed = gap["runs"].get<int>(), checked = gap["checked_runs"].get<int>();
  CHECK(missed == 4);  // MLPerf v6.0's DeepSeek-V3 runs on GB200
  CHECK(checked >= 3);
  const std::string text = evaluation_text(ctx, p, e);
  CHECK(text.find(fmt::format("missed {} of the {} published training runs of deepseek-v3", missed,
                              missed + checked)) != std::string::npos);
  CHECK(text.find(fmt::format("its other {} are checked", checked)) != std::string::npos);
  CHECK(text.find("not to be trusted") == std::string::npos);
}

TEST_CASE("the plan report explains the winner and names the tiers") {
  Cluster c = test::preset_cluster("dgx-h100", 16);
  Model m = test::preset_model("llama3-70b");
  JobSpec j;
  SearchOptions o;
  o.fixed = {8, 0, 0, 4, 4};
  RunContext ctx{c, m, j, Calibration{}};
  SearchResult r = search(c, m, j, ctx.cal, o);
  auto lines = explain_winner(ctx, r);
  REQUIRE(lines.size() >= 3);
  CHECK_THAT(lines[0], Catch::StartsWith("tp = 8: groups span nvlink"));
  bool worst = false;
  for (const auto& l : lines)
    worst = worst || l.find("order dp-pp-tp put tp on leaf") != std::string::npos;
  CHECK(worst);
  auto doc = nlohmann::json::parse(plan_report_json(ctx, r));
  CHECK(doc["schema"] == "topoplan.search/v1");
  CHECK(doc["plans"][0]["schema"] == "topoplan.plan/v1");
  CHECK(doc["plans"].size() == r.top.size());
}

TEST_CASE("the plan table shows the experts' TP (etp) only when a listed plan folds it") {
  Cluster c = test::preset_cluster("dgx-h100", 2);
  Model m = test::preset_model("mixtral-8x7b");
  JobSpec j;
  SearchOptions o;
  o.fixed = {2, 1, 8, 4, 0};  // tp cp ep dp pp: EP 8 needs the TP ranks (expert TP 1)
  o.top_k = 2;
  RunContext ctx{c, m, j, Calibration{}};
  const SearchResult folded = search(c, m, j, ctx.cal, o);
  REQUIRE_FALSE(folded.top.empty());
  const std::string text = plan_report_text(ctx, folded);
  CHECK_THAT(text, Catch::Contains("  ep etp   pp"));
  CHECK_THAT(text, Catch::Contains("   1    2   1   8   1    2"));  // rank tp cp ep etp pp
  o.fixed = {2, 1, 2, 4, 0};  // EP 2 within dp x cp: expert TP as tp is searched first
  o.expert_tp = kExpertTpAsTp;
  const SearchResult plain = search(c, m, j, ctx.cal, o);
  REQUIRE_FALSE(plain.top.empty());
  CHECK_THAT(plan_report_text(ctx, plain), !Catch::Contains("etp"));
}

TEST_CASE("why #1 wins says what the experts' TP choice is worth, the other choice costed") {
  Cluster c = test::preset_cluster("dgx-h100", 4);
  Model m = test::preset_model("mixtral-8x7b");
  JobSpec j;
  SearchOptions o;
  o.fixed = {2, 2, 8, 0, 0};  // tp cp ep: EP 8 fits in cp x dp, or folds over TP
  o.top_k = 1;
  RunContext ctx{c, m, j, Calibration{}};
  const SearchResult r = search(c, m, j, ctx.cal, o);
  REQUIRE_FALSE(r.top.empty());
  REQUIRE(r.other_expert_tp);
  const Candidate& w = r.top.front();
  const Candidate& alt = *r.other_expert_tp;
  // The same plan but for the experts' TP, costed as evaluate costs it.
  CHECK(alt.plan.degree == w.plan.degree);
  CHECK(alt.plan.micro_batch == w.plan.micro_batch);
  CHECK(expert_tp_of(alt.plan) != expert_tp_of(w.plan));
  const Evaluation again = evaluate(c, m, j, alt.plan, Mapping::from_order(alt.plan), ctx.cal);
  CHECK(again.step_time == alt.eval.step_time);
  // The search ranked the winner first, so the other choice is not faster.
  CHECK(alt.eval.step_time >= w.eval.step_time);
  bool said = false;
  for (const auto& line : explain_winner(ctx, r)) said = said || line.find("expert tp") == 0;
  CHECK(said);
  // A dense model has no such line.
  const Model dense = test::preset_model("llama3-8b");
  o.fixed = {2, 0, 0, 0, 0};
  RunContext dctx{c, dense, j, Calibration{}};
  CHECK_FALSE(search(c, dense, j, dctx.cal, o).other_expert_tp);
}
