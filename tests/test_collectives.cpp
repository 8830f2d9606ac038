// Golden numbers: every expected value is computed by hand in the comments, on dgx-h100 with the
// default calibration: NVLink 450 GB/s x 0.82 = 369 GB/s ring busbw, 0.6 us per step, NVLS
// 450 x 1.084 = 487.8 GB/s after 60 us; network 50 GB/s per GPU x 0.86 = 43 GB/s, 6 us per step;
// every collective pays 6 us once, and 20 us more if it leaves the server.
#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "topoplan/collectives.hpp"

using namespace topoplan;

namespace {

GroupShape shape(int size, int span, std::initializer_list<int> per_domain = {}) {
  GroupShape g;
  g.size = size;
  g.span_tier = span;
  int k = 0;
  for (int v : per_domain) g.per_domain[k++] = v;
  return g;
}

Fabric h100(int nodes) {
  return make_fabric(test::preset_cluster("dgx-h100", nodes), Calibration{});
}

}  // namespace

TEST_CASE("the fabric applies the calibration per link kind") {
  Fabric f = h100(2);
  CHECK(f.bandwidth[0] == Approx(369e9));
  CHECK(f.latency[0] == Approx(0.6e-6));
  CHECK(f.nvls[0] == Approx(487.8e9));
  CHECK(f.bandwidth[1] == Approx(43e9));
  CHECK(f.latency[1] == Approx(6e-6));
  Fabric a = make_fabric(test::preset_cluster("dgx-a100", 2), Calibration{});
  CHECK(a.bandwidth[0] == Approx(231e9));  // 300 x 0.77: nccl-tests' ~230 GB/s
  CHECK(a.nvls[0] == 0);                   // no NVLink SHARP on A100
  Fabric big = h100(64);                   // 2 leaves: the spine adds a switch hop
  CHECK(big.latency[2] == Approx(7e-6));
}

TEST_CASE("all-reduce inside one server: ring, and NVLS where the switch reduces") {
  Fabric f = h100(2);
  // Ring, n = 8, S = 1e8 B: 6 us + 14 steps x 0.6 us = 14.4 us; 14/8 x 1e8 / 369e9 = 474.2547 us.
  auto r = ring_all_reduce(f, shape(8, 0), 1e8);
  CHECK(r.algorithm == Algorithm::ring);
  CHECK(r.time == Approx(488.6547e-6).epsilon(1e-6));
  // NVLS: 60 us; 1.75e8 / 487.8e9 = 358.7536 us; total 418.7536 us: chosen.
  CHECK(nvls_all_reduce(f, shape(8, 0), 1e8).time == Approx(418.7536e-6).epsilon(1e-6));
  CHECK(all_reduce(f, shape(8, 0), 1e8).algorithm == Algorithm::nvls);
  // At 16 MiB the ring wins: 14.4 + 1.75 x 16777216 / 369e9 = 93.97 us against NVLS's
  // 60 + 60.19 = 120.19 us (measured NVLS: 124 us, dgxc-benchmarking).
  CHECK(all_reduce(f, shape(8, 0), 16777216).algorithm == Algorithm::ring);
  CHECK(nvls_all_reduce(f, shape(8, 0), 16777216).time == Approx(120.19e-6).epsilon(1e-4));
  // All-gather and reduce-scatter: 6 + 7 x 0.6 = 10.2 us; 7/8 x 1e8 / 369e9 = 237.1274 us.
  CHECK(ring_all_gather(f, shape(8, 0), 1e8).time == Approx(247.3274e-6).epsilon(1e-6));
  CHECK(ring_reduce_scatter(f, shape(8, 0), 1e8).time == Approx(247.3274e-6).epsilon(1e-6));
  // Tiny all-reduce on 8 GPUs: 14.4 us by ring (measured: 13-17 us).
  CHECK(all_reduce(f, shape(8, 0), 8).time == Approx(14.4e-6).epsilon(1e-3));
}

TEST_CASE("one GPU per server: every ring step crosses the network on one NIC's share") {
  Fabric f = h100(8);
  // 8 members, one per server: 43 GB/s; 6 + 20 + 14 x 6 = 110 us; 1.75e8 / 43e9 = 4069.767 us.
  CHECK(ring_all_reduce(f, shape(8, 1, {1}), 1e8).time == Approx(4179.767e-6).epsilon(1e-6));
  // Tree: 26 + 2 x (0 + log2(8) = 3 steps x 6 us) = 62 us; 2 x 1e8 / 43e9 = 4651.163 us.
  CHECK(tree_all_reduce(f, shape(8, 1, {1}), 1e8).time == Approx(4713.163e-6).epsilon(1e-6));
  CHECK(all_reduce(f, shape(8, 1, {1}), 1e8).algorithm == Algorithm::ring);
}

