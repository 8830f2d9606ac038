#pragma once
/// Short, stable hashes of the inputs a result was computed from, so a rank file can tell when it
/// is re-scored against a different cluster, model or job.
#include <string>

#include "topoplan/job.hpp"
#include "topoplan/model.hpp"
#include "topoplan/topology.hpp"

namespace topoplan {

/// "fnv1a64:" + 16 hex digits of FNV-1a over a canonical text of every field that affects cost.
[[nodiscard]] std::string fingerprint(const Cluster& c);
[[nodiscard]] std::string fingerprint(const Model& m);
[[nodiscard]] std::string fingerprint(const JobSpec& j);

}  // namespace topoplan
