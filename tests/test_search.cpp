#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "topoplan/error.hpp"
#include "topoplan/report.hpp"
#include "topoplan/search.hpp"

using namespace topoplan;

TEST_CASE("with the degrees fixed, the search puts an intra-server TP mapping first") {
  Cluster c = test::preset_cluster("dgx-h100", 16);
  Model m = test::preset_model("llama3-70b");
  JobSpec j;
  SearchOptions o;
  o.fixed = {8, 0, 0, 4, 4};
  o.micro_batch = 1;
  o.vpp = 1;
  o.zero = 1;
  o.recompute = Recompute::none;
  o.sequence_parallel = false;
  o.top_k = 10;
  SearchResult r = search(c, m, j, Calibration{}, o);
  // Six orders of tp, dp, pp; tp-dp-pp and tp-pp-dp cost exactly the same (TP fills a server,
  // DP and PP both take one GPU per server within the leaf), so that mirror is listed once.
  REQUIRE(r.evaluated == 6);
  REQUIRE(r.top.size() == 5);
  CHECK(r.top.front().eval.shapes[Dim::tp].span_tier == 0);
  CHECK(short_order_string(r.top.front().plan) == "tp-dp-pp");  // Megatron's default wins ties
  CHECK(r.top.back().eval.shapes[Dim::tp].span_tier == 1);
  for (std::size_t i = 1; i < r.top.size(); ++i) CHECK_FALSE(ranks_before(r.top[i], r.top[i - 1]));
}

TEST_CASE("the unconstrained search keeps TP inside one server in every plan it lists") {
  Cluster c = test::preset_cluster("dgx-h100", 16);
  Model m = test::preset_model("llama3-70b");
  JobSpec j;
  SearchOptions o;
  o.top_k = 30;
  o.distinct = true;
  SearchResult r = search(c, m, j, Calibration{}, o);
  REQUIRE(r.top.size() == 30);
  CHECK(r.evaluated > 50000);
  int with_tp = 0;
  for (const auto& cand : r.top) {
    CHECK(cand.eval.fits);
    if (cand.plan[Dim::tp] > 1) {
      ++with_tp;
      CHECK(cand.eval.shapes[Dim::tp].span_tier == 0);  // every listed TP group inside one server
    }
  }
  CHECK(with_tp > 5);
}

TEST_CASE("the search is deterministic") {
  Cluster c = test::preset_cluster("dgx-h100", 8);
  Model m = test::preset_model("llama3-8b");
  JobSpec j;
  RunContext ctx{c, m, j, Calibration{}};
  SearchOptions o;
  o.top_k = 25;
  std::string a = plan_report_json(ctx, search(c, m, j, ctx.cal, o));
  std::string b = plan_report_json(ctx, search(c, m, j, ctx.cal, o));
  CHECK(a == b);
}

TEST_CASE("fixed degrees that cannot divide the cluster are input errors") {
  Cluster c = test::preset_cluster("dgx-h100", 4);
  Model m = test::preset_model("llama3-70b");
  JobSpec j;
  SearchOptions o;
  o.fixed[Dim::tp] = 3;
  CHECK_THROWS_WITH(search(c, m, j, Calibration{}, o), "tp: 3 does not divide the 32 GPUs");
}

TEST_CASE("when nothing fits, the closest plan is kept to explain why") {
  Cluster c = test::preset_cluster("dgx-h100", 1);
  Model m = test::preset_model("llama3.1-405b");
  JobSpec j;
  SearchResult r = search(c, m, j, Calibration{}, SearchOptions{});
  CHECK(r.top.empty());
  REQUIRE(r.closest_unfit);
  CHECK_FALSE(r.closest_unfit->eval.fits);
}

