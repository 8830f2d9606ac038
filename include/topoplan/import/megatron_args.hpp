#pragma once
/// Reads the parallel settings from the Megatron-LM arguments a training script passes.
/// Unknown arguments are skipped: scripts pass many that do not affect placement.
#include <string>

#include "topoplan/import/plan_source.hpp"
#include "topoplan/model.hpp"

namespace topoplan {

[[nodiscard]] ImportedPlan parse_megatron_args(const std::string& args, const std::string& source);

/// InputError when the model-shape arguments (--num-layers, --hidden-size, ...) disagree with
/// the model planned.
void check_against_model(const ImportedPlan& imp, const ModelSpec& m, const std::string& source);
/// Sets what Megatron-LM counts in layers once the plan's degrees are known: the uneven split from
/// --decoder-first/last-pipeline-num-layers (a stage without a count gets an equal share of the
/// rest, as Megatron-LM gives it; check_plan validates it) and --recompute-num-layers of the
/// block method (per model chunk, so times vpp per stage).
void apply_layer_choices(const ImportedPlan& imp, std::int64_t layers, Plan& p);

}  // namespace topoplan
