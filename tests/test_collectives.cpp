// Golden numbers: every expected value is computed by hand in the comments, on dgx-h100 with the
// default calibration: NVLink 450 GB/s x 0.82 = 369 GB/s ring busbw, 0.6 us per step, NVLS
// 450 x 1.084 = 487.8 GB/s after 60 us; network 50 GB/s per GPU x 0.86 = 43 GB/s, 6 us per step;
// every collective pays 6 us once, and 20 us more if it leaves the server. Rings and trees run
// under the fastest of NCCL's LL, LL128 and Simple protocols (figures in each case).
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
  // Ring, n = 8, S = 1e8 B, by protocol. Simple: 8.4 us + 14 steps x 3.4 us = 56 us; 14/8 x 1e8 /
  // 369e9 = 474.2547 us; 530.2547 us. LL128: 14 + 14 x 1.9 = 40.6 us; 1.75e8 / (0.92 x 369e9) =
  // 515.4943 us; 556.0943 us. LL: 6 + 14 x 0.6 = 14.4 us; 1.75e8 / min(184.5, 141) GB/s =
  // 1241.1348 us. Simple is chosen.
  auto r = ring_all_reduce(f, shape(8, 0), 1e8);
  CHECK(r.algorithm == Algorithm::ring);
  CHECK(r.protocol == Protocol::simple);
  CHECK(r.time == Approx(530.2547e-6).epsilon(1e-6));
  // NVLS: 60 us; 1.75e8 / 487.8e9 = 358.7536 us; total 418.7536 us: chosen.
  CHECK(nvls_all_reduce(f, shape(8, 0), 1e8).time == Approx(418.7536e-6).epsilon(1e-6));
  CHECK(all_reduce(f, shape(8, 0), 1e8).algorithm == Algorithm::nvls);
  // At 16 MiB the ring's best is LL128, 40.6 + 1.75 x 16777216 / 339.48e9 = 127.09 us, and
  // NVLS's 60 + 60.19 = 120.19 us wins (measured NVLS: 124 us, dgxc-benchmarking).
  const auto mid = ring_all_reduce(f, shape(8, 0), 16777216);
  CHECK(mid.protocol == Protocol::ll128);
  CHECK(mid.time == Approx(127.09e-6).epsilon(1e-4));
  CHECK(all_reduce(f, shape(8, 0), 16777216).algorithm == Algorithm::nvls);
  CHECK(nvls_all_reduce(f, shape(8, 0), 16777216).time == Approx(120.19e-6).epsilon(1e-4));
  // At 1 MiB, LL: 14.4 + 1.75 x 1048576 / 141e9 = 27.41 us (measured 27 us, dgxc-benchmarking);
  // the old single-protocol model said 19.4 us.
  const auto mib = all_reduce(f, shape(8, 0), 1048576);
  CHECK(mib.protocol == Protocol::ll);
  CHECK(mib.time == Approx(27.414e-6).epsilon(1e-3));
  // All-gather and reduce-scatter, Simple: 8.4 + 7 x 3.4 = 32.2 us; 7/8 x 1e8 / 369e9 = 237.1274
  // us (LL128: 27.3 + 257.7471 us).
  CHECK(ring_all_gather(f, shape(8, 0), 1e8).time == Approx(269.3274e-6).epsilon(1e-6));
  CHECK(ring_reduce_scatter(f, shape(8, 0), 1e8).time == Approx(269.3274e-6).epsilon(1e-6));
  // Tiny all-reduce on 8 GPUs: 14.4 us by ring LL (measured: 13-17 us).
  const auto tiny = all_reduce(f, shape(8, 0), 8);
  CHECK(tiny.time == Approx(14.4e-6).epsilon(1e-3));
  CHECK(tiny.protocol == Protocol::ll);
}

TEST_CASE("one GPU per server: every ring step crosses the network on one NIC's share") {
  Fabric f = h100(8);
  // 8 members, one per server: 43 GB/s. Simple: 8.4 + 20 + 14 x 14 = 224.4 us; 1.75e8 / 43e9 =
  // 4069.767 us. (LL128: 118 + 4423.66 us; LL at most 20.4 GB/s across more than 2 servers.)
  CHECK(ring_all_reduce(f, shape(8, 1, {1}), 1e8).time == Approx(4294.167e-6).epsilon(1e-6));
  // Tree, Simple: 28.4 + 2 x (0 + log2(8) = 3 steps x 14 us) = 112.4 us; a tree gets 0.92 of the
  // ring's bandwidth: 2 x 1e8 / 39.56e9 = 5055.612 us.
  CHECK(tree_all_reduce(f, shape(8, 1, {1}), 1e8).time == Approx(5168.012e-6).epsilon(1e-6));
  CHECK(all_reduce(f, shape(8, 1, {1}), 1e8).algorithm == Algorithm::ring);
}