TEST_CASE("two full servers: ring, tree and hierarchical, cheapest by message size") {
  Fabric f = h100(2);
  auto g = shape(16, 1, {8});
  // Bottleneck min(369, 8 x 43 = 344) GB/s.
  CHECK(ring_bandwidth(f, g) == Approx(344e9));
  // Ring: 26 + 30 x 6 = 206 us; 30/16 x 1e8 / 344e9 = 545.0581 us; 751.0581 us.
  CHECK(ring_all_reduce(f, g, 1e8).time == Approx(751.0581e-6).epsilon(1e-6));
  // Tree: 26 + 2 x (7 x 0.6 + 1 x 6) = 46.4 us; 2 x 1e8 / 344e9 = 581.3953 us; 627.7953 us.
  CHECK(tree_all_reduce(f, g, 1e8).time == Approx(627.7953e-6).epsilon(1e-6));
  // Hierarchical: reduce-scatter in the server 247.3274 us; across 2 servers on 1.25e7 B by ring
  // 26 + 2 x 6 + 1.25e7 / 43e9 = 328.6977 us; all-gather 247.3274 us; total 823.3525 us.
  CHECK(hierarchical_all_reduce(f, g, 1e8).time == Approx(823.3525e-6).epsilon(1e-6));
  CHECK(all_reduce(f, g, 1e8).algorithm == Algorithm::tree);
  // Tiny (8 B): the tree's 46.4 us, as measured (~46-48 us, nccl issue 1244).
  CHECK(all_reduce(f, g, 8).time == Approx(46.4e-6).epsilon(1e-3));
}

TEST_CASE("point-to-point, all-to-all and broadcast") {
  Fabric f = h100(2);
  // 67,108,864 B across servers: 6 + 20 + 6 = 32 us + 67108864 / 43e9 = 1560.6713 us.
  CHECK(send_recv(f, 1, 67108864).time == Approx(1592.6713e-6).epsilon(1e-6));
  CHECK(send_recv(f, 0, 1e6).time == Approx(6.6e-6 + 1e6 / 369e9));
  CHECK(send_recv(f, -1, 1e6).time == 0);
  // All-to-all of 1.6e8 B over 16 GPUs (8 per server): 7/16 of it over NVLink, 70e6 / 369e9 =
  // 189.70 us; 8/16 across, 80e6 / 43e9 = 1860.47 us, concurrently; + 26 + 6 us latency.
  CHECK(all_to_all(f, shape(16, 1, {8}), 1.6e8).time == Approx(32e-6 + 80e6 / 43e9));
  // Broadcast of 1e8 B inside a server: 6 + 7 x 0.6 = 10.2 us + 1e8 / 369e9 = 271.0027 us.
  CHECK(broadcast(f, shape(8, 0), 1e8).time == Approx(10.2e-6 + 1e8 / 369e9));
}

TEST_CASE("oversubscription divides what a group gets above the leaf") {
  ClusterSpec s = load_cluster("dgx-h100", "test");
  s.nodes = 64;
  s.tiers[2].oversubscription = 4;
  Fabric f = make_fabric(Cluster(s, "test"), Calibration{});
  // 4 members per leaf (stride 64 GPUs): spine share 4 x 50/4 x 0.86 = 43 GB/s, equal to the
  // per-server share 1 x 43 GB/s.
  CHECK(ring_bandwidth(f, shape(8, 2, {1, 4})) == Approx(43e9));
  // With 2 per leaf: 2 x 12.5 x 0.86 = 21.5 GB/s.
  CHECK(ring_bandwidth(f, shape(8, 2, {1, 2})) == Approx(21.5e9));
}

TEST_CASE("in-network reduction (SHARP): each byte into the switches once, when every tier can") {
  ClusterSpec s = load_cluster("dgx-h100", "test");
  s.nodes = 64;  // leaves of 32 servers and a spine
  s.tiers[1].in_network_reduction = true;
  const Fabric f = make_fabric(Cluster(s, "test"), Calibration{});
  CHECK(f.sharp[1]);
  CHECK_FALSE(f.sharp[2]);  // the spine does not reduce: a group across leaves cannot use it
  // One GPU in each of 8 servers under one leaf: 6 + 20 + 2 x 1 tier x 6 = 38 us; nothing to do
  // inside a server; 1e8 / 43e9 = 2325.581 us into the network once: 2363.581 us, against the
  // ring's 4179.767 us (twice across, 14 steps).
  const auto one = sharp_all_reduce(f, shape(8, 1, {1}), 1e8);
  CHECK(one.time == Approx(2363.581e-6).epsilon(1e-6));
  CHECK(all_reduce(f, shape(8, 1, {1}), 1e8).algorithm == Algorithm::sharp);
  // Two full servers: reduce-scatter + all-gather inside, 2 x 7/8 x 1e8 / 369e9 = 474.2547 us,
  // pipelined with 1e8 / 8 / 43e9 = 290.6977 us across: the NVLink side sets it. Latency 26 +
  // 12 + 2 x 7 x 0.6 = 46.4 us: 520.6547 us, below the tree's 627.7953 us.
  CHECK(sharp_all_reduce(f, shape(16, 1, {8}), 1e8).time == Approx(520.6547e-6).epsilon(1e-6));
  CHECK(all_reduce(f, shape(16, 1, {8}), 1e8).algorithm == Algorithm::sharp);
  // Across the spine, or inside one server: not available.
  CHECK(sharp_all_reduce(f, shape(8, 2, {1, 1}), 1e8).algorithm == Algorithm::none);
  CHECK(sharp_all_reduce(f, shape(8, 0), 1e8).algorithm == Algorithm::none);
  // Off by default: the preset's fabric never picks it.
  CHECK(all_reduce(h100(8), shape(8, 1, {1}), 1e8).algorithm == Algorithm::ring);
}
