// Placement around GPUs that are down, and on rail-optimized networks (issue 12).
#include <fmt/format.h>

#include <fstream>
#include <set>
#include <sstream>

#include "helpers.hpp"
#include "topoplan/error.hpp"
#include "topoplan/placement.hpp"
#include "topoplan/plan_check.hpp"
#include "topoplan/rank_table.hpp"
#include "topoplan/search.hpp"

using namespace topoplan;
using namespace topoplan::test;

namespace {

/// The rail-optimized example (examples/clusters/h100-rail-fat-tree.json), from the source tree.
ClusterSpec rail_example(int nodes) {
  std::ifstream in(std::string(TOPOPLAN_SOURCE_DIR) + "/examples/clusters/h100-rail-fat-tree.json");
  std::stringstream text;
  text << in.rdbuf();
  ClusterSpec s = parse_cluster_json(text.str(), "h100-rail-fat-tree.json",
                                     [](const std::string& name, const std::string&,
                                        const std::string&) { return load_gpu(name, "test"); });
  s.nodes = nodes;
  return s;
}

/// True when every TP group of the mapping sits inside one server.
bool tp_groups_in_servers(const Cluster& c, const Mapping& map) {
  for (const auto& g : map.groups(Dim::tp))
    for (int r : g)
      if (map.device(r) / c.gpus_per_server() != map.device(g.front()) / c.gpus_per_server())
        return false;
  return true;
}

}  // namespace

TEST_CASE("GPUs down: SERVER and SERVER:GPU entries, host names or indices") {
  ClusterSpec s = load_cluster("dgx-h100", "test");
  s.nodes = 16;
  s.hosts = {};
  add_down_gpus(s, "7:3,12,7:3", "--exclude");
  CHECK(s.down.size() == 9);  // 7:3 once, all 8 of server 12
  CHECK(s.down.front() == 7 * 8 + 3);
  const Cluster c(s, "test");
  CHECK(c.usable_count() == 128 - 9);
  CHECK_FALSE(c.usable(7 * 8 + 3));
  CHECK(c.tp_capacity(8) == 14 * 8);      // servers 7 and 12 hold no whole group of 8
  CHECK(c.tp_capacity(4) == 14 * 8 + 4);  // server 7 keeps GPUs 4-7
  CHECK(device_name(s, 7 * 8 + 3) == "7:3");
  CHECK_THROWS_WITH(add_down_gpus(s, "16:0", "--exclude"),
                    Catch::Contains("--exclude: expected SERVER or SERVER:GPU") &&
                        Catch::Contains("index below 16, got '16:0'"));
  CHECK_THROWS_WITH(add_down_gpus(s, "3:8", "--exclude"),
                    Catch::Contains("expected a GPU index below 8 after '3:', got '3:8'"));
  ClusterSpec named = s;
  named.hosts.clear();
  for (int i = 0; i < 16; ++i) named.hosts.push_back(fmt::format("node{:02}", i));
  named.down.clear();
  add_down_gpus(named, "node07:3", "--exclude");
  CHECK(named.down == std::vector<int>{59});
}

