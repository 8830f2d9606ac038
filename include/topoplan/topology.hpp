#pragma once
/// Cluster topology: a GPU type and a hierarchy of network tiers, innermost (the server) first.
/// `Cluster` validates a spec and answers per-pair questions in O(tiers).
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace topoplan {

/// GPU architecture: selects the calibrated matrix-multiply efficiency. Blackwell Ultra (B300,
/// GB300) is a class of its own: the same dense peaks as Blackwell, a higher sustained fraction.
enum class Arch : std::uint8_t { ampere, hopper, blackwell, blackwell_ultra };
inline constexpr int kArchs = 4;
[[nodiscard]] const char* to_string(Arch a);

/// What a tier's links are made of: selects the calibrated achieved-bandwidth fraction, step
/// latency and in-switch reduction.
enum class Link : std::uint8_t { nvlink3, nvlink4, nvlink5, pcie, infiniband, roce };
inline constexpr int kLinks = 6;
[[nodiscard]] const char* to_string(Link l);

/// One GPU type. All fields SI.
struct GpuSpec {
  std::string name;
  Arch arch = Arch::hopper;
  double peak_flops = 0;      ///< dense BF16/FP16 FLOP/s
  double peak_flops_fp8 = 0;  ///< dense FP8 FLOP/s, 0 if unsupported
  double peak_flops_fp4 = 0;  ///< dense FP4 (NVFP4) FLOP/s, 0 if unsupported
  double memory_bytes = 0;    ///< HBM capacity
  double hbm_bandwidth = 0;   ///< HBM bytes/s
  /// Host (CPU memory) link, bytes/s per GPU per direction: what activation offloading copies
  /// over (PCIe, or NVLink-C2C on a Grace superchip); 0 if not given (no offloading).
  double host_link_bandwidth = 0;
  std::string source;  ///< citation for the figures
};

/// One tier of the network. Tier 0 is the server (NVLink/NVSwitch); tier k > 0 joins `fanout`
/// tier-(k-1) domains.
struct TierSpec {
  std::string name;
  int fanout = 0;  ///< tier 0: GPUs per server; k > 0: lower domains joined (0 = all)
  Link link = Link::infiniband;
  double bandwidth = 0;  ///< line rate, bytes/s per GPU per direction, between GPUs that meet here
  double latency = 0;    ///< seconds per step; 0: from the calibration (link and tier)
  double oversubscription = 1;  ///< down/up ratio of the links that join the lower domains
  /// Rail-optimized (tier 1 only): the tier's switches are per GPU index, so GPU i of one server
  /// reaches GPU i of another server under the same leaf block in one hop, and GPUs of different
  /// indices meet only at the tier above (the spine).
  bool rails = false;
  /// The tier's switches reduce in the network (InfiniBand SHARP, NCCL's CollNet): an all-reduce
  /// whose group spans up to this tier, with every tier from 1 up to it capable, can send each
  /// byte into the switches once instead of the ring's twice (collectives.hpp).
  bool in_network_reduction = false;
};

/// Servers of one GPU type, listed in server order (a cluster of mixed generations).
struct ServerGroup {
  int count = 0;
  GpuSpec gpu;
  /// GPUs in each of these servers (0: tier 0's fanout, the most any server holds). The slots
  /// above it are absent: no plan uses them.
  int gpus = 0;
  /// Placeholders, no servers at all: they pad a leaf that holds fewer servers than the tier's
  /// fanout, so that the servers after them start the next leaf (an irregular tree).
  bool absent = false;
};

struct ClusterSpec {
  std::string name;
  std::string source;  ///< citation for the figures
  /// The GPU; with server groups of several types, the slowest (dense FLOP/s) with the least
  /// memory of any: what a part of the model that assumes one type takes.
  GpuSpec gpu;
  /// Servers by GPU type in server order ("servers" in the cluster file); empty: all `gpu`.
  std::vector<ServerGroup> server_groups;
  int nodes = 1;             ///< servers
  int nics_per_server = 0;   ///< NICs used for GPU traffic between servers
  double nic_bandwidth = 0;  ///< bytes/s per NIC per direction
  /// GPUs one operating-system host holds (0: the whole server). A server here is an NVLink
  /// domain; an NVL72 rack is 18 compute trays of 4 GPUs, each its own host. Only the launcher
  /// files (export) see it: processes start per host.
  int gpus_per_host = 0;
  std::vector<TierSpec> tiers;
  /// Host names in server order (optional; from Slurm's topology.conf): export's host files use
  /// them when --hosts is not given.
  std::vector<std::string> hosts;
  /// Where gpus_per_host splits servers: each host's name (gpus_per_host GPUs each, in server
  /// order; an NVL72 rack's 18 trays). Export's launcher files use them when --hosts is not
  /// given; --exclude and down_gpus take HOST or HOST:GPU, the GPU counted on that host.
  std::vector<std::string> compute_hosts;
  /// GPUs that cannot be used (failed or drained), as device ids (server x GPUs per server +
  /// GPU index), sorted, each once: the cluster file's down_gpus and --exclude.
  std::vector<int> down;
};

/// Hosts per server: the server's GPUs over gpus_per_host where that divides them into several
/// hosts (an NVL72 rack's 18 trays), else 1. The one rule the cluster reader, the Slurm block
/// import and the launcher files' host count share.
[[nodiscard]] inline int hosts_per_server(const ClusterSpec& s) {
  const int per_server = s.tiers.empty() ? 0 : s.tiers[0].fanout, per_host = s.gpus_per_host;
  return per_host > 0 && per_host < per_server && per_server % per_host == 0 ? per_server / per_host
                                                                             : 1;
}

/// Group shapes a cluster has already walked (mapping.cpp): shared by a cluster's copies.
struct ShapeMemo;
[[nodiscard]] std::shared_ptr<ShapeMemo> make_shape_memo();

/// A validated cluster with per-tier figures precomputed.
class Cluster {
 public:
  static constexpr int kMaxTiers = 6;
  /// The most GPUs a cluster may have (2^20): every product of counts stays far from overflow.
  static constexpr std::int64_t kMaxGpus = 1 << 20;

  /// Validates; errors are InputError naming `source` and the field.
  explicit Cluster(ClusterSpec spec, const std::string& source = "cluster");

  [[nodiscard]] const ClusterSpec& spec() const { return spec_; }
  [[nodiscard]] const GpuSpec& gpu() const { return spec_.gpu; }
  [[nodiscard]] int gpu_count() const { return gpu_count_; }
  [[nodiscard]] int gpus_per_server() const { return spec_.tiers[0].fanout; }
  /// GPUs per operating-system host: the server's unless server.gpus_per_host splits it.
  [[nodiscard]] int gpus_per_host() const {
    return spec_.gpus_per_host > 0 ? spec_.gpus_per_host : gpus_per_server();
  }
  /// True when a server is several hosts (an NVL72 rack's trays): hosts, not servers, are named.
  [[nodiscard]] bool hosts_split_servers() const { return hosts_per_server(spec_) > 1; }
  [[nodiscard]] int tier_count() const { return tier_count_; }
  [[nodiscard]] const std::string& tier_name(int k) const { return spec_.tiers[k].name; }
  /// GPUs in one tier-k domain (at most the whole cluster).
  [[nodiscard]] std::int64_t domain_size(int k) const { return domain_[k]; }
  /// The innermost tier whose domain holds both devices (0 = same server). On a rail-optimized
  /// tier, GPUs of different indices in different servers meet one tier higher.
  [[nodiscard]] int meet_tier(int a, int b) const;
  /// True when servers hold GPUs of more than one type.
  [[nodiscard]] bool mixed() const { return mixed_; }
  /// The GPU type of a device (the cluster's GPU unless mixed).
  [[nodiscard]] const GpuSpec& gpu_of(int device) const {
    return !mixed_ ? spec_.gpu
                   : spec_.server_groups[type_of_server_[device / gpus_per_server()]].gpu;
  }
  /// The rail-optimized tier (1), or -1.
  [[nodiscard]] int rail_tier() const { return rail_tier_; }
  /// Tier k (k >= 1) reduces in its switches (TierSpec::in_network_reduction).
  [[nodiscard]] bool in_network_reduction(int k) const {
    return spec_.tiers[k].in_network_reduction;
  }
  /// False for a GPU listed as down.
  [[nodiscard]] bool usable(int device) const { return down_mask_.empty() || !down_mask_[device]; }
  /// GPUs neither down nor absent (slots above a smaller server's GPU count).
  [[nodiscard]] int usable_count() const { return gpu_count_ - unusable_; }
  /// True when some GPU is down or absent: plans then run on an explicit placement
  /// (placement.hpp).
  [[nodiscard]] bool has_down_gpus() const { return unusable_ > 0; }
  /// Slots of servers that hold fewer GPUs than tier 0's fanout (server groups' `gpus`).
  [[nodiscard]] int absent_count() const { return unusable_ - static_cast<int>(spec_.down.size()); }
  /// The most GPUs a plan of this TP degree can use with every TP group inside one server (or,
  /// above a server's size, on whole servers): tp x the TP groups that fit on usable GPUs.
  [[nodiscard]] std::int64_t tp_capacity(int tp) const;
  [[nodiscard]] Link link(int k) const { return spec_.tiers[k].link; }
  /// The tier's own latency override, seconds (0: use the calibration's).
  [[nodiscard]] double latency_override(int k) const { return spec_.tiers[k].latency; }
  /// Line-rate bytes/s per GPU per direction between GPUs that meet at tier k, when every GPU
  /// of the server sends across at once: the least of the NIC share and the tiers' bandwidths up
  /// to k, divided by the product of the oversubscriptions up to k (they compound).
  [[nodiscard]] double bandwidth(int k) const { return bandwidth_[k]; }
  /// Shapes that took a walk over devices, kept for the next plan that asks (thread-safe).
  [[nodiscard]] ShapeMemo& shape_memo() const { return *shape_memo_; }

 private:
  /// Down GPUs and the absent slots of smaller servers into down_mask_; InputError on a device
  /// outside the cluster or when none is left.
  void mark_unusable(const std::string& source);

  ClusterSpec spec_;
  int gpu_count_ = 0;
  int tier_count_ = 0;  ///< tiers in use: the first whose domain holds the whole cluster, +1
  std::array<std::int64_t, kMaxTiers> domain_{};
  std::array<double, kMaxTiers> bandwidth_{};
  int rail_tier_ = -1;
  bool mixed_ = false;
  std::vector<std::uint16_t> type_of_server_;  ///< mixed: server -> server group
  std::vector<std::uint8_t> down_mask_;        ///< per device, down or absent; empty when none is
  int unusable_ = 0;                           ///< devices down or absent
  std::vector<std::int64_t> servers_with_;     ///< [u]: servers with u usable GPUs; empty: all
  std::shared_ptr<ShapeMemo> shape_memo_ = make_shape_memo();
};

/// Parses a list of GPUs to leave out: comma-separated SERVER (every GPU of it) or SERVER:GPU,
/// SERVER a host name of the cluster (ClusterSpec::hosts) or a server index from 0; or HOST or
/// HOST:GPU with HOST one of ClusterSpec::compute_hosts (the GPU counted on that host). Adds them
/// to spec.down (sorted, each once). InputError naming `what` and the entry.
void add_down_gpus(ClusterSpec& spec, const std::string& list, const std::string& what);
/// "node07:3" (or "7:3" without host names), or "gb020:3" (HOST:GPU counted on the host) where the
/// cluster names its compute_hosts: how reports name a device; add_down_gpus reads it back.
[[nodiscard]] std::string device_name(const ClusterSpec& spec, int device);
/// Device names grouped by server ("node03:0-2,4-7 node09:5"), or by host where the cluster names
/// its compute_hosts ("gb020:3"): how reports list idle or down GPUs. At most `limit` servers
/// (hosts) are named, then "and N more servers" ("hosts").
[[nodiscard]] std::string devices_string(const ClusterSpec& spec, std::vector<int> devices,
                                         int limit = 8);

/// Looks a GPU up by name (presets), used by cluster files that name their GPU.
using GpuResolver = std::function<GpuSpec(const std::string& name, const std::string& source,
                                          const std::string& path)>;

/// Parses a GPU JSON document (schema topoplan.gpu/v1).
[[nodiscard]] GpuSpec parse_gpu_json(const std::string& text, const std::string& source);
/// Writes a spec as a topoplan.cluster/v1 document (the GPU inline) that parse_cluster_json reads
/// back to the same spec: a plan carries its cluster this way.
[[nodiscard]] std::string cluster_json(const ClusterSpec& s);
/// Parses a cluster JSON document (schema topoplan.cluster/v1); `gpu` may be a name or an object.
[[nodiscard]] ClusterSpec parse_cluster_json(const std::string& text, const std::string& source,
                                             const GpuResolver& resolve_gpu);

}  // namespace topoplan
