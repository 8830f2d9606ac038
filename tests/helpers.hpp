#pragma once
// Shared test fixtures: presets loaded by name (no disk access) and small clusters built in code.
#include "topoplan/presets.hpp"
#include "topoplan/topology.hpp"

namespace topoplan::test {

inline Cluster preset_cluster(const std::string& name, int nodes) {
  ClusterSpec s = load_cluster(name, "test");
  s.nodes = nodes;
  return Cluster(s, name);
}

inline Model preset_model(const std::string& name) { return Model(load_model(name, "test"), name); }

}  // namespace topoplan::test
