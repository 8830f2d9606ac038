#pragma once
/// The placement drawn: the cluster as its hierarchy (GPUs in servers in leaves), each GPU a cell
/// coloured by pipeline stage and labelled with its rank and coordinates, and each dimension's
/// groups drawn on the links they cross. An SVG string; the core never writes files.
#include <optional>
#include <span>
#include <string>

#include "topoplan/cost_model.hpp"
#include "topoplan/mapping.hpp"
#include "topoplan/plan.hpp"
#include "topoplan/topology.hpp"

namespace topoplan {

/// Above this many servers only one data-parallel replica is drawn (the rest repeat it), so a
/// picture of thousands of GPUs stays small and opens fast.
inline constexpr int kMaxServersDrawn = 64;

struct ClusterPicture {
  std::string svg;  ///< one <svg> element (with xmlns: valid on its own and inline in HTML)
  int gpus_drawn = 0;
  int servers_drawn = 0;
  std::string note;  ///< what was left out, or ""
};

/// Draws `plan` placed by `mapping`. Each dimension's links are one <g class="dim dim-tp">;
/// only `shown`'s are visible (all when nullopt). Groups of the dimensions in `failing` that
/// leave a server are outlined in red (check's failed tier rules). Same inputs, same bytes.
[[nodiscard]] ClusterPicture draw_cluster(const Cluster& c, const Plan& plan,
                                          const Mapping& mapping, std::optional<Dim> shown,
                                          std::span<const Dim> failing = {});

/// A GPU cell's colour by its pipeline stage (of `pp`): hues spread round the wheel.
[[nodiscard]] std::string stage_colour(int stage, int pp);
/// A link's colour by the tier it crosses: green inside a server, orange across a leaf, red above.
[[nodiscard]] const char* tier_colour(int tier);

/// The dimension a picture shows first: the first failing one, else the one whose
/// communication is most exposed (ties: tp, cp, ep, pp, dp); nullopt when every degree is 1.
[[nodiscard]] std::optional<Dim> dim_to_show(const Plan& plan, const Evaluation& e,
                                             std::span<const Dim> failing = {});

}  // namespace topoplan
