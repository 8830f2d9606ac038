#pragma once
/// One to_json per result, shared by the writers that embed it (check embeds the evaluated
/// plan). Private to the library.
#include <nlohmann/json.hpp>

#include "topoplan/context.hpp"
#include "topoplan/cost_model.hpp"
#include "topoplan/inference.hpp"

namespace topoplan::detail {

/// A topoplan.plan/v1 object.
[[nodiscard]] nlohmann::ordered_json to_json(const RunContext& ctx, const Plan& p,
                                             const Evaluation& e);
/// A topoplan.inference/v1 object.
[[nodiscard]] nlohmann::ordered_json to_json(const InferenceContext& ctx, const Plan& p,
                                             const InferenceEval& e);

}  // namespace topoplan::detail
