#pragma once
/// Alpha-beta costs of collectives on a group of devices, from how the group falls on the tiers.
/// A transfer of S bytes costs latency + S / bandwidth; a ring step is as slow as its slowest hop.
/// Concurrency rule: every group of a dimension communicates at the same time, so a group that
/// leaves a domain gets (its members in that domain) x (the tier's per-GPU bandwidth).
/// Like NCCL's tuner, all_reduce takes the cheapest algorithm for the message size.
#include <array>
#include <cstdint>
#include <string>

#include "topoplan/calibration.hpp"
#include "topoplan/mapping.hpp"
#include "topoplan/topology.hpp"

namespace topoplan {

enum class Algorithm : std::uint8_t {
  none,
  ring,
  tree,
  hierarchical,
  nvls,
  one_shot,
  direct,
  sharp
};
[[nodiscard]] const char* to_string(Algorithm a);

/// NCCL's protocols for ring, tree and broadcast: LL (lowest latency, a fraction of the
/// bandwidth), LL128, Simple (full bandwidth, longest latency); none for the other algorithms.
enum class Protocol : std::uint8_t { ll, ll128, simple, none };
inline constexpr int kProtocols = 3;  ///< the first three are NCCL's
[[nodiscard]] const char* to_string(Protocol p);

struct CollectiveCost {
  double time = 0;  ///< seconds
  Algorithm algorithm = Algorithm::none;
  Protocol protocol = Protocol::none;
};

/// How reports name a collective: the algorithm, and the protocol when it has one ("ring LL128").
[[nodiscard]] std::string collective_name(Algorithm a, Protocol p);

/// The per-tier figures collectives use: the cluster's links through the calibration.
struct Fabric {
  int tiers = 0;
  std::array<double, Cluster::kMaxTiers> bandwidth{};  ///< achieved bytes/s per GPU (ring busbw)
  std::array<double, Cluster::kMaxTiers> latency{};    ///< seconds per step (LL)
  /// Seconds per step and once per collective under each Protocol (LL: latency, base_latency).
  std::array<std::array<double, Cluster::kMaxTiers>, kProtocols> step_latency{};
  std::array<double, kProtocols> protocol_base{};
  /// Each protocol's share of a ring's and of a tree's bandwidth.
  std::array<double, kProtocols> ring_fraction{}, tree_fraction{};
  /// LL's bus-bandwidth ceiling: inside one server, across two, across more; bytes/s.
  std::array<double, 3> ll_ceiling{};
  std::array<double, Cluster::kMaxTiers> nvls{};  ///< in-switch all-reduce busbw; 0: none
  /// A group spanning up to tier k can reduce in the network: every tier 1..k has
  /// in-network reduction (TierSpec::in_network_reduction).
  std::array<bool, Cluster::kMaxTiers> sharp{};
  double nvls_latency = 0;          ///< seconds, once per NVLS all-reduce
  double base_latency = 0;          ///< seconds, once per collective
  double network_base_latency = 0;  ///< seconds, once if it leaves the server
  /// Under each protocol, the least a ring's NVLink step costs once the ring leaves the server.
  std::array<double, kProtocols> net_overhead{};
  bool hierarchical = false;  ///< all_reduce may pick the 2-level scheme
  /// Share of the SMs a collective hidden behind compute takes from it (Calibration::
  /// comm_sm_fraction): that compute runs this fraction of the hidden time longer.
  double sm_share = 0;
};

/// The step time a collective of `total` seconds adds when all but `exposed` of it runs behind
/// compute: the exposed part, and the hidden part's share of the SMs (Fabric::sm_share).
[[nodiscard]] double exposed_with_sm_share(const Fabric& f, double total, double exposed);

[[nodiscard]] Fabric make_fabric(const Cluster& c, const Calibration& cal);

/// Bottleneck bytes/s of a ring over the group: NVLink between server-mates, and at each tier it
/// crosses, its members per lower domain times that tier's per-GPU bandwidth.
[[nodiscard]] double ring_bandwidth(const Fabric& f, const GroupShape& g);

/// Ring all-reduce of `bytes` per GPU: 2(n-1) steps of bytes/n, under the fastest protocol.
[[nodiscard]] CollectiveCost ring_all_reduce(const Fabric& f, const GroupShape& g, double bytes);
/// Ring all-gather producing `bytes` per GPU (each contributes bytes/n): n-1 steps.
[[nodiscard]] CollectiveCost ring_all_gather(const Fabric& f, const GroupShape& g, double bytes);
/// Ring reduce-scatter of `bytes` per GPU (each ends with bytes/n): n-1 steps.
[[nodiscard]] CollectiveCost ring_reduce_scatter(const Fabric& f, const GroupShape& g,
                                                 double bytes);
/// NCCL's tree for groups that span servers: a chain inside each server and a double binary
/// tree across servers; latency grows with log2(servers), the data goes up and down once.
[[nodiscard]] CollectiveCost tree_all_reduce(const Fabric& f, const GroupShape& g, double bytes);
/// Reduce-scatter inside each server, all-reduce across servers on 1/r of the data (ring or
/// tree), all-gather inside. For groups that span servers with r >= 2 members per server.
[[nodiscard]] CollectiveCost hierarchical_all_reduce(const Fabric& f, const GroupShape& g,
                                                     double bytes);
/// NVLink SHARP: the switch reduces; for groups inside one server whose tier supports it.
[[nodiscard]] CollectiveCost nvls_all_reduce(const Fabric& f, const GroupShape& g, double bytes);
/// In-network reduction across servers (InfiniBand SHARP through NCCL's CollNet): inside each
/// server the r members reduce-scatter and later all-gather over NVLink, and each sends its 1/r
/// share into the switches once and gets the sum back on the same link, where a ring crosses the
/// network twice. NCCL pipelines the phases in chunks, so the slower of the two sets the time;
/// latency: up and down the switch tiers. For groups that span servers on tiers that all reduce.
[[nodiscard]] CollectiveCost sharp_all_reduce(const Fabric& f, const GroupShape& g, double bytes);
/// One-shot all-reduce (inference engines' custom kernel): every GPU reads the others' buffers
/// over NVSwitch in one step. For groups inside one server; latency-optimal for tiny messages.
[[nodiscard]] CollectiveCost one_shot_all_reduce(const Fabric& f, const GroupShape& g,
                                                 double bytes);
/// The cheapest of ring, tree, NVLS and in-network reduction (ties in that order), and of the
/// hierarchical scheme when the calibration enables it.
[[nodiscard]] CollectiveCost all_reduce(const Fabric& f, const GroupShape& g, double bytes);
/// The servers a group spans (1 inside one server).
[[nodiscard]] double servers_spanned(const GroupShape& g);
/// All-to-all of `bytes` per GPU (bytes/n to every member): the share for peers that meet at
/// each tier crosses that tier at the GPU's bandwidth there, all tiers at once. Of what leaves
/// the server only `server_share` is sent (1: all of it; less for a sender that sends a payload
/// once to each server and lets it be copied inside, as MoE's HybridEP and DeepEP dispatch).
[[nodiscard]] CollectiveCost all_to_all(const Fabric& f, const GroupShape& g, double bytes,
                                        double server_share = 1.0);
/// The same, per tier: seconds of transfer to the peers that meet at each tier.
[[nodiscard]] std::array<double, Cluster::kMaxTiers> all_to_all_per_tier(const Fabric& f,
                                                                         const GroupShape& g,
                                                                         double bytes,
                                                                         double server_share = 1.0);
/// Pipelined ring broadcast of `bytes` from one member.
[[nodiscard]] CollectiveCost broadcast(const Fabric& f, const GroupShape& g, double bytes);
/// One point-to-point send of `bytes` between GPUs that meet at `tier` (-1: same GPU, free).
[[nodiscard]] CollectiveCost send_recv(const Fabric& f, int tier, double bytes);

}  // namespace topoplan
