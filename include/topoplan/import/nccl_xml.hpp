#pragma once
/// Reads an NCCL topology dump (NCCL_TOPO_DUMP_FILE): <system> with <cpu>, nested <pci>
/// elements, <gpu dev sm rank> with <nvlink target count tclass> children (an NVSwitch target
/// has the bridge class 0x0680xx; a GPU target, class 0x03xxxx, is a direct peer link), and
/// <nic><net name speed .../></nic>. The result is the matrix `nvidia-smi topo -m` would give,
/// so the cluster is built the same way (cluster_from_smi).
#include <string>

#include "topoplan/import/nvidia_smi.hpp"

namespace topoplan {

struct NcclXmlTopology {
  SmiTopology matrix;         ///< GPUs in rank order (then device order), NVLinks per pair
  int sm = 0;                 ///< compute capability x 10 of the GPUs (80, 90, 100, ...)
  double nic_speed_Mbps = 0;  ///< the fastest net's speed as NCCL reports it, 0 when none
  bool nvswitch = false;      ///< NVLinks go to switches (every pair reaches every other)
};

/// Parses the dump; InputError names `source`, the line and what was expected.
[[nodiscard]] NcclXmlTopology parse_nccl_topo_xml(const std::string& text,
                                                  const std::string& source);

/// The GPU preset an sm value stands for (80: a100-80gb, 90: h100-sxm, 100: b200, 103: b300); ""
/// if none. A Grace superchip reports the same sm as its HGX part (gb200: 100, gb300: 103).
[[nodiscard]] std::string gpu_preset_for_sm(int sm);

}  // namespace topoplan
