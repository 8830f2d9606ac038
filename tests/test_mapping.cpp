#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "topoplan/error.hpp"
#include "topoplan/mapping.hpp"

using namespace topoplan;

namespace {

inline Plan make(int tp, int pp, int dp, const char* order = "tp-cp-ep-dp-pp") {
  return test::plan(tp, pp, dp, order);
}

using Groups = std::vector<std::vector<int>>;

}  // namespace

TEST_CASE("default order reproduces Megatron's worked example (world 16, TP 2, PP 2, DP 4)") {
  Mapping m = Mapping::from_order(make(2, 2, 4));
  CHECK(m.groups(Dim::tp) ==
        Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8, 9}, {10, 11}, {12, 13}, {14, 15}});
  CHECK(m.groups(Dim::dp) == Groups{{0, 2, 4, 6}, {1, 3, 5, 7}, {8, 10, 12, 14}, {9, 11, 13, 15}});
  CHECK(m.groups(Dim::pp) ==
        Groups{{0, 8}, {1, 9}, {2, 10}, {3, 11}, {4, 12}, {5, 13}, {6, 14}, {7, 15}});
  // rank = tp + 2*dp + 8*pp
  CHECK(m.coord(13, Dim::tp) == 1);
  CHECK(m.coord(13, Dim::dp) == 2);
  CHECK(m.coord(13, Dim::pp) == 1);
}

TEST_CASE("the order of Megatron's --use-tp-pp-dp-mapping puts pp before dp") {
  Mapping m = Mapping::from_order(make(2, 2, 4, "tp-cp-ep-pp-dp"));
  CHECK(m.groups(Dim::pp).front() == std::vector<int>{0, 2});
  CHECK(m.groups(Dim::dp).front() == std::vector<int>{0, 4, 8, 12});
}

TEST_CASE("order strings parse, fill in missing dimensions, and reject junk") {
  CHECK(order_string(parse_order("dp-pp-tp", "--order")) == "dp-pp-tp-cp-ep");
  CHECK_THROWS_WITH(parse_order("tp-xx", "--order"),
                    "--order: expected dimensions tp, cp, ep, dp, pp joined by '-', got 'tp-xx'");
  CHECK_THROWS_WITH(parse_order("tp-dp-tp", "--order"), "--order: 'tp-dp-tp' names tp twice");
}

TEST_CASE("group shapes: inside a server, one GPU per server, and spread across leaves") {
  Cluster c = test::preset_cluster("dgx-h100", 64);  // 2 leaves of 32 servers
  // TP 8 in the default order: one whole server.
  Mapping good = Mapping::from_order(make(8, 4, 16));
  GroupShape tp = dimension_shape(c, good, Dim::tp);
  CHECK(tp.span_tier == 0);
  // dp-pp-tp: TP stride 64, eight members in eight servers across... 64*8 = 512 GPUs = 2 leaves.
  Mapping bad = Mapping::from_order(make(8, 4, 16, "dp-pp-tp"));
  GroupShape t2 = dimension_shape(c, bad, Dim::tp);
  CHECK(t2.span_tier == 2);
  CHECK(t2.per_domain[0] == 1);
  CHECK(t2.per_domain[1] == 4);  // 4 members in each leaf (256 GPUs per leaf, stride 64)
}

namespace {

/// For every tp x pp x dp of the cluster and each order: the shape dimension_shape answers (twice:
/// the second from the memo) is the one walking every group finds.
void require_shapes_match_walk(const char* preset, int nodes,
                               std::initializer_list<const char*> orders) {
  Cluster c = test::preset_cluster(preset, nodes);
  const int n = c.gpu_count();
  for (int tp = 1; tp <= n; ++tp) {
    if (n % tp) continue;
    for (int pp = 1; pp <= n / tp; ++pp) {
      if ((n / tp) % pp) continue;
      Plan base = make(tp, pp, n / tp / pp);
      for (const char* o : orders) {
        base.order = parse_order(o, "--order");
        Mapping m = Mapping::from_order(base);
        for (Dim d : {Dim::tp, Dim::pp, Dim::dp}) {
          INFO(preset << " nodes " << nodes << " tp " << tp << " pp " << pp << " order " << o
                      << " dim " << to_string(d));
          REQUIRE(dimension_shape(c, m, d) == dimension_shape_by_groups(c, m, d));
          REQUIRE(dimension_shape(c, m, d) == dimension_shape_by_groups(c, m, d));
        }
      }
    }
  }
}

}  // namespace

TEST_CASE("the O(tiers) shape equals walking every group") {
  for (int nodes : {1, 2, 3, 4, 6, 16, 40, 64})
    require_shapes_match_walk(
        "dgx-h100", nodes,
        {"tp-dp-pp", "tp-pp-dp", "dp-tp-pp", "dp-pp-tp", "pp-tp-dp", "pp-dp-tp"});
}

TEST_CASE("shapes walked over one period equal walking every group (leaves of 20 servers)") {
  // dgx-a100 leaves hold 160 GPUs: power-of-two strides are not aligned with them, so these
  // layouts take the periodic walk; the answer must be what walking every group gives.
  for (int nodes : {20, 60, 100})
    require_shapes_match_walk("dgx-a100", nodes, {"tp-dp-pp", "dp-pp-tp", "pp-tp-dp"});
}

TEST_CASE("a group straddling servers unevenly reports its fewest members per server") {
  Cluster c = test::preset_cluster("dgx-h100", 3);
  GroupShape g = shape_of_devices(c, std::vector<int>{6, 7, 8, 9, 10, 11});
  CHECK(g.span_tier == 1);
  CHECK(g.per_domain[0] == 2);  // 2 in server 0, 4 in server 1
}
