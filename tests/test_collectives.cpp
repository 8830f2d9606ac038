// Golden numbers: every expected value is computed by hand in the comments, on dgx-h100
// (NVLink 450 GB/s x 0.82 = 369 GB/s, 1 us per step; NIC 50 GB/s per GPU x 0.86 = 43 GB/s,
// 3.5 us per step at the leaf).
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

}  // namespace

TEST_CASE("ring all-reduce inside one server") {
  Cluster c = test::preset_cluster("dgx-h100", 2);
  Calibration cal;
  // n = 8, S = 1e8 B: 2(n-1) = 14 steps x 1 us = 14 us; 14/8 x 1e8 / 369e9 = 474.2547 us.
  auto r = ring_all_reduce(c, cal, shape(8, 0), 1e8);
  CHECK(r.algorithm == Algorithm::ring);
  CHECK(r.time == Approx(14e-6 + 1.75e8 / 369e9).epsilon(1e-9));
  CHECK(r.time == Approx(488.2547e-6).epsilon(1e-6));
  // All-gather and reduce-scatter: n-1 = 7 steps, 7/8 of the bytes: exactly half.
  CHECK(ring_all_gather(c, cal, shape(8, 0), 1e8).time == Approx(r.time / 2));
  CHECK(ring_reduce_scatter(c, cal, shape(8, 0), 1e8).time == Approx(r.time / 2));
}

TEST_CASE("ring all-reduce with one GPU per server pays the NIC share on every step") {
  Cluster c = test::preset_cluster("dgx-h100", 8);
  Calibration cal;
  // 8 members, one per server: bandwidth 1 x 43 GB/s, latency 3.5 us per step.
  // 14 x 3.5 us = 49 us; 1.75e8 / 43e9 = 4069.767 us; total 4118.767 us.
  auto r = ring_all_reduce(c, cal, shape(8, 1, {1}), 1e8);
  CHECK(r.time == Approx(4118.767e-6).epsilon(1e-6));
}

TEST_CASE("ring over two full servers uses all eight NICs") {
  Cluster c = test::preset_cluster("dgx-h100", 2);
  Calibration cal;
  // 16 members, 8 per server: bottleneck min(369, 8 x 43 = 344) GB/s; 30 steps x 3.5 us = 105 us;
  // 30/16 x 1e8 / 344e9 = 545.0581 us; total 650.0581 us.
  auto g = shape(16, 1, {8});
  CHECK(ring_bandwidth(c, cal, g) == Approx(344e9));
  CHECK(ring_all_reduce(c, cal, g, 1e8).time == Approx(650.0581e-6).epsilon(1e-6));
  // Hierarchical: reduce-scatter in the server, 7 us + 7/8 x 1e8 / 369e9 = 244.1274 us;
  // all-reduce across 2 servers of 1.25e7 B, 2 steps x 3.5 us + 1.25e7 / 43e9 = 297.6977 us;
  // all-gather as the reduce-scatter, 244.1274 us. Total 785.9525 us: the ring wins.
  auto h = hierarchical_all_reduce(c, cal, g, 1e8);
  CHECK(h.time == Approx(785.9525e-6).epsilon(1e-6));
  CHECK(all_reduce(c, cal, g, 1e8).algorithm == Algorithm::ring);
  // Small messages are latency-bound: 8 KB. Ring 105 us + 30/16 x 8192 / 344e9 = 105.0447 us;
  // hierarchical 7 + 7 + 7 us of latency + bytes: 21.0155 + 0.0238... = about 21.05 us.
  auto small = all_reduce(c, cal, g, 8192);
  CHECK(small.algorithm == Algorithm::hierarchical);
  CHECK(small.time == Approx(7e-6 + 7.0 / 8 * 8192 / 369e9 + 7e-6 + 1024 / 43e9 + 7e-6 +
                             7.0 / 8 * 8192 / 369e9)
                          .epsilon(1e-9));
  CHECK(small.time < 21.1e-6);
}

TEST_CASE("point-to-point: latency plus bytes over the tier's bandwidth") {
  Cluster c = test::preset_cluster("dgx-h100", 2);
  Calibration cal;
  // 67,108,864 B across servers: 3.5 us + 67108864 / 43e9 = 1564.1 us.
  CHECK(send_recv(c, cal, 1, 67108864).time == Approx(3.5e-6 + 67108864 / 43e9));
  CHECK(send_recv(c, cal, 0, 1e6).time == Approx(1e-6 + 1e6 / 369e9));
  CHECK(send_recv(c, cal, -1, 1e6).time == 0);
}

TEST_CASE("oversubscription divides what a group gets above the leaf") {
  ClusterSpec s = load_cluster("dgx-h100", "test");
  s.nodes = 64;
  s.tiers[2].oversubscription = 4;
  Cluster c(s, "test");
  Calibration cal;
  // A group with 8 members spread 1 per leaf... here 4 per leaf (stride 64 GPUs): spine share is
  // 4 x 50/4 x 0.86 = 43 GB/s, equal to the per-server share 1 x 43 GB/s.
  CHECK(ring_bandwidth(c, cal, shape(8, 2, {1, 4})) == Approx(43e9));
  // With 2 per leaf: 2 x 12.5 x 0.86 = 21.5 GB/s.
  CHECK(ring_bandwidth(c, cal, shape(8, 2, {1, 2})) == Approx(21.5e9));
}
