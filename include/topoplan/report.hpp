#pragma once
/// Turns search results and evaluations into text tables and versioned JSON. The core never
/// prints: these return strings for the CLI to write.
#include <string>
#include <vector>

#include "topoplan/context.hpp"
#include "topoplan/placement.hpp"
#include "topoplan/search.hpp"

namespace topoplan {

inline constexpr const char* kPlanSchema = "topoplan.plan/v1";
inline constexpr const char* kSearchSchema = "topoplan.search/v1";

/// Tier name a dimension's groups span ("nvlink", "leaf", ...; "-" for degree 1).
[[nodiscard]] std::string span_name(const Cluster& c, const GroupShape& g);
/// One line of context: model, cluster, job.
[[nodiscard]] std::string context_line(const RunContext& ctx);
/// Why the first plan wins: per-dimension tiers, the same degrees' worst order, the runner-up.
[[nodiscard]] std::vector<std::string> explain_winner(const RunContext& ctx, const SearchResult& r);

[[nodiscard]] std::string plan_report_text(const RunContext& ctx, const SearchResult& r);
[[nodiscard]] std::string plan_report_json(const RunContext& ctx, const SearchResult& r);
[[nodiscard]] std::string evaluation_text(const RunContext& ctx, const Plan& p,
                                          const Evaluation& e);
[[nodiscard]] std::string evaluation_json(const RunContext& ctx, const Plan& p,
                                          const Evaluation& e);
/// The same with the explicit placement (GPUs down): "placement" with the devices of the ranks.
[[nodiscard]] std::string evaluation_json(const RunContext& ctx, const Plan& p, const Evaluation& e,
                                          const Mapping& map, const PlacementStats& s);
/// Mixed GPU types: one line naming each pipeline stage's GPU and layers, and (when the search
/// balanced them) the step time of the same plan with the default split.
[[nodiscard]] std::string stages_text(const RunContext& ctx, const Plan& p, const Mapping& map,
                                      double step_time, double even_split_step_time);
/// One line: how many GPUs the plan uses of the usable ones, which are down, and what the
/// placement search gained over the best order string.
[[nodiscard]] std::string placement_text(const RunContext& ctx, const Plan& p,
                                         const PlacementStats& s);
/// "needs 92.3 GiB per GPU; the h100-sxm has 80.0 GiB" or "" when it fits.
[[nodiscard]] std::string infeasible_reason(const RunContext& ctx, const Evaluation& e);

}  // namespace topoplan
