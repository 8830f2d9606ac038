#pragma once
/// Reads the JSON topoplan writes: a topoplan.plan/v1 object (evaluate), a topoplan.search/v1
/// report (plan: its first plan), or a topoplan.ranks/v1 rank table (export).
#include <string>

#include "topoplan/import/plan_source.hpp"

namespace topoplan {

[[nodiscard]] ImportedPlan parse_plan_json(const std::string& text, const std::string& source);
[[nodiscard]] ImportedPlan parse_ranks_json(const std::string& text, const std::string& source);
/// The same, reading the file at `path` (errors name the path).
[[nodiscard]] ImportedPlan load_plan_file(const std::string& path);
[[nodiscard]] ImportedPlan load_ranks_file(const std::string& path);

}  // namespace topoplan
