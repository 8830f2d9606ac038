#pragma once
/// Alpha-beta costs of collectives on a group of devices, from how the group falls on the tiers.
/// A transfer of S bytes costs latency + S / bandwidth; a ring step is as slow as its slowest hop.
/// Concurrency rule: every group of a dimension communicates at the same time, so a group that
/// leaves a domain gets (its members in that domain) x (the tier's per-GPU bandwidth).
#include <cstdint>

#include "topoplan/calibration.hpp"
#include "topoplan/mapping.hpp"
#include "topoplan/topology.hpp"

namespace topoplan {

enum class Algorithm : std::uint8_t { none, ring, hierarchical, direct };
[[nodiscard]] const char* to_string(Algorithm a);

struct CollectiveCost {
  double time = 0;  ///< seconds
  Algorithm algorithm = Algorithm::none;
};

/// Achieved bytes/s per GPU between GPUs that meet at tier k (line rate x calibrated fraction).
[[nodiscard]] double achieved_bandwidth(const Cluster& c, const Calibration& cal, int tier);
/// Bottleneck bytes/s of a ring over the group: NVLink between server-mates, and at each tier it
/// crosses, its members per lower domain times that tier's per-GPU bandwidth.
[[nodiscard]] double ring_bandwidth(const Cluster& c, const Calibration& cal, const GroupShape& g);

/// Ring all-reduce of `bytes` per GPU: 2(n-1) steps of bytes/n.
[[nodiscard]] CollectiveCost ring_all_reduce(const Cluster& c, const Calibration& cal,
                                             const GroupShape& g, double bytes);
/// Ring all-gather producing `bytes` per GPU (each contributes bytes/n): n-1 steps.
[[nodiscard]] CollectiveCost ring_all_gather(const Cluster& c, const Calibration& cal,
                                             const GroupShape& g, double bytes);
/// Ring reduce-scatter of `bytes` per GPU (each ends with bytes/n): n-1 steps.
[[nodiscard]] CollectiveCost ring_reduce_scatter(const Cluster& c, const Calibration& cal,
                                                 const GroupShape& g, double bytes);
/// Reduce-scatter inside each server, all-reduce across servers on 1/r of the data, all-gather
/// inside. Only for groups that span servers with at least two members per server.
[[nodiscard]] CollectiveCost hierarchical_all_reduce(const Cluster& c, const Calibration& cal,
                                                     const GroupShape& g, double bytes);
/// The cheaper of ring and hierarchical (ring on a tie).
[[nodiscard]] CollectiveCost all_reduce(const Cluster& c, const Calibration& cal,
                                        const GroupShape& g, double bytes);
/// One point-to-point send of `bytes` between GPUs that meet at `tier` (-1: same GPU, free).
[[nodiscard]] CollectiveCost send_recv(const Cluster& c, const Calibration& cal, int tier,
                                       double bytes);

}  // namespace topoplan
