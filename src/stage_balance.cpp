#include "topoplan/stage_balance.hpp"

#include <algorithm>

namespace topoplan {

std::vector<const GpuSpec*> stage_gpus(const Cluster& c, const Plan& p, const Mapping& map) {
  std::vector<const GpuSpec*> out(static_cast<std::size_t>(p[Dim::pp]), nullptr);
  for (std::int64_t r = 0; r < map.world(); ++r) {
    const GpuSpec* g = &c.gpu_of(map.device(r));
    const GpuSpec*& slot = out[static_cast<std::size_t>(map.coord(r, Dim::pp))];
    if (!slot || g->peak_flops < slot->peak_flops) slot = g;
  }
  return out;
}

namespace {

/// Seconds of compute per microbatch of stage i holding n layers on gpu (the head on the last).
struct StageCost {
  double per_layer = 0, fixed = 0;
};

StageCost stage_cost(const Model& m, const JobSpec& j, const Plan& p, const Calibration& cal,
                     const GpuSpec& gpu, bool last) {
  const StageCompute none = stage_compute(m, j, p, cal, gpu, 0);
  const StageCompute one = stage_compute(m, j, p, cal, gpu, 1);
  const double head = none.matmul + none.elementwise;
  return {one.matmul + one.elementwise - head, last ? head : 0.0};
}

}  // namespace

std::vector<std::int64_t> balanced_stage_layers(const Model& m, const JobSpec& j, const Plan& p,
                                                const Calibration& cal,
                                                const std::vector<const GpuSpec*>& gpus) {
  const int pp = p[Dim::pp];
  const std::int64_t v = p.vpp, step = p.flexible_layout ? 1 : v;
  std::int64_t rest = m.spec.layers - static_cast<std::int64_t>(pp) * v;
  if (rest < 0 || rest % step != 0) return {};
  std::vector<StageCost> cost;
  for (int i = 0; i < pp; ++i)
    cost.push_back(stage_cost(m, j, p, cal, *gpus[static_cast<std::size_t>(i)], i == pp - 1));
  std::vector<std::int64_t> n(static_cast<std::size_t>(pp), v);
  for (; rest > 0; rest -= step) {
    std::size_t best = 0;
    double best_t = 0;
    for (std::size_t i = 0; i < n.size(); ++i) {
      const double t = cost[i].per_layer * static_cast<double>(n[i] + step) + cost[i].fixed;
      if (i == 0 || t < best_t) {
        best = i;
        best_t = t;
      }
    }
    n[best] += step;
  }
  return n;
}

void apply_stage_speeds(PlanCore& core, const Model& m, const JobSpec& j, const Plan& p,
                        const Calibration& cal, const std::vector<const GpuSpec*>& gpus) {
  const StageLayers split = split_of(p, m.spec.layers);
  const int pp = p[Dim::pp];
  double worst = -1;
  for (int i = 0; i < pp; ++i) {
    const GpuSpec& gpu = *gpus[static_cast<std::size_t>(i)];
    const auto layers = static_cast<double>(layers_on_stage(p, split, i));
    StageCompute sc = stage_compute(m, j, p, cal, gpu, layers);
    if (i < pp - 1) sc = sc.without_head();  // the head runs on the last stage only
    if (sc.matmul + sc.elementwise > worst) {
      worst = sc.matmul + sc.elementwise;
      // The last stage's multi-token-prediction layers communicate as its own do.
      core.layers_per_stage = layers + (i == pp - 1 ? m.counts.mtp_layers : 0.0);
      core.moe_layers_per_stage = moe_layers_in(m, core.layers_per_stage);
      core.other_layers = 0;  // every stage compared here, on its own GPU
      core.t_matmul = sc.matmul;
      core.t_elementwise = sc.elementwise;
      core.t_attention_fwd = sc.attention_fwd;
      core.tp_hide = tp_hide_times(m, sc.linear_fwd);
    }
  }
}

double mean_peak_flops(const Cluster& c, const Plan& p, const Mapping& map, Dtype d) {
  double sum = 0;
  for (std::int64_t r = 0; r < p.world(); ++r) sum += format_peak_flops(c.gpu_of(map.device(r)), d);
  return sum / static_cast<double>(p.world());
}

}  // namespace topoplan
