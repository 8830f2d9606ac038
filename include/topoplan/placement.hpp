#pragma once
/// Placement beyond order strings: which usable GPU runs each rank of a plan, when some GPUs are
/// down (or on request). It starts from the order strings laid over the usable GPUs, builds
/// placements that keep each TP group whole inside one server, and improves the best by moving
/// whole TP groups; it never returns anything slower than the best order string.
#include <cstdint>
#include <string>
#include <vector>

#include "topoplan/cost_model.hpp"

namespace topoplan {

struct PlacementOptions {
  /// Improvement moves costed after the constructed placements (each re-costs the plan's
  /// communication on the moved devices). Deterministic: the same count gives the same result.
  int moves = 400;
  std::uint64_t seed = 1;  ///< of the move generator
};

/// What the placement search did, for reports.
struct PlacementStats {
  double order_step_time = 0;     ///< the best order string laid over the usable GPUs
  double step_time = 0;           ///< the placement's
  std::string best_order;         ///< that order string
  std::int64_t candidates = 0;    ///< placements costed (order strings, constructions, moves)
  int improvements = 0;           ///< moves that made it faster
  bool order_kept = false;        ///< the best order string was the best placement
  int idle = 0;                   ///< usable GPUs the plan leaves idle
  std::vector<int> idle_devices;  ///< which (device ids)
  /// The fraction of the order string's step time the placement saves (0 when it kept it).
  [[nodiscard]] double gain() const;
};

struct Placement {
  Plan plan;                 ///< the plan (its order: the best order string's when kept)
  std::vector<int> devices;  ///< device of each rank
  Evaluation eval;           ///< the plan on those devices
  PlacementStats stats;
};

/// Places a plan that passed check_plan on the cluster's usable GPUs.
[[nodiscard]] Placement place(const Cluster& c, const Model& m, const JobSpec& j, const Plan& p,
                              const Calibration& cal, const PlacementOptions& opt = {});

/// The usable GPUs in device order (every GPU when none is down).
[[nodiscard]] std::vector<int> usable_devices(const Cluster& c);

}  // namespace topoplan