TEST_CASE("a rail-optimized tier: same GPU index one hop, other indices through the spine") {
  ClusterSpec s = rail_example(32);
  s.down.clear();
  const Cluster c(s, "rails");
  REQUIRE(c.rail_tier() == 1);
  CHECK(c.meet_tier(3, 8 + 3) == 1);                   // GPU 3 of servers 0 and 1: the rail
  CHECK(c.meet_tier(3, 8 + 5) == 2);                   // GPU 3 to GPU 5 across servers: the spine
  CHECK(c.meet_tier(3, 5) == 0);                       // inside a server: NVLink
  CHECK(c.meet_tier(3, 16 * 8 + 3) == 2);              // another leaf block
  const std::vector<int> aligned{0, 1, 8, 9, 16, 17};  // GPUs 0-1 of three servers
  const std::vector<int> shifted{0, 1, 8, 9, 18, 19};  // the third on GPUs 2-3
  CHECK(shape_of_devices(c, aligned).span_tier == 1);
  const GroupShape g = shape_of_devices(c, shifted);
  CHECK(g.span_tier == 2);
  CHECK(g.per_domain[1] == 1);  // GPU 2 and 3 rails each hold one member
  // An order-string layout agrees with walking its groups on rails too.
  const Plan p = plan(2, 1, 8, "dp-tp");
  ClusterSpec two = rail_example(2);
  two.down.clear();
  const Cluster c2(two, "rails");
  const Mapping m = Mapping::from_order(p);
  for (Dim d : {Dim::tp, Dim::dp})
    CHECK(dimension_shape(c2, m, d) == dimension_shape_by_groups(c2, m, d));
  CHECK_THROWS_WITH(
      [] {
        ClusterSpec bad = rail_example(4);
        bad.tiers[2].rails = true;
        return Cluster(bad, "rails.json");
      }(),
      Catch::Contains("rails.json: tiers[2].rail_optimized: expected true only on tier 1"));
}

TEST_CASE(
    "64 H100 servers with 5 GPUs down: no down GPU used, TP groups whole, re-scored the same") {
  ClusterSpec s = load_cluster("dgx-h100", "test");
  s.nodes = 64;
  add_down_gpus(s, "3:5,10:0,17:2,40:7,41:1", "--exclude");
  const Cluster c(s, "test");
  const Model m = preset_model("llama3-70b");
  JobSpec j;
  j.seq_len = 4096;
  j.global_batch = 512;
  SearchOptions opt;
  opt.top_k = 3;
  const SearchResult r = search(c, m, j, Calibration{}, opt);
  REQUIRE_FALSE(r.top.empty());
  for (const Candidate& cand : r.top) {
    REQUIRE(cand.placement);
    REQUIRE(cand.plan.world() <= c.usable_count());
    const Mapping map = cand.devices.empty() ? Mapping::from_order(cand.plan)
                                             : Mapping::with_devices(cand.plan, cand.devices);
    std::set<int> used;
    for (std::int64_t rank = 0; rank < cand.plan.world(); ++rank) {
      CHECK(c.usable(map.device(rank)));
      used.insert(map.device(rank));
    }
    CHECK(static_cast<std::int64_t>(used.size()) == cand.plan.world());
    CHECK(tp_groups_in_servers(c, map));
    CHECK(check_plan(c, m, j, cand.plan) == PlanError::none);
    // The placement as a rank table, scored again: the same step time.
    CHECK(evaluate(c, m, j, cand.plan, map, Calibration{}).step_time == cand.eval.step_time);
    CHECK(cand.eval.step_time <= cand.placement->order_step_time);
  }
}

TEST_CASE("on a rail-optimized fat tree the placement search beats every order string by 5%") {
  // examples/placement.sh: server 3 has GPUs 6 and 7 down; TP 4 x PP 2 x DP 14 on 112 GPUs.
  const Cluster c(rail_example(16), "rails");
  const Model m = preset_model("llama3-8b");
  JobSpec j;
  j.seq_len = 4096;
  j.global_batch = 448;
  j.overlap_grad_reduce = false;
  Plan p = plan(4, 2, 14);
  REQUIRE(check_plan(c, m, j, p) == PlanError::none);
  const Placement placed = place(c, m, j, p, Calibration{});
  REQUIRE_FALSE(placed.stats.order_kept);
  const std::vector<int> usable = usable_devices(c);
  const std::vector<int> first(usable.begin(), usable.begin() + 112);
  for (const Order& o : distinct_orders(p)) {
    Plan q = p;
    q.order = o;
    const double order_time =
        evaluate(c, m, j, q, Mapping::with_devices(q, first), Calibration{}).step_time;
    INFO(order_string(o) << ": " << order_time << " s vs placed " << placed.eval.step_time);
    CHECK(placed.eval.step_time <= 0.95 * order_time);
  }
  const Mapping map = Mapping::with_devices(placed.plan, placed.devices);
  CHECK(tp_groups_in_servers(c, map));
  CHECK(placed.stats.gain() >= 0.05);
}

