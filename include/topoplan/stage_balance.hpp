#pragma once
/// Pipeline stages on GPUs of different speeds (a cluster of mixed server groups): the GPU each
/// stage runs at, the layer split that balances the stages, and the slowest stage's compute.
#include <cstdint>
#include <vector>

#include "topoplan/cost_dims.hpp"
#include "topoplan/cost_model.hpp"

namespace topoplan {

/// The GPU each pipeline stage runs at: the slowest (dense FLOP/s) of the devices its ranks use.
[[nodiscard]] std::vector<const GpuSpec*> stage_gpus(const Cluster& c, const Plan& p,
                                                     const Mapping& map);

/// Layers per stage that make the slowest stage's compute per microbatch as short as it can be
/// on these GPUs: every stage starts at vpp layers, then the rest go a step at a time (vpp
/// layers; one with a flexible layout) to the stage whose compute grows least by it (the last
/// stage also runs the logits; ties go to the earlier stage). Empty when no split exists.
[[nodiscard]] std::vector<std::int64_t> balanced_stage_layers(
    const Model& m, const JobSpec& j, const Plan& p, const Calibration& cal,
    const std::vector<const GpuSpec*>& gpus);

/// Sets the core's compute per microbatch to the slowest stage's, each stage on its own GPU
/// with its own layers. Communication stays sized by the most layers on a stage.
void apply_stage_speeds(PlanCore& core, const Model& m, const JobSpec& j, const Plan& p,
                        const Calibration& cal, const std::vector<const GpuSpec*>& gpus);

/// The mean dense peak FLOP/s of the GPUs the mapping uses (MFU's denominator when mixed).
[[nodiscard]] double mean_peak_flops(const Cluster& c, const Plan& p, const Mapping& map, Dtype d);

}  // namespace topoplan
