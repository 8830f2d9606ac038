#pragma once
/// Exhaustive search over degrees, micro-batch sizes and order strings, keeping the top K.
#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "topoplan/cost_model.hpp"
#include "topoplan/error.hpp"
#include "topoplan/placement.hpp"

namespace topoplan {

/// The largest CP degree searched unless --max-cp says otherwise.
inline constexpr int kDefaultMaxCp = 32;

/// The largest interleaving (virtual stages per pipeline rank) searched; a fixed --vpp is not
/// limited. Published runs use 2 to 16; beyond 64 the extra point-to-point hops outweigh the
/// smaller bubble for any layer count.
inline constexpr int kMaxSearchedVpp = 64;

/// SearchOptions::expert_tp: the experts' TP is each plan's tp, not searched.
inline constexpr int kExpertTpAsTp = -1;

struct SearchOptions {
  DimArray<int> fixed{};  ///< 0: searched; otherwise that degree is fixed
  /// Upper bounds on searched degrees (0: none). CP defaults to at most kDefaultMaxCp.
  DimArray<int> max{{0, kDefaultMaxCp, 0, 0, 0}};
  /// A searched CP degree keeps at least this many tokens of each sequence per rank (ring
  /// attention on shorter chunks is not worth its exchanges); a fixed --cp is not limited.
  std::int64_t min_cp_tokens = 2048;
  int micro_batch = 0;                    ///< 0: searched
  int vpp = 0;                            ///< 0: searched (1 and every interleaving that fits)
  std::optional<Order> order;             ///< unset: every order of the dimensions > 1
  int zero = -1;                          ///< -1: searched (0-3; only 0 when dp = 1)
  std::optional<Recompute> recompute;     ///< unset: none, selective and full
  std::optional<bool> sequence_parallel;  ///< unset: both (only off when tp = 1)
  /// An explicit uneven pipeline split (Megatron-LM's --decoder-first/last-pipeline-num-layers):
  /// the layers on the first and the last stage, the middle ones sharing the rest evenly; 0:
  /// topoplan's split (plan.hpp, pipeline_split). Plans it does not fit are rejected.
  std::int64_t first_stage_layers = 0, last_stage_layers = 0;
  /// Without a fixed split: also try moving layers from the last stage (which runs the logits and
  /// any multi-token-prediction modules) to the first, one step at a time while the last keeps
  /// one (Megatron-Bridge's DeepSeek-V3 layouts: 4 / 4 x 14 / 1 at pp 16); each split that fits
  /// is costed as a plan of its own (pp 3 and more).
  bool search_split = false;
  /// Experts' tensor parallelism (MoE models): 0 searched, each plan's tp (Megatron's default)
  /// and 1 (MoE parallel folding, EP over tp x cp x dp); kExpertTpAsTp as tp; N > 0: each plan
  /// takes min(N, tp), which must divide tp.
  int expert_tp = 0;
  int top_k = 10;
  /// true: list only the best plan of each (degrees, micro-batch); false: every variant (vpp,
  /// ZeRO, recomputation, sequence parallelism, order) that is not an exact mirror.
  bool distinct = false;
  int threads = 1;  ///< worker threads; the result does not depend on it
  /// Refuse (InputError) a search whose plans_upper_bound is above this; 0: no limit.
  std::int64_t max_plans = 0;
  /// Set from another thread (a signal handler) to stop the search: it throws Interrupted.
  const std::atomic<bool>* stop = nullptr;
  /// Called on the calling thread about every 100 ms: fraction of configurations done, plans
  /// costed so far. For progress bars; may be empty.
  std::function<void(double, std::int64_t)> progress;
  /// Place the best plans with the placement search (placement.hpp) even when no GPU is down
  /// (it always runs when some are).
  bool place = false;
  PlacementOptions placement{.moves = 100};
};

struct Candidate {
  Plan plan;
  Evaluation eval;
  /// An explicit placement (rank r on devices[r]); empty: the order string, rank r on device r.
  std::vector<int> devices;
  std::optional<PlacementStats> placement;
  /// Mixed GPU types: the step time of the same plan with the default layer split, which ignores
  /// the stages' different speeds (0: not mixed, or the default split was kept).
  double even_split_step_time = 0;
};

/// The same plan with the experts' TP switched between tp and 1 (MoE parallel folding), costed
/// with its order's mapping: what that choice is worth. Unset for a dense model, EP 1, tp 1, or
/// when the rules forbid the other choice.
[[nodiscard]] std::optional<Candidate> with_other_expert_tp(const Cluster& c, const Model& m,
                                                            const JobSpec& j,
                                                            const Calibration& cal, const Plan& p);

/// The ranking: a plan that fits beats one that does not; then the shorter step time; ties go to
/// the smaller tp, then pp, then dp, then cp, then ep, then expert TP as tp before a folded one,
/// then micro-batch, then vpp, then the smaller ZeRO stage, less
/// recomputation, sequence parallelism off before on, then an order Megatron-LM can launch
/// (its default, then --use-tp-pp-dp-mapping), then the order compared dimension by dimension
/// with tp < cp < ep < dp < pp.
[[nodiscard]] bool ranks_before(const Candidate& a, const Candidate& b);

struct SearchResult {
  /// Fitting plans, best first, at most top_k. Plans that differ only in an order that gives the
  /// same cost and memory (mirror layouts) appear once, under the best-ranked order.
  std::vector<Candidate> top;
  std::optional<Candidate> closest_unfit;  ///< the plan needing the least memory, when none fit
  /// The best plan's degrees and choices laid out the slowest way, when that is slower: what its
  /// mapping is worth (reports explain the winner with it).
  std::optional<Candidate> worst_order;
  /// A MoE best plan with EP and tp > 1: the same plan with the experts' TP switched between tp
  /// and 1 (MoE parallel folding), when the rules allow it; what the choice is worth.
  std::optional<Candidate> other_expert_tp;
  std::int64_t evaluated = 0;      ///< plans costed (communication and totals)
  std::int64_t out_of_memory = 0;  ///< plans rejected for memory before their orders were costed
  std::vector<std::pair<std::string, std::int64_t>> rejected;  ///< reason, count (before costing)
  std::int64_t plans_upper_bound = 0;  ///< what the search could have costed at most
  /// Mixed GPU types: the best plan with the default layer split (the one a planner that
  /// ignores the stages' different speeds picks), costed stage by stage on its GPUs.
  std::optional<Candidate> best_even_split;
};

/// A search refused for its size (SearchOptions::max_plans): the figures, for a front end to say
/// which of its flags narrow it.
struct SearchTooLarge : InputError {
  SearchTooLarge(std::int64_t bound, std::int64_t limit);
  std::int64_t bound, limit;
  /// bound x an upper figure of a plan's cost on one core (bench/: ~0.4 us per evaluation).
  [[nodiscard]] double seconds_on_one_core() const { return static_cast<double>(bound) * 1e-6; }
};

/// The search was stopped through SearchOptions::stop.
struct Interrupted : std::runtime_error {
  Interrupted() : std::runtime_error("interrupted") {}
};

/// The most plans search() can cost with these options: per set of degrees, the orders times the
/// choices (micro-batch, vpp, ZeRO, recomputation with its partial variants, sequence
/// parallelism), before memory prunes any. Cheap: no plan is costed.
[[nodiscard]] std::int64_t plans_upper_bound(const Cluster& c, const Model& m, const JobSpec& j,
                                             const SearchOptions& opt);

/// InputError if a fixed degree or micro-batch can never be valid, or when the search would cost
/// more than opt.max_plans plans (the message says how to narrow it).
/// On a cluster of mixed GPU types the plans are ranked with the slowest GPU everywhere, then
/// the best 2 x top_k are costed stage by stage on their own GPUs with the layer split that
/// balances them (stage_balance.hpp) and ranked again.
/// With GPUs down or absent, the GPU counts a plan may use are searched too (the usable count
/// and the largest multiples of 2, 4, 8, ... below it, and what each TP degree can use whole;
/// down to half the usable count), each ranked on the regular layout; the best 2 x top_k are
/// then placed on the usable GPUs (placement.hpp) and ranked again on their placed step times.
/// opt.place does the same placing at the given GPU count when nothing is down.
[[nodiscard]] SearchResult search(const Cluster& c, const Model& m, const JobSpec& j,
                                  const Calibration& cal, const SearchOptions& opt);

/// The search over order strings alone, on GPUs 0..n-1 (search() without placement).
[[nodiscard]] SearchResult search_orders(const Cluster& c, const Model& m, const JobSpec& j,
                                         const Calibration& cal, const SearchOptions& opt);

/// The GPU counts a search with GPUs down tries, largest first.
[[nodiscard]] std::vector<int> candidate_worlds(const Cluster& c);

/// Every distinct order for a plan's degrees: the permutations of its dimensions > 1 among their
/// places in the default order (size-1 dimensions stay put). Sorted by order string.
[[nodiscard]] std::vector<Order> distinct_orders(const Plan& p);

}  // namespace topoplan
