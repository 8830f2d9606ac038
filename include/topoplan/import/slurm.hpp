#pragma once
/// Slurm's view of a cluster: host list expressions (`gpu[001-064]`, `a[1-2]-b[01-04]`, comma
/// lists) and the tree of topology.conf (`SwitchName=leaf1 Nodes=gpu[001-032]`,
/// `SwitchName=spine Switches=leaf[1-4]`), turned into the tiers above the servers, with the host
/// names in the order the switches hold them.
#include <string>
#include <vector>

#include "topoplan/topology.hpp"

namespace topoplan {

/// Expands a Slurm host list expression; InputError names `source` on a malformed one (an
/// unclosed bracket, a range that runs backwards, more than 1,048,576 names).
[[nodiscard]] std::vector<std::string> expand_hostlist(const std::string& expr,
                                                       const std::string& source);

struct SlurmSwitch {
  std::string name;
  std::vector<std::string> nodes;     ///< hosts directly below (a leaf switch)
  std::vector<std::string> switches;  ///< switches directly below
  int line = 0;
  /// A BlockName= line (the topology/block plugin): its nodes are one NVLink domain's hosts, an
  /// NVL72 rack's compute trays.
  bool block = false;
};

/// Parses topology.conf: the tree plugin's SwitchName lines and the block plugin's BlockName
/// lines ('#' comments, keys case-insensitive, other keys such as LinkSpeed and BlockSizes
/// ignored). InputError names `source` and the line.
[[nodiscard]] std::vector<SlurmSwitch> parse_slurm_topology(const std::string& text,
                                                            const std::string& source);

/// The cluster the tree describes: `base`'s GPU, server tier and NICs; one tier per switch level
/// above the servers (fan-out: servers per leaf, leaves per spine, ...; bandwidth and link from
/// `base`'s tier at that level, or its top tier); `hosts` in the order the tree holds them, so
/// that consecutive servers share a leaf. The tree must be regular (every switch of a level with
/// the same number of children): InputError naming the switch otherwise.
///
/// With BlockName lines, each block is one server of `base` (which must split its servers into
/// hosts, server.gpus_per_host: gb200-nvl72, gb300-nvl72): the block's nodes are its hosts in
/// order (compute_hosts), the block's name the server's (hosts); a block with fewer nodes than a
/// server has hosts is padded with hosts named absent-<block>-<k>, whose GPUs are down. The
/// tiers above the servers stay `base`'s; SwitchName lines beside the blocks are not used.
[[nodiscard]] ClusterSpec cluster_from_slurm(const std::vector<SlurmSwitch>& tree,
                                             const ClusterSpec& base, const std::string& source);

}  // namespace topoplan