TEST_CASE("the placement search never returns anything slower than the best order string") {
  const Cluster c = preset_cluster("dgx-h100", 8);  // nothing down
  const Model m = preset_model("llama3-8b");
  JobSpec j;
  j.seq_len = 4096;
  j.global_batch = 256;
  for (const Plan& p : {plan(8, 2, 4), plan(2, 4, 8), plan(1, 1, 64), plan(4, 8, 2)}) {
    const Placement pl = place(c, m, j, p, Calibration{});
    double best_order = 1e300;
    for (const Order& o : distinct_orders(p)) {
      Plan q = p;
      q.order = o;
      best_order = std::min(best_order,
                            evaluate(c, m, j, q, Mapping::from_order(q), Calibration{}).step_time);
    }
    CHECK(pl.eval.step_time <= best_order);
    // Deterministic: the same inputs give the same devices.
    CHECK(place(c, m, j, p, Calibration{}).devices == pl.devices);
  }
}

TEST_CASE("launch ranks: the placement's ranks numbered node by node in GPU order") {
  const Plan p = plan(2, 2, 2);
  // Rank r on device 7 - r: launch order reverses the ranks.
  std::vector<int> devices{7, 6, 5, 4, 3, 2, 1, 0};
  const Mapping m = Mapping::with_devices(p, devices);
  const std::vector<int> launch = launch_ranks(m);
  for (int r = 0; r < 8; ++r) CHECK(launch[static_cast<std::size_t>(r)] == 7 - r);
  // A subset of devices: positions among the used ones.
  const Mapping sub = Mapping::with_devices(p, {0, 2, 4, 6, 9, 11, 13, 15});
  const std::vector<int> l2 = launch_ranks(sub);
  for (int r = 0; r < 8; ++r) CHECK(l2[static_cast<std::size_t>(r)] == r);
}

TEST_CASE(
    "servers with fewer GPUs: their missing slots are never used, TP 8 only on 8-GPU servers") {
  std::ifstream in(std::string(TOPOPLAN_TEST_DATA) + "/eight-and-four-gpu-servers.json");
  std::stringstream text;
  text << in.rdbuf();
  const Cluster c(parse_cluster_json(text.str(), "eight-and-four",
                                     [](const std::string& name, const std::string&,
                                        const std::string&) { return load_gpu(name, "test"); }),
                  "eight-and-four");
  CHECK(c.gpu_count() == 128);
  CHECK(c.usable_count() == 96);
  CHECK(c.absent_count() == 32);
  CHECK_FALSE(c.usable(8 * 8 + 4));  // server 8 holds GPUs 0-3 only
  CHECK(c.tp_capacity(8) == 64);
  CHECK(c.tp_capacity(4) == 96);
  const Model m = preset_model("llama3-70b");
  JobSpec j;
  j.seq_len = 4096;
  j.global_batch = 384;
  SearchOptions opt;
  opt.top_k = 3;
  opt.fixed[Dim::tp] = 8;
  const SearchResult r = search(c, m, j, Calibration{}, opt);
  REQUIRE_FALSE(r.top.empty());
  for (const Candidate& cand : r.top) {
    REQUIRE(cand.plan.world() <= 64);
    const Mapping map = cand.devices.empty() ? Mapping::from_order(cand.plan)
                                             : Mapping::with_devices(cand.plan, cand.devices);
    for (std::int64_t rank = 0; rank < cand.plan.world(); ++rank)
      CHECK(map.device(rank) < 8 * 8);  // only the 8-GPU servers
    CHECK(tp_groups_in_servers(c, map));
  }
}
