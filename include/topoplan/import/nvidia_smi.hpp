#pragma once
/// Reads `nvidia-smi topo -m` output: the GPUs of one server, how each pair is connected (NVLink
/// count or the PCIe path class) and the NICs, and builds the server tier of a cluster from it.
#include <string>
#include <vector>

#include "topoplan/topology.hpp"

namespace topoplan {

struct SmiTopology {
  int gpus = 0;
  std::vector<std::string> nics;               ///< NIC column names (NIC0.. or mlx5_0..)
  std::vector<std::vector<int>> nvlinks;       ///< [i][j]: NVLinks between GPU i and j (0: none)
  std::vector<std::vector<std::string>> path;  ///< [i][j]: the cell as printed (X, NV18, PIX, ...)
  /// The fewest NVLinks between any two GPUs (0 when some pair has none: a PCIe server).
  [[nodiscard]] int min_nvlinks() const;
};

/// Parses the matrix; InputError names `source`, the line and what was expected.
[[nodiscard]] SmiTopology parse_nvidia_smi_topo(const std::string& text, const std::string& source);

/// Settings the matrix does not carry.
struct SmiClusterOptions {
  std::string name = "imported";
  int nodes = 1;
  double nic_bandwidth = 50e9;  ///< bytes/s per NIC per direction (400 Gb/s)
  /// Tiers above the server (from a preset); empty: one InfiniBand tier joining all servers at
  /// the NIC share.
  std::vector<TierSpec> network;
};

/// A cluster whose server tier is the matrix: NVLink bandwidth from the link count and the GPU's
/// NVLink generation (25 GB/s per link for NVLink 3 and 4, 50 for 5), or PCIe when some pair has
/// no NVLink; the NICs from the NIC columns.
[[nodiscard]] ClusterSpec cluster_from_smi(const SmiTopology& t, const GpuSpec& gpu,
                                           const SmiClusterOptions& opt);

}  // namespace topoplan
