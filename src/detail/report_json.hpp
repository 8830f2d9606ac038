#pragma once
/// One to_json per result, shared by the writers that embed it (check embeds the evaluated
/// plan). Private to the library.
#include <nlohmann/json.hpp>

#include "topoplan/accuracy.hpp"
#include "topoplan/context.hpp"
#include "topoplan/cost_model.hpp"
#include "topoplan/inference.hpp"
#include "topoplan/placement.hpp"

namespace topoplan::detail {

/// A topoplan.plan/v1 object.
[[nodiscard]] nlohmann::ordered_json to_json(const RunContext& ctx, const Plan& p,
                                             const Evaluation& e);
/// A plan's "placement" member: the devices of its ranks ([node, gpu] per rank) and what the
/// placement search gained over the best order string.
[[nodiscard]] nlohmann::ordered_json placement_json(const RunContext& ctx, const Plan& p,
                                                    const std::vector<int>& devices,
                                                    const PlacementStats& s);
/// A topoplan.inference/v1 object.
[[nodiscard]] nlohmann::ordered_json to_json(const InferenceContext& ctx, const Plan& p,
                                             const InferenceEval& e);

/// The held-back error of published runs like this one (accuracy.hpp).
[[nodiscard]] AccuracyBand band_for(const RunContext& ctx);
[[nodiscard]] AccuracyBand band_for(const InferenceContext& ctx);
/// "expected error: ..." (one line, no newline).
[[nodiscard]] std::string accuracy_line(const AccuracyBand& b);
/// The "expected_error" member: basis, held_back_runs, mean and worst absolute error; null when
/// not measured.
[[nodiscard]] nlohmann::ordered_json accuracy_json(const AccuracyBand& b);

}  // namespace topoplan::detail
