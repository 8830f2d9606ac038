// Context and expert parallelism, and the search's scale-out properties.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "topoplan/cost_dims.hpp"
#include "topoplan/fingerprint.hpp"
#include "topoplan/mapping.hpp"
#include "topoplan/plan_check.hpp"
#include "topoplan/report.hpp"
#include "topoplan/search.hpp"
#include "topoplan/stage_memory.hpp"

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

TEST_CASE("context parallelism: all-gather CP exposes its exchange, a ring hides it") {
  // Megatron-core's all_gather CP gathers the sequence's K/V before attention and
  // reduce-scatters their gradients after it, neither overlapped; the ring (p2p) moves the same
  // chunks in the same steps behind the attention. Llama 3 8B at 64k tokens, CP 4 across servers.
  Cluster c = test::preset_cluster("dgx-h100", 4);
  Model m = test::preset_model("llama3-8b");
  JobSpec j;
  j.seq_len = 65536;
  j.global_batch = 16;
  const Plan p = plan(1, 4, 1, 1, 8, "tp-dp-pp-cp");  // each CP group one GPU per server
  const Evaluation ring = eval(c, m, j, p);
  j.cp_comm = CpComm::all_gather;
  const Evaluation gathered = eval(c, m, j, p);
  CHECK(gathered.shapes[Dim::cp].span_tier >= 1);
  CHECK(gathered.comm[Dim::cp] == Approx(ring.comm[Dim::cp]));  // the same bytes and steps
  CHECK(gathered.time.cp == Approx(gathered.comm[Dim::cp]));    // all of it exposed
  CHECK(ring.time.cp < 0.5 * gathered.time.cp);
  CHECK(gathered.step_time > ring.step_time);
  JobSpec ring_job =
      j;  // rank files record it: a plan made for one does not read back as the other
  ring_job.cp_comm = CpComm::p2p;
  CHECK(fingerprint(j) != fingerprint(ring_job));
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

TEST_CASE("MoE parallel folding: expert TP 1 lets EP span the TP ranks") {
  Cluster c = test::preset_cluster("dgx-h100", 2);
  Model m = test::preset_model("mixtral-8x7b");
  JobSpec j;
  // TP 2 x DP 8: EP 8 divides dp x cp only when the experts keep tp; EP 16 needs folding.
  Plan folded = plan(2, 1, 16, 1, 8);
  CHECK(check_plan(c, m, j, folded) == PlanError::ep_experts);  // Mixtral has 8 experts
  folded = plan(2, 1, 8, 1, 8);
  folded.expert_tp = 1;
  REQUIRE(check_plan(c, m, j, folded) == PlanError::none);
  // Megatron's expert generator with expert TP 1 (tp-ep-dp-pp): EP groups are consecutive ranks,
  // each taking both ranks of a TP pair; expert DP strides over them.
  Mapping map = Mapping::from_order(folded);
  CHECK(map.groups(Dim::ep).front() == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(map.expert_dp_groups().front() == std::vector<int>{0, 8});
  CHECK(expert_replicas(folded) == 2.0);
  // Experts per GPU: folded EP 8 holds one whole expert, as unfolded EP 4 x TP 2 does (the
  // same weights), and twice unfolded EP 8's half expert; expert DP = 16 / (expert TP x EP).
  const Evaluation a = eval(c, m, j, folded), b = eval(c, m, j, plan(2, 1, 4, 1, 8)),
                   d = eval(c, m, j, plan(2, 1, 8, 1, 8));
  CHECK(a.memory.weights == Approx(b.memory.weights).epsilon(1e-9));
  CHECK(a.memory.weights > d.memory.weights);
  CHECK(a.shapes[Dim::ep].size == 8);
  CHECK(a.shapes[Dim::ep].span_tier == 0);  // ranks 0-7: one server
  CHECK(a.expert_dp_shape.size == 2);
  CHECK(d.expert_dp_shape.size <= 1);
  CHECK(degrees_string(folded) == "tp 2 ep 8 (expert tp 1) pp 1 dp 8");
  // Expert TP must divide tp, and needs experts.
  Plan bad = plan(4, 1, 2, 1, 4);
  bad.expert_tp = 3;
  CHECK(check_plan(c, m, j, bad) == PlanError::expert_tp);
  CHECK(describe(PlanError::expert_tp, c, m, j, bad) ==
        "expert_tp: expected a divisor of tp 4, got 3");
  Plan dense_fold = plan(2, 1, 1, 1, 8);
  dense_fold.expert_tp = 1;
  CHECK(check_plan(c, test::preset_model("llama3-8b"), j, dense_fold) == PlanError::expert_tp);
  // EP x expert TP must divide tp x cp x dp: tp 4 x dp 4 takes EP 8 only with expert TP 1.
  Plan wide = plan(4, 1, 8, 1, 4);
  CHECK(check_plan(c, m, j, wide) == PlanError::ep_dp);
  CHECK(describe(PlanError::ep_dp, c, m, j, wide) == "ep: 8 does not divide dp x cp = 4");
  wide.expert_tp = 1;
  CHECK(check_plan(c, m, j, wide) == PlanError::none);
  Plan deep = plan(4, 1, 8, 2, 2);  // tp 4 x dp 2 per stage: EP 8 x expert TP 2 is too many
  deep.expert_tp = 2;
  CHECK(check_plan(c, m, j, deep) == PlanError::ep_dp);
  CHECK(describe(PlanError::ep_dp, c, m, j, deep) ==
        "ep: 8 does not divide tp x cp x dp / expert tp = 4");
}

TEST_CASE("MoE layers' TP collectives: top_k token copies over expert TP, none when folded") {
  // Megatron-core's all-to-all dispatcher all-gathers the received token copies over expert TP
  // after the dispatch and reduce-scatters them before the combine.
  const Model mixtral = test::preset_model("mixtral-8x7b");  // top 2, every layer MoE
  const Model deepseek = test::preset_model("deepseek-v3");  // top 8, a shared expert, 3 dense
  Plan unfolded = plan(2, 1, 4, 1, 8), folded = plan(2, 1, 8, 1, 8);
  folded.expert_tp = 1;
  CHECK(tp_mlp_scale(test::preset_model("llama3-8b"), unfolded) == 1.0);
  CHECK(tp_mlp_scale(mixtral, unfolded) == Approx(2.0));
  CHECK(tp_mlp_scale(mixtral, folded) == Approx(0.0));
  CHECK(tp_mlp_scale(deepseek, unfolded) == Approx((3.0 + 58.0 * 9.0) / 61.0));
  CHECK(tp_mlp_scale(deepseek, folded) == Approx(1.0));
  // The stage's TP traffic: attention's two halves plus the MLP's, scaled. bf16, no
  // recomputation: every half costs the same, so unfolded / folded = (2 + 2 x 2) / (2 + 0).
  Cluster c = test::preset_cluster("dgx-h100", 2);
  JobSpec j;
  unfolded.sequence_parallel = folded.sequence_parallel = true;
  const Evaluation a = eval(c, mixtral, j, unfolded), b = eval(c, mixtral, j, folded);
  REQUIRE(b.comm[Dim::tp] > 0);
  CHECK(a.comm[Dim::tp] / b.comm[Dim::tp] == Approx(3.0).epsilon(1e-6));
}

TEST_CASE("the search tries the experts' TP at tp and at 1 unless it is fixed (--expert-tp)") {
  Cluster c = test::preset_cluster("dgx-h100", 2);
  Model m = test::preset_model("mixtral-8x7b");
  JobSpec j;
  SearchOptions o;
  o.fixed[Dim::tp] = 2;
  o.fixed[Dim::ep] = 8;
  o.fixed[Dim::dp] = 4;
  o.fixed[Dim::cp] = 1;
  o.top_k = 3;
  // tp 2 x dp 4 x pp 2: EP 8 exceeds dp x cp = 4 unless the experts fold over TP.
  o.expert_tp = kExpertTpAsTp;
  CHECK(search(c, m, j, Calibration{}, o).top.empty());
  o.expert_tp = 8;  // min(8, tp): as tp
  CHECK(search(c, m, j, Calibration{}, o).top.empty());
  for (int etp : {0, 1}) {  // searched, or fixed at 1
    INFO("expert_tp option " << etp);
    o.expert_tp = etp;
    SearchResult r = search(c, m, j, Calibration{}, o);
    REQUIRE_FALSE(r.top.empty());
    CHECK(r.top.front().plan.expert_tp == 1);
    CHECK(r.top.front().plan[Dim::ep] == 8);
  }
  // EP free: the searched plans are the union of the two fixed searches, nothing twice (a folded
  // expert TP without EP is the unfolded plan, costed once).
  o.fixed[Dim::ep] = 0;
  o.expert_tp = kExpertTpAsTp;
  const SearchResult as_tp = search(c, m, j, Calibration{}, o);
  o.expert_tp = 1;
  const SearchResult folded = search(c, m, j, Calibration{}, o);
  o.expert_tp = 0;
  const SearchResult both = search(c, m, j, Calibration{}, o);
  o.fixed[Dim::ep] = 1;
  const SearchResult no_ep = search(c, m, j, Calibration{}, o);
  const auto plans = [](const SearchResult& r) { return r.evaluated + r.out_of_memory; };
  CHECK(plans(both) == plans(as_tp) + plans(folded) - plans(no_ep));
  CHECK(plans(folded) > plans(no_ep));
  // A dense model has no experts to fold: the same search either way.
  const Model dense = test::preset_model("llama3-8b");
  o.fixed[Dim::ep] = 0;
  const SearchResult d0 = search(c, dense, j, Calibration{}, o);
  o.expert_tp = kExpertTpAsTp;
  CHECK(plans(search(c, dense, j, Calibration{}, o)) == plans(d0));
}

TEST_CASE("DeepSeek-V3 on 2,048 H800: plans with EP across servers, all-to-all cost per tier") {
  Cluster c = test::preset_cluster("hgx-h800", 256);
  Model m = test::preset_model("deepseek-v3");
  JobSpec j;
  j.global_batch = 1920;
  // The expert placement is the point here: Megatron-LM's classic layouts keep the search to
  // 3 M plans (flexible ones make it 21 M, minutes under the sanitizers).
  j.flexible_pipeline_layout = false;
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

TEST_CASE("pipeline splits: uneven with interleaving, as Megatron-LM's first/last stage flags") {
  // Issue 9: 126 layers (Llama 3.1 405B) over pp 16. Without interleaving the middle stages hold
  // 8 and the first and last 7 each; with vpp 2 every stage needs an even count: 6 first, 8 on
  // each middle stage, 8 last. vpp 4 leaves no such split.
  const auto one = pipeline_split(126, 16, 1);
  REQUIRE(one);
  CHECK((one->first == 7 && one->middle == 8 && one->last == 7));
  const auto two = pipeline_split(126, 16, 2);
  REQUIRE(two);
  CHECK((two->first == 6 && two->middle == 8 && two->last == 8));
  CHECK_FALSE(pipeline_split(126, 16, 4));
  const auto even = pipeline_split(80, 4, 5);  // divisible: the even split
  REQUIRE(even);
  CHECK((even->even() && even->first == 20));
  CHECK_FALSE(pipeline_split(8, 16, 1));  // more stages than layers
  // Every split adds up and is as balanced as first/last counts with equal middle stages can
  // be (the least largest stage, by brute force), for every layer count and pp up to 64.
  for (std::int64_t layers = 2; layers <= 64; ++layers)
    for (int pp = 2; pp <= layers; ++pp) {
      const auto s = pipeline_split(layers, pp, 1);
      REQUIRE(s);
      CHECK(s->first + s->last + (pp - 2) * s->middle == layers);
      std::int64_t least = layers;
      for (std::int64_t mid = pp > 2 ? 1 : 0; mid <= (pp > 2 ? layers : 0); ++mid)
        for (std::int64_t first = 1; first < layers; ++first) {
          const std::int64_t last = layers - first - (pp - 2) * mid;
          if (last >= 1) least = std::min(least, std::max({first, mid, last}));
        }
      CHECK(s->max() == least);
    }
  // An explicit split is checked like Megatron-LM checks it.
  Plan p = plan(8, 1, 1, 16, 64);
  p.vpp = 2;
  p.first_stage_layers = 6;
  p.last_stage_layers = 8;
  REQUIRE(plan_split(p, 126));
  p.first_stage_layers = p.last_stage_layers = 7;  // odd counts cannot make 2 chunks
  CHECK_FALSE(plan_split(p, 126));
  p.flexible_layout = true;  // ... unless the stack takes a layout string (chunks of 4 and 3)
  REQUIRE(plan_split(p, 126));
}

TEST_CASE("flexible pipeline layouts: interleaving without a multiple of vpp per stage") {
  // Megatron-core's --pipeline-model-parallel-layout: 126 layers over pp 16 keep the vpp-1 split
  // (7, 8 x 14, 7) for vpp 3 to 7, each stage's chunks differing by at most a layer; vpp 2 keeps
  // the split that needs no layout string (6, 8 x 14, 8).
  const auto two = pipeline_split(126, 16, 2, true);
  REQUIRE(two);
  CHECK((two->first == 6 && two->last == 8));
  for (int vpp : {3, 4, 7}) {
    const auto s = pipeline_split(126, 16, vpp, true);
    REQUIRE(s);
    CHECK((s->first == 7 && s->middle == 8 && s->last == 7));
    std::int64_t sum = 0, most = 0, least = 8;
    for (int c = 0; c < vpp; ++c) {
      sum += chunk_layers(s->middle, vpp, c);
      most = std::max(most, chunk_layers(s->middle, vpp, c));
      least = std::min(least, chunk_layers(s->middle, vpp, c));
    }
    CHECK(sum == 8);
    CHECK(most - least <= 1);
  }
  // vpp 8: the first and last stages' 7 layers fill 7 of their 8 chunks, the eighth holding the
  // embedding or the loss alone, as Megatron-core counts them (Megatron-Bridge's Llama 3.1 405B
  // on GB200 runs pp 16, vpp 8); vpp 9 would leave two chunks of a stage without layers.
  const auto eight = pipeline_split(126, 16, 8, true);
  REQUIRE(eight);
  CHECK((eight->first == 7 && eight->middle == 8 && eight->last == 7));
  CHECK(chunk_layers(eight->last, 8, 7) == 0);
  CHECK_FALSE(pipeline_split(126, 16, 9, true));
  // Without interleaving no stage may be left without layers (an embedding-only stage).
  Plan alone = plan(8, 1, 1, 3, 64);
  alone.flexible_layout = true;
  alone.stage_layers = {0, 40, 40};
  CHECK_FALSE(plan_split(alone, 80));
  alone.stage_layers = {1, 39, 40};
  CHECK(plan_split(alone, 80));
  CHECK_FALSE(pipeline_split(126, 16, 8));  // without the layout flag
  CHECK_FALSE(pipeline_split(126, 16, 4));  // without the layout flag: as Megatron-LM
  // Evaluate's rule: the split a flexible plan runs with is the vpp-1 one.
  Plan p = plan(8, 1, 1, 16, 64);
  p.vpp = 4;
  CHECK_FALSE(plan_split(p, 126));
  p.flexible_layout = true;
  REQUIRE(plan_split(p, 126));
  CHECK(plan_split(p, 126)->first == 7);
}

namespace {

/// Llama 3.1 405B on 1024 x DGX H100 (8,192 GPUs), seq 8192, 2048 sequences (16M tokens) per
/// step, searched with TP 8 x PP 16 x CP 1 fixed, as Meta ran it.
struct Run405b {
  Cluster c = test::preset_cluster("dgx-h100", 1024);
  Model m = test::preset_model("llama3.1-405b");
  JobSpec j = [] {
    JobSpec job;
    job.seq_len = 8192;
    job.global_batch = 2048;
    return job;
  }();
  [[nodiscard]] SearchResult search_tp8_pp16() const {
    SearchOptions o;
    o.fixed[Dim::tp] = 8;
    o.fixed[Dim::pp] = 16;
    o.fixed[Dim::cp] = 1;
    o.top_k = 1;
    return search(c, m, j, Calibration{}, o);
  }
};

}  // namespace

TEST_CASE("a 405B-class plan on 8,192 H100 interleaves with an uneven split and fits") {
  // Issue 9's case: seq 8192, 2048 sequences (16M tokens) per step, TP 8 x PP 16, CP 1.
  const Run405b run;
  const auto& [c, m, j] = run;
  const SearchResult r = run.search_tp8_pp16();
  REQUIRE(!r.top.empty());
  const Candidate& best = r.top.front();
  CHECK(best.plan.vpp > 1);
  CHECK(best.eval.fits);
  const auto split = plan_split(best.plan, 126);
  REQUIRE(split);
  CHECK_FALSE(split->even());
  // Memory is the worst stage's: here the second (8 layers, 15 microbatches in flight) outweighs
  // the first (6 layers, 16). Against 128 layers split evenly (8 on the first stage, 16 in
  // flight), its activations are 15/16 as large.
  Plan p = best.plan;
  p.recompute = Recompute::none;
  ModelSpec even = m.spec;
  even.layers = 128;
  const double uneven_act = stage_memory(m, j, p, Calibration{}, 32).activations;
  const double even_act = stage_memory(Model(even), j, p, Calibration{}, 32).activations;
  CHECK(uneven_act == Approx(even_act * 15.0 / 16.0));
}

TEST_CASE("partial recomputation: only as many layers per stage as memory needs") {
  // Megatron-LM's block method: the 405B plan above with every layer recomputed fits with room to
  // spare; without recomputation it does not. The search recomputes the fewest model chunks
  // (multiples of vpp layers) per stage that fit, and that plan is faster than recomputing all.
  // Without the recomputed modules the megatron-core stack adds otherwise (the next test).
  Run405b run;
  run.j.recompute_module_search = false;
  const auto& [c, m, j] = run;
  const Candidate best = run.search_tp8_pp16().top.front();
  REQUIRE(best.plan.recompute == Recompute::full);
  REQUIRE(best.plan.recompute_layers > 0);
  CHECK(best.plan.recompute_layers < 8);
  CHECK(best.plan.recompute_layers % best.plan.vpp == 0);
  CHECK(best.eval.fits);
  Plan fewer = best.plan;  // one chunk fewer does not fit (none at all, from one layer a chunk)
  fewer.recompute_layers -= best.plan.vpp;
  if (fewer.recompute_layers == 0) fewer.recompute = Recompute::none;
  CHECK_FALSE(prepare(c, m, j, fewer, Calibration{}).fits);
  Plan all = best.plan;
  all.recompute_layers = 0;
  const Evaluation e_all = evaluate(c, m, j, all, Mapping::from_order(all), Calibration{});
  CHECK(best.eval.step_time < e_all.step_time);
  CHECK(recompute_string(best.plan) == fmt::format("block {}", best.plan.recompute_layers));
  // A count Megatron-LM cannot run (not the same in each model chunk) is an invalid plan, not a
  // cheaper one: export would have written --recompute-num-layers 0.
  Plan uneven = best.plan;
  uneven.recompute_layers = best.plan.vpp + 1;
  CHECK(check_plan(c, m, j, uneven) == PlanError::recompute_layers);
  CHECK(describe(PlanError::recompute_layers, c, m, j, uneven)
            .starts_with(
                fmt::format("recompute_layers: expected a multiple of vpp {}", best.plan.vpp)));
}

TEST_CASE("the search recomputes the norms where that alone makes an interleaved plan fit") {
  // The 405B plan with one layer per model chunk (vpp 8: 7 / 8 x 14 / 7 layers, 126 of 128 chunks
  // used, a flexible layout): without recomputation it needs more than 80 GiB; recomputing the
  // two norms' outputs (Megatron-core's --recompute-modules layernorm) frees them and fits, at
  // the cost of two element-wise passes, far less than recomputing whole layers.
  Run405b run;
  const auto& [c, m, j] = run;
  Plan p;
  p[Dim::tp] = 8;
  p[Dim::pp] = 16;
  p[Dim::dp] = 64;
  p.vpp = 8;
  p.sequence_parallel = true;
  p.flexible_layout = true;
  REQUIRE(check_plan(c, m, j, p) == PlanError::none);
  CHECK_FALSE(prepare(c, m, j, p, Calibration{}).fits);
  Plan norms = p;
  norms.recompute_modules = kRecomputeLayernorm;
  const Evaluation e = evaluate(c, m, j, norms, Mapping::from_order(norms), Calibration{});
  CHECK(e.fits);
  CHECK(recompute_string(norms) == "none+layernorm");
  CHECK(e.memory.activations < prepare(c, m, j, p, Calibration{}).memory.activations);
  // The search finds it (vpp 8 although 8 x 16 chunks exceed the 126 layers) and ranks it first;
  // with the search of modules off it does not, and its best plan is slower.
  const Candidate best = run.search_tp8_pp16().top.front();
  CHECK(best.plan.vpp == 8);
  CHECK(best.plan.recompute_modules == kRecomputeLayernorm);
  CHECK(best.plan.recompute != Recompute::full);
  CHECK(best.eval.fits);
  run.j.recompute_module_search = false;
  const Candidate without = run.search_tp8_pp16().top.front();
  CHECK(without.plan.recompute_modules == 0);
  CHECK(best.eval.step_time < without.eval.step_time);
  // A job that recomputes the norms already adds nothing.
  JobSpec has = j;
  has.recompute_modules = kRecomputeLayernorm;
  run.j = has;
  CHECK(run.search_tp8_pp16().top.front().plan.recompute_modules == 0);
}

TEST_CASE("reports name an uneven split the same way everywhere: first / middle x count / last") {
  Plan p;
  p[Dim::tp] = 8;
  p[Dim::pp] = 16;
  CHECK(split_string(p, 126) == "7 / 8 x 14 / 7");  // topoplan's split of an uneven count
  CHECK(split_clause(p, 126) == ", layers per stage 7 / 8 x 14 / 7");
  CHECK(split_string(p, 128).empty());  // even and not set: nothing to say
  p.first_stage_layers = 8;
  p.last_stage_layers = 8;
  CHECK(split_string(p, 128) == "8 / 8 x 14 / 8");  // set explicitly: said even when even
  p[Dim::pp] = 2;
  p.first_stage_layers = 32;
  p.last_stage_layers = 29;
  CHECK(split_string(p, 61) == "32 / 29");
  p.first_stage_layers = p.last_stage_layers = 0;
  p[Dim::pp] = 4;
  p.stage_layers = {10, 10, 30, 30};
  CHECK(split_string(p, 80) == "10 / 10 / 30 / 30");
  p[Dim::pp] = 1;
  p.stage_layers.clear();
  CHECK(split_clause(p, 80).empty());
}
