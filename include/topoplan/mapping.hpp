#pragma once
/// Rank <-> device. A mapping comes from an order string (ranks laid out Megatron-style, filled
/// server by server) or from an explicit table. It enumerates each dimension's groups and
/// summarises how a group falls on the tiers (GroupShape), which is all the cost model needs.
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "topoplan/plan.hpp"
#include "topoplan/topology.hpp"

namespace topoplan {

/// How one communication group (or the worst of a dimension's groups) falls on the tiers.
struct GroupShape {
  int size = 1;        ///< members
  int span_tier = -1;  ///< innermost tier whose one domain holds the group; -1 for a single member
  /// per_domain[k], for k < span_tier: fewest members the group has in one tier-k domain that it
  /// touches (its share of that domain's uplinks when every group crosses at once).
  std::array<int, Cluster::kMaxTiers> per_domain{};

  [[nodiscard]] bool crosses(int k) const { return k < span_tier; }
  friend bool operator==(const GroupShape&, const GroupShape&) = default;
};

/// Rank layout of one Megatron RankGenerator: a degree and a stride per dimension.
struct Layout {
  DimArray<int> degree{{1, 1, 1, 1, 1}};
  DimArray<std::int64_t> stride{{1, 1, 1, 1, 1}};
};

class Mapping {
 public:
  /// Rank r runs on device r; coordinates follow the plan's order string.
  [[nodiscard]] static Mapping from_order(const Plan& plan);
  /// The same coordinates, with rank r on device_of_rank[r] (a permutation of 0..world-1).
  [[nodiscard]] static Mapping with_devices(const Plan& plan, std::vector<int> device_of_rank);

  [[nodiscard]] std::int64_t world() const { return world_; }
  [[nodiscard]] int device(std::int64_t rank) const {
    return device_.empty() ? static_cast<int>(rank) : device_[rank];
  }
  [[nodiscard]] bool identity() const { return device_.empty(); }
  /// Dense layers' layout (tp, cp, dp, pp; ep = 1) and expert layers' (tp, ep, expert-dp, pp).
  [[nodiscard]] const Layout& dense() const { return dense_; }
  [[nodiscard]] const Layout& expert() const { return expert_; }
  /// The layout a dimension's groups come from: the expert one for ep, the dense one otherwise.
  [[nodiscard]] const Layout& layout_of(Dim d) const { return d == Dim::ep ? expert_ : dense_; }
  [[nodiscard]] std::int64_t stride(Dim d) const { return layout_of(d).stride[d]; }
  [[nodiscard]] int degree(Dim d) const { return layout_of(d).degree[d]; }
  [[nodiscard]] int coord(std::int64_t rank, Dim d) const {
    return static_cast<int>((rank / stride(d)) % degree(d));
  }
  /// Every group of dimension d as a list of ranks, ordered by their first rank.
  [[nodiscard]] std::vector<std::vector<int>> groups(Dim d) const;
  /// Expert-data-parallel groups (the dp dimension of the expert layout).
  [[nodiscard]] std::vector<std::vector<int>> expert_dp_groups() const;

 private:
  Layout dense_;
  Layout expert_;
  std::int64_t world_ = 0;
  std::vector<int> device_;  ///< empty: identity
};

/// True when the expert layout's pipeline groups differ from the dense layout's (Megatron-LM
/// requires them equal; with --use-tp-pp-dp-mapping that needs cp = ep).
[[nodiscard]] bool expert_pp_mismatch(const Plan& plan);

/// The shape of one group of devices.
[[nodiscard]] GroupShape shape_of_devices(const Cluster& c, std::span<const int> devices);
/// The worst shape over all groups of dimension d (largest span, fewest members per domain).
/// O(tiers) for an order-based mapping whose strides align with the tiers; otherwise it walks
/// every group.
[[nodiscard]] GroupShape dimension_shape(const Cluster& c, const Mapping& m, Dim d);
/// The same by walking every group (the reference the fast path is tested against).
[[nodiscard]] GroupShape dimension_shape_by_groups(const Cluster& c, const Mapping& m, Dim d);
/// The worst shape of the expert-data-parallel groups (expert layout's dp dimension).
[[nodiscard]] GroupShape expert_dp_shape(const Cluster& c, const Mapping& m);
/// The shape of groups that vary two dimensions together (data parallelism over dp x cp), from
/// the two dimensions' shapes: members per domain multiply.
[[nodiscard]] GroupShape combine_shapes(const GroupShape& a, const GroupShape& b);

}  // namespace topoplan
