#pragma once
/// `check`: rules that reject a pathological configuration before it burns a cluster. Each
/// finding has a rule id, a severity and one line that names the groups and tiers.
#include <optional>
#include <string>
#include <vector>

#include "topoplan/context.hpp"
#include "topoplan/inference.hpp"
#include "topoplan/search.hpp"

namespace topoplan {

inline constexpr const char* kCheckSchema = "topoplan.check/v1";

enum class Severity { error, warning };
[[nodiscard]] const char* to_string(Severity s);

struct Finding {
  std::string rule;  ///< stable id, e.g. "tp-tier"
  Severity severity = Severity::error;
  std::string message;
};

/// The rules, in the order they are checked and reported.
struct RuleInfo {
  const char* id;
  Severity severity;
  const char* what;
};
inline constexpr RuleInfo kRules[] = {
    {"invalid-degrees", Severity::error,
     "degrees must divide the GPUs, heads, key/value heads, MLP size, layers and batch"},
    {"tp-tier", Severity::error,
     "TP groups span a slower tier than a mapping of the same degrees could keep them on, and "
     "that mapping is faster by more than --tier-min-gain"},
    {"cp-tier", Severity::error, "CP groups likewise"},
    {"ep-tier", Severity::error, "EP groups likewise"},
    {"expert-tp", Severity::warning,
     "a MoE plan's other expert TP choice (folded over the TP ranks or not) is faster by more "
     "than --tier-min-gain"},
    {"inverted-hierarchy", Severity::warning,
     "PP or DP traffic sits on a faster tier than TP traffic"},
    {"memory", Severity::error, "predicted memory exceeds the GPU"},
    {"mapping-slowdown", Severity::error,
     "step time is more than --max-slowdown x the best mapping of the same degrees"},
    {"gap-to-best", Severity::error,
     "step time is more than --max-gap x the best plan topoplan finds"},
};

struct CheckOptions {
  double max_slowdown = 1.25;
  double max_gap = 2.0;
  /// The tier rules fire only when the order they suggest is faster by more than this fraction
  /// (step time, or token latency for inference).
  double tier_min_gain = 0.05;
  /// What the user's software stack fixes (--stack, as `plan --stack` keeps it): the gap-to-best
  /// search compares only with plans that stack can run. -1 / unset: searched.
  int best_zero = -1;
  std::optional<bool> best_sequence_parallel;
};

struct CheckResult {
  Plan plan;
  std::optional<Evaluation> eval;          ///< training: unset when the degrees are invalid
  std::optional<InferenceEval> inference;  ///< inference checks: the evaluated plan
  std::vector<Finding> findings;
  std::optional<Candidate> best_same_degrees;  ///< the best order for the same choices
  std::optional<Candidate> best_overall;
  /// Inference checks: the fastest order of the same degrees, and the best plan overall.
  std::optional<InferenceCandidate> best_same_degrees_serving;
  std::optional<InferenceCandidate> best_overall_serving;
  [[nodiscard]] bool passed() const;  ///< no error-severity finding
};

/// The dimensions whose tier rule (tp-tier, cp-tier, ep-tier) failed: pictures mark their groups.
[[nodiscard]] std::vector<Dim> failing_tier_dims(const CheckResult& r);

/// Runs every rule on one plan placed by `mapping`.
[[nodiscard]] CheckResult run_check(const RunContext& ctx, const Plan& plan, const Mapping& mapping,
                                    const CheckOptions& opt);

/// The same rules for serving: tiers, memory, and the token latency against the best mapping of
/// the same degrees and the best plan (--max-slowdown, --max-gap).
[[nodiscard]] CheckResult run_inference_check(const InferenceContext& ctx, const Plan& plan,
                                              const Mapping& mapping, const CheckOptions& opt);

}  // namespace topoplan
