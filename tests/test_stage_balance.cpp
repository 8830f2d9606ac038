// Clusters of mixed GPU types: stages at their slowest GPU, layers balanced (issue 12).
#include <fstream>
#include <numeric>
#include <sstream>

#include "helpers.hpp"
#include "topoplan/error.hpp"
#include "topoplan/plan_check.hpp"
#include "topoplan/search.hpp"
#include "topoplan/stage_balance.hpp"

using namespace topoplan;
using namespace topoplan::test;

namespace {

ClusterSpec mixed_example() {
  std::ifstream in(std::string(TOPOPLAN_SOURCE_DIR) + "/examples/clusters/mixed-a100-h100.json");
  std::stringstream text;
  text << in.rdbuf();
  return parse_cluster_json(text.str(), "mixed-a100-h100.json",
                            [](const std::string& name, const std::string&, const std::string&) {
                              return load_gpu(name, "test");
                            });
}

JobSpec job(std::int64_t batch) {
  JobSpec j;
  j.seq_len = 4096;
  j.global_batch = batch;
  return j;
}

}  // namespace

TEST_CASE("a cluster of server groups: each server's GPU, the slowest standing for all") {
  const ClusterSpec s = mixed_example();
  REQUIRE(s.server_groups.size() == 2);
  CHECK(s.nodes == 32);
  CHECK(s.gpu.name == "a100-80gb");  // the slower of the two
  const Cluster c(s, "mixed");
  CHECK(c.mixed());
  CHECK(c.gpu_of(0).name == "a100-80gb");
  CHECK(c.gpu_of(16 * 8 - 1).name == "a100-80gb");
  CHECK(c.gpu_of(16 * 8).name == "h100-sxm");
  // The cluster file round-trips with its groups.
  const ClusterSpec again =
      parse_cluster_json(cluster_json(s), "again",
                         [](const std::string& name, const std::string&, const std::string&) {
                           return load_gpu(name, "test");
                         });
  REQUIRE(again.server_groups.size() == 2);
  CHECK(again.server_groups[1].gpu.name == "h100-sxm");
  CHECK(again.server_groups[1].count == 16);
  ClusterSpec fewer = s;
  fewer.nodes = 16;  // --nodes 16
  CHECK_THROWS_WITH(Cluster(fewer, "mixed.json"),
                    "mixed.json: servers: 32 servers listed, but the cluster has 16 (--nodes)");
}

TEST_CASE("balanced stages: the slower GPUs get fewer layers and the step gets shorter") {
  const Cluster c(mixed_example(), "mixed");
  const Model m = preset_model("llama3-70b");
  const JobSpec j = job(512);
  const Calibration cal;
  Plan p = plan(8, 4, 8, "tp-cp-ep-dp-pp");  // pp outermost: stages 0-1 on A100, 2-3 on H100
  p.sequence_parallel = true;
  const Mapping map = Mapping::from_order(p);
  const auto gpus = stage_gpus(c, p, map);
  REQUIRE(gpus.size() == 4);
  CHECK(gpus[0]->name == "a100-80gb");
  CHECK(gpus[1]->name == "a100-80gb");
  CHECK(gpus[2]->name == "h100-sxm");
  CHECK(gpus[3]->name == "h100-sxm");
  Plan balanced = p;
  balanced.stage_layers = balanced_stage_layers(m, j, p, cal, gpus);
  REQUIRE(balanced.stage_layers.size() == 4);
  CHECK(std::accumulate(balanced.stage_layers.begin(), balanced.stage_layers.end(),
                        std::int64_t{0}) == 80);
  CHECK(balanced.stage_layers[0] < balanced.stage_layers[2]);
  CHECK(balanced.stage_layers[1] < balanced.stage_layers[3] + 1);
  REQUIRE(check_plan(c, m, j, balanced) == PlanError::none);
  const Evaluation even = evaluate(c, m, j, p, map, cal);
  const Evaluation bal = evaluate(c, m, j, balanced, map, cal);
  CHECK(bal.step_time < 0.8 * even.step_time);
  // The even split costs the A100 stages' compute: slower than the same plan all on A100.
  CHECK(even.time.compute > 0);
  // A stage list that does not add up is refused with the counts.
  Plan bad = p;
  bad.stage_layers = {10, 10, 10, 10};
  CHECK(check_plan(c, m, j, bad) == PlanError::pp_layers);
  CHECK_THAT(describe(PlanError::pp_layers, c, m, j, bad),
             Catch::Contains("stage_layers: expected 4 counts (pp)") &&
                 Catch::Contains("got 10 10 10 10"));
}

TEST_CASE(
    "16 A100 + 16 H100 servers: the plan's stages hold unequal layers and beat the best "
    "plan that ignores the difference") {
  const Cluster c(mixed_example(), "mixed");
  const Model m = preset_model("llama3-70b");
  const JobSpec j = job(512);
  SearchOptions opt;
  opt.top_k = 5;
  const SearchResult r = search(c, m, j, Calibration{}, opt);
  REQUIRE_FALSE(r.top.empty());
  REQUIRE(r.best_even_split);
  const Candidate& w = r.top.front();
  REQUIRE(w.plan[Dim::pp] > 1);
  REQUIRE(w.plan.stage_layers.size() == static_cast<std::size_t>(w.plan[Dim::pp]));
  const auto [lo, hi] = std::minmax_element(w.plan.stage_layers.begin(), w.plan.stage_layers.end());
  CHECK(*lo < *hi);
  CHECK(w.even_split_step_time > w.eval.step_time);
  CHECK(r.best_even_split->plan.stage_layers.empty());
  INFO("balanced " << w.eval.step_time << " s vs best even split "
                   << r.best_even_split->eval.step_time << " s");
  CHECK(w.eval.step_time < 0.9 * r.best_even_split->eval.step_time);
  // Re-scored from scratch, the same.
  CHECK(evaluate(c, m, j, w.plan, Mapping::from_order(w.plan), Calibration{}).step_time ==
        w.eval.step_time);
}
