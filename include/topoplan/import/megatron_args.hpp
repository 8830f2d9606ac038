#pragma once
/// Reads the parallel settings from the Megatron-LM arguments a training script passes.
/// Unknown arguments are skipped: scripts pass many that do not affect placement.
#include <string>

#include "topoplan/import/plan_source.hpp"

namespace topoplan {

[[nodiscard]] ImportedPlan parse_megatron_args(const std::string& args, const std::string& source);

}  // namespace topoplan
