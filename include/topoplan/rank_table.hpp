#pragma once
/// Where every global rank runs: node, host, local rank and physical GPU, with its coordinates.
/// The common source of every export format.
#include <array>
#include <string>
#include <vector>

#include "topoplan/mapping.hpp"

namespace topoplan {

struct RankEntry {
  int rank = 0;
  int node = 0;           ///< server index in the cluster
  int host = 0;           ///< operating-system host: the server, or one of its trays
  int local_rank = 0;     ///< position among the host's ranks, in global-rank order
  int gpu = 0;            ///< physical GPU index on the node (server)
  int host_gpu = 0;       ///< CUDA device index on the host (gpu, unless hosts split servers)
  DimArray<int> coord{};  ///< ep from the expert layout, the rest from the dense one
};

struct RankTable {
  std::vector<RankEntry> ranks;
  std::vector<std::string> hosts;  ///< one per host (per server unless hosts split servers)
  int gpus_per_node = 0;           ///< GPUs per host: what a launcher starts on each
  /// True when every host holds one block of consecutive ranks (launchers that number ranks
  /// node_rank x nproc + local_rank can place it). node_rank_host lists the hosts in that order.
  bool node_contiguous = false;
  std::vector<std::string> node_rank_host;
  /// True when some rank's local rank differs from its CUDA device (CUDA_VISIBLE_DEVICES needed).
  bool gpus_permuted = false;
};

/// The launch rank of every rank: its device's position among the devices the mapping uses, in
/// device order (node by node, GPU by GPU). Processes started in that order (one per used GPU,
/// as launchers number them) run where the mapping puts each rank; a DeviceMesh built from these
/// numbers (export --format devicemesh) gives each rank its groups.
[[nodiscard]] std::vector<int> launch_ranks(const Mapping& m);
/// `hosts` may be empty (names node000, node001, ...); otherwise one per host (host_count).
[[nodiscard]] RankTable build_rank_table(const Cluster& c, const Mapping& m,
                                         std::vector<std::string> hosts);
/// Operating-system hosts of the cluster: servers x (GPUs per server / GPUs per host).
[[nodiscard]] int host_count(const Cluster& c);
/// The device (node x GPUs per server + GPU) of each rank of an explicit placement, checked: every
/// node and GPU index inside the cluster, no GPU twice. The placement may use any subset of the
/// cluster's GPUs (GPUs left out idle). InputError names `source` and the rank.
[[nodiscard]] std::vector<int> devices_of_ranks(const Cluster& c,
                                                const std::vector<int>& node_of_rank,
                                                const std::vector<int>& gpu_of_rank,
                                                const std::string& source);
/// One hostname per line; blank lines and '#' comments skipped. InputError on duplicates, on
/// fewer names than `nodes` (the error says one per `unit`), or on a name with white space.
[[nodiscard]] std::vector<std::string> parse_hosts(const std::string& text,
                                                   const std::string& source, int nodes,
                                                   const char* unit = "server");
/// The same, reading the file at `path`.
[[nodiscard]] std::vector<std::string> load_hosts_file(const std::string& path, int nodes,
                                                       const char* unit = "server");
/// --hosts: a file of host names, or (when no such file exists) a Slurm host list expression
/// such as gpu[001-016]; the same checks either way.
[[nodiscard]] std::vector<std::string> load_hosts(const std::string& file_or_hostlist, int nodes,
                                                  const char* unit = "server");

}  // namespace topoplan
