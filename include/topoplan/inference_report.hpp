#pragma once
/// Serving results as text and JSON (topoplan.inference/v1, topoplan.inference-search/v1).
#include <string>
#include <vector>

#include "topoplan/context.hpp"
#include "topoplan/inference.hpp"

namespace topoplan {

inline constexpr const char* kInferenceSchema = "topoplan.inference/v1";
inline constexpr const char* kInferenceSearchSchema = "topoplan.inference-search/v1";

[[nodiscard]] std::string inference_text(const InferenceContext& ctx, const Plan& p,
                                         const InferenceEval& e);
[[nodiscard]] std::string inference_json(const InferenceContext& ctx, const Plan& p,
                                         const InferenceEval& e);
[[nodiscard]] std::string inference_search_text(const InferenceContext& ctx,
                                                const InferenceSearchResult& r, Objective o);
[[nodiscard]] std::string inference_search_json(const InferenceContext& ctx,
                                                const InferenceSearchResult& r, Objective o);
/// Why the token latency is what it is: each part of a token and what TP does to it.
[[nodiscard]] std::vector<std::string> explain_token(const InferenceContext& ctx, const Plan& p,
                                                     const InferenceEval& e);

}  // namespace topoplan