TEST_CASE("the search's size is known before it runs and bounds what it costs") {
  const Calibration cal;
  for (const char* model : {"llama3-70b", "mixtral-8x7b", "deepseek-v3"})
    for (int nodes : {1, 4, 16}) {
      INFO(model << " on " << nodes << " nodes");
      Cluster c = test::preset_cluster("dgx-h100", nodes);
      Model m = test::preset_model(model);
      JobSpec j;
      SearchOptions o;
      const std::int64_t bound = plans_upper_bound(c, m, j, o);
      const SearchResult r = search(c, m, j, cal, o);
      CHECK(r.plans_upper_bound == bound);
      CHECK(r.evaluated + r.out_of_memory <= bound);
      CHECK(r.evaluated + r.out_of_memory > 0);
      // A limit below the bound refuses before anything is costed, with both figures.
      o.max_plans = bound - 1;
      try {
        (void)search(c, m, j, cal, o);
        FAIL("expected SearchTooLarge");
      } catch (const SearchTooLarge& e) {
        CHECK(e.bound == bound);
        CHECK(e.limit == bound - 1);
      }
      // At the bound: runs (checked on one server; each search here is repeated work, and
      // this test is among the longest under the sanitizers).
      if (nodes == 1) {
        o.max_plans = bound;
        CHECK(search(c, m, j, cal, o).evaluated == r.evaluated);
      }
    }
}

TEST_CASE("a stop request ends the search with Interrupted, not a partial result") {
  Cluster c = test::preset_cluster("dgx-h100", 16);
  Model m = test::preset_model("llama3-70b");
  const std::atomic<bool> stop{true};
  SearchOptions o;
  o.stop = &stop;
  for (int threads : {1, 2}) {
    o.threads = threads;
    CHECK_THROWS_AS(search(c, m, JobSpec{}, Calibration{}, o), Interrupted);
  }
}

TEST_CASE("partial recomputation in whole chunks also when a flexible layout's chunks are uneven") {
  // Llama 3.1 405B on 16,384 H100, TP 8 x PP 16 x DP 128, vpp 6: 126 layers as 7 / 8 x 14 / 7,
  // so a middle stage's 8 layers sit in chunks of 2, 2, 1, 1, 1, 1. Without recomputation the
  // activations do not fit; recomputing one layer of each chunk (Megatron's block method with
  // --recompute-num-layers 1: 6 of the 8) does, and beats recomputing all 8 (without the
  // recomputed modules the search may add instead: --no-recompute-module-search).
  Cluster c = test::preset_cluster("dgx-h100", 2048);
  Model m = test::preset_model("llama3.1-405b");
  JobSpec j;
  j.seq_len = 8192;
  j.global_batch = 2048;
  j.recompute_module_search = false;
  SearchOptions o;
  o.fixed[Dim::tp] = 8;
  o.fixed[Dim::cp] = 1;
  o.fixed[Dim::ep] = 1;
  o.fixed[Dim::pp] = 16;
  o.fixed[Dim::dp] = 128;
  o.micro_batch = 1;
  o.vpp = 6;
  o.zero = 1;  // recomputation searched: none and selective do not fit
  o.sequence_parallel = true;
  o.top_k = 1;
  const SearchResult r = search(c, m, j, Calibration{}, o);
  REQUIRE(!r.top.empty());
  const Candidate& best = r.top.front();
  CHECK(best.eval.fits);
  CHECK(best.plan.recompute == Recompute::full);
  CHECK(best.plan.recompute_layers == 6);
  Plan all = best.plan;
  all.recompute_layers = 0;
  CHECK(best.eval.step_time <
        evaluate(c, m, j, all, Mapping::from_order(all), Calibration{}).step_time);
}

namespace {

/// An 8B-shaped dense model with one multi-token-prediction module (a heavy head: the last stage
/// wants fewer layers) on 4 DGX H100, searched at tp 1, pp 4, micro-batch 1, no interleaving.
struct HeavyHead {
  Cluster c = test::preset_cluster("dgx-h100", 4);
  Model m = [] {
    ModelSpec s = test::dense_spec("mtp", 4096, 32, 32, 14336, 128256, true);
    s.mtp_layers = 1;
    return Model(s);
  }();
  JobSpec j = test::job(4096, 128);
  SearchOptions o = [] {
    SearchOptions x;
    x.fixed[Dim::tp] = 1;
    x.fixed[Dim::pp] = 4;
    x.micro_batch = 1;
    x.vpp = 1;
    return x;
  }();
};

}  // namespace

