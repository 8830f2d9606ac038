#pragma once
/// Reading the cluster file's "down_gpus" (topology.cpp's cluster reader calls it); the rules
/// for naming GPUs live in gpu_names.cpp.
#include "detail/json_input.hpp"
#include "topoplan/topology.hpp"

namespace topoplan::detail {

/// "down_gpus": ["node07:3", "node12", "5:0"]: each entry's GPUs added to s.down.
void read_down_gpus(const JsonCursor& c, ClusterSpec& s);

}  // namespace topoplan::detail