TEST_CASE("two full servers: ring, tree and hierarchical, cheapest by message size") {
  Fabric f = h100(2);
  auto g = shape(16, 1, {8});
  // Bottleneck min(369, 8 x 43 = 344) GB/s.
  CHECK(ring_bandwidth(f, g) == Approx(344e9));
  // Ring, as NCCL's tuning model counts its 30 steps: 2 x (2 - 1) cross the network, the other 28
  // take NVLink at no less than the 1 us network proxy overhead (3 us under Simple). LL128: 14 +
  // 20 + 28 x 1.9 + 2 x 6 = 99.2 us; 30/16 x 1e8 / (0.92 x 344e9) = 592.4544 us; 691.6544 us
  // (Simple: 28.4 + 28 x 3.4 + 2 x 14 = 151.6 + 545.0581 us).
  CHECK(ring_all_reduce(f, g, 1e8).time == Approx(691.6544e-6).epsilon(1e-6));
  // Tree, Simple: 8.4 + 20 + 2 x (7 x 3.4 + 1 x 14) = 104 us; 2 x 1e8 / (0.92 x 344e9) = 631.9515
  // us (LL128: 72.6 + 2e8 / (0.92 x 0.9375 x 344e9) = 746.7 us).
  CHECK(tree_all_reduce(f, g, 1e8).time == Approx(735.9515e-6).epsilon(1e-6));
  // Hierarchical: reduce-scatter in the server 269.3274 us; across 2 servers on 1.25e7 B by ring,
  // Simple, 28.4 + 2 x 14 + 1.25e7 / 43e9 = 347.0977 us; all-gather 269.3274 us: 885.7525 us.
  CHECK(hierarchical_all_reduce(f, g, 1e8).time == Approx(885.7525e-6).epsilon(1e-6));
  CHECK(all_reduce(f, g, 1e8).algorithm == Algorithm::ring);
  // Tiny (8 B): the tree's LL, 26 + 2 x (7 x 0.6 + 6) = 46.4 us, as measured (~46-48 us, nccl
  // issue 1244); the ring's LL pays 26 + 28 x 1 + 2 x 6 = 66 us.
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
  // Broadcast of 1e8 B inside a server, Simple: 8.4 + 7 x 3.4 = 32.2 us + 1e8 / 369e9.
  CHECK(broadcast(f, shape(8, 0), 1e8).time == Approx(32.2e-6 + 1e8 / 369e9));
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
  // ring's 4294.167 us (twice across, 14 steps).
  const auto one = sharp_all_reduce(f, shape(8, 1, {1}), 1e8);
  CHECK(one.time == Approx(2363.581e-6).epsilon(1e-6));
  CHECK(all_reduce(f, shape(8, 1, {1}), 1e8).algorithm == Algorithm::sharp);
  // Two full servers: reduce-scatter + all-gather inside, 2 x 7/8 x 1e8 / 369e9 = 474.2547 us,
  // pipelined with 1e8 / 8 / 43e9 = 290.6977 us across: the NVLink side sets it. Latency 26 +
  // 12 + 2 x 7 x 0.6 = 46.4 us: 520.6547 us, below the tree's 735.9515 us.
  CHECK(sharp_all_reduce(f, shape(16, 1, {8}), 1e8).time == Approx(520.6547e-6).epsilon(1e-6));
  CHECK(all_reduce(f, shape(16, 1, {8}), 1e8).algorithm == Algorithm::sharp);
  // Across the spine, or inside one server: not available.
  CHECK(sharp_all_reduce(f, shape(8, 2, {1, 1}), 1e8).algorithm == Algorithm::none);
  CHECK(sharp_all_reduce(f, shape(8, 0), 1e8).algorithm == Algorithm::none);
  // Off by default: the preset's fabric never picks it.
  CHECK(all_reduce(h100(8), shape(8, 1, {1}), 1e8).algorithm == Algorithm::ring);
}

TEST_CASE("LL128 only where a server's GPUs talk over NVLink, as NCCL enables it") {
  ClusterSpec s = load_cluster("dgx-h100", "test");
  s.nodes = 1;
  const auto mid = shape(8, 0);
  // NVLink: 16 MiB runs LL128 (tested above).
  CHECK(ring_all_reduce(make_fabric(Cluster(s, "test"), Calibration{}), mid, 16777216).protocol ==
        Protocol::ll128);
  // The same server on PCIe: Simple or LL, never LL128.
  s.tiers[0].link = Link::pcie;
  const Fabric pcie = make_fabric(Cluster(s, "test"), Calibration{});
  for (double bytes : {1e3, 1e5, 1e6, 16777216.0, 1e9})
    CHECK(ring_all_reduce(pcie, mid, bytes).protocol != Protocol::ll128);
}