TEST_CASE("a fixed uneven split applies to every plan the search lists") {
  HeavyHead h;
  auto& [c, m, j, o] = h;
  const SearchResult even = search(c, m, j, Calibration{}, o);
  o.first_stage_layers = 9;
  o.last_stage_layers = 6;  // 9 + 2 x 8.5 + 6: the middle cannot share 17 evenly
  const SearchResult none = search(c, m, j, Calibration{}, o);
  CHECK(none.top.empty());
  o.last_stage_layers = 7;  // 9, 8, 8, 7
  const SearchResult split = search(c, m, j, Calibration{}, o);
  REQUIRE(!split.top.empty());
  REQUIRE(!even.top.empty());
  for (const Candidate& k : split.top) {
    CHECK(k.plan.first_stage_layers == 9);
    CHECK(k.plan.last_stage_layers == 7);
  }
  CHECK(split.top.front().eval.step_time < even.top.front().eval.step_time);
}

TEST_CASE("searching the split moves layers off a heavy last stage to the first") {
  HeavyHead h;
  auto& [c, m, j, o] = h;
  o.recompute = Recompute::none;
  o.top_k = 50;
  o.distinct = false;
  const SearchResult even = search(c, m, j, Calibration{}, o);
  o.search_split = true;
  const SearchResult moved = search(c, m, j, Calibration{}, o);
  REQUIRE(!even.top.empty());
  REQUIRE(!moved.top.empty());
  // The head (the logits twice and one more layer) outweighs a layer or two on the first stage.
  const Plan& best = moved.top.front().plan;
  CHECK(best.last_stage_layers > 0);
  CHECK(best.last_stage_layers < 8);
  CHECK(best.first_stage_layers == 16 - best.last_stage_layers);  // the middle two keep 8 each
  CHECK(moved.top.front().eval.step_time < even.top.front().eval.step_time);
  // Each listed split is the default one or moves whole layers off the last stage.
  for (const Candidate& k : moved.top) {
    const StageLayers split = split_of(k.plan, 32);
    CHECK(split.middle == 8);
    CHECK(split.first + split.last == 16);
    CHECK(split.last >= 1);
  }
  CHECK(moved.evaluated > even.evaluated);
}

TEST_CASE("the split search moves layers only while the last stage is the slowest") {
  HeavyHead h;
  auto& [c, m, j, o] = h;
  o.recompute = Recompute::none;
  o.top_k = 100;
  o.distinct = false;
  o.search_split = true;
  const SearchResult moved = search(c, m, j, Calibration{}, o);
  REQUIRE(!moved.top.empty());
  const Calibration cal;
  // (h's members, not the bindings: clang 14 cannot capture structured bindings)
  auto last_slowest = [&h, &cal](const Plan& p) {
    const PlanCore core = prepare(h.c, h.m, h.j, p, cal);
    return core.layers_per_stage ==
           static_cast<double>(split_of(p, h.m.spec.layers).last) + h.m.counts.mtp_layers;
  };
  std::int64_t most = 0;
  for (const Candidate& k : moved.top) {
    if (k.plan.last_stage_layers == 0) continue;
    // Each moved split came from one whose last stage was still the slowest.
    Plan before = k.plan;
    ++before.last_stage_layers;
    --before.first_stage_layers;
    if (before.first_stage_layers == 8) before.first_stage_layers = before.last_stage_layers = 0;
    CHECK(last_slowest(before));
    most = std::max(most, k.plan.first_stage_layers);
  }
  REQUIRE(most > 8);
  // The last split costed is the first whose slowest stage is another (or the last keeps one).
  Plan last = moved.top.front().plan;
  last.first_stage_layers = most;
  last.last_stage_layers = 16 - most;
  CHECK((!last_slowest(last) || last.last_stage_layers == 1));
}

TEST_CASE("the split search moves nothing when the last stage is not the slowest") {
  // 30 layers on 4 stages: 7 / 8 x 2 / 7; a small vocabulary leaves the last stage (7 layers and
  // the logits) lighter than a middle one, so layers moved to the first only add to the step.
  HeavyHead h;
  h.m = Model(test::dense_spec("light-head", 4096, 30, 32, 14336, 32000, true));
  auto& [c, m, j, o] = h;
  o.recompute = Recompute::none;
  o.top_k = 100;
  o.distinct = false;
  const SearchResult even = search(c, m, j, Calibration{}, o);
  o.search_split = true;
  const SearchResult moved = search(c, m, j, Calibration{}, o);
  REQUIRE(!even.top.empty());
  CHECK(split_of(even.top.front().plan, 30).last == 7);
  CHECK(moved.evaluated == even.evaluated);
  for (const Candidate& k : moved.top) CHECK(k.plan.first_stage_layers == 0);
}
