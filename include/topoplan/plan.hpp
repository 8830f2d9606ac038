#pragma once
/// A parallel configuration: the degree of each dimension, the micro-batch size, and the
/// Megatron-style order string that lays ranks out (leftmost dimension varies fastest).
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace topoplan {

/// The parallel dimensions, in Megatron's default order.
enum class Dim : std::uint8_t { tp, cp, ep, dp, pp };
inline constexpr int kDims = 5;
using Order = std::array<Dim, kDims>;
inline constexpr Order kDefaultOrder{Dim::tp, Dim::cp, Dim::ep, Dim::dp, Dim::pp};

/// One value per dimension, indexed by Dim (iterate with `for (Dim d : kDefaultOrder)`).
template <class T>
struct DimArray {
  std::array<T, kDims> values{};
  [[nodiscard]] constexpr T& operator[](Dim d) { return values[static_cast<std::size_t>(d)]; }
  [[nodiscard]] constexpr const T& operator[](Dim d) const {
    return values[static_cast<std::size_t>(d)];
  }
  friend bool operator==(const DimArray&, const DimArray&) = default;
};

[[nodiscard]] const char* to_string(Dim d);

/// Activation recomputation: none; selective (attention scores and softmax); full (each layer's
/// forward, keeping only its input); selective_op ("selective-op", torchtitan's op-level
/// selective checkpointing: keeps the matmul and attention outputs except every second matmul
/// of a layer, recomputes those and every element-wise op). The search tries the first three;
/// selective-op is taken only when asked for.
enum class Recompute : std::uint8_t { none, selective, full, selective_op };
[[nodiscard]] const char* to_string(Recompute r);
/// InputError naming `what` on a bad value.
[[nodiscard]] Recompute parse_recompute(const std::string& s, const std::string& what);

/// Degrees follow Megatron-LM: world = tp x cp x dp x pp. EP does not multiply the world: expert
/// layers re-divide it as expert-tp x ep x expert-dp x pp (expert CP = 1), so ep x expert-tp must
/// divide tp x cp x dp. Expert TP is tp unless set lower (Megatron-core's
/// --expert-tensor-parallel-size, "MoE parallel folding": expert TP 1 lets EP span the TP ranks).
struct Plan {
  DimArray<int> degree{{1, 1, 1, 1, 1}};
  int micro_batch = 1;
  int vpp = 1;  ///< virtual pipeline stages (model chunks) per pipeline rank: interleaved 1F1B
  Order order = kDefaultOrder;
  int zero = 1;  ///< 0 none; 1 optimizer state (distributed optimizer);
                 ///< 2 + gradients; 3 + weights, sharded over dp
  Recompute recompute = Recompute::none;
  bool sequence_parallel = false;  ///< Megatron sequence parallelism (with tp > 1)
  /// With full recomputation: layers per pipeline stage recomputed, the rest keep their
  /// activations (Megatron-LM's --recompute-method block --recompute-num-layers, which counts per
  /// model chunk: this is that times vpp); 0: every layer.
  int recompute_layers = 0;
  /// Activation offloading (Megatron-core's --cpu-offloading --cpu-offloading-num-layers,
  /// Transformer Engine's CPU offload): the activations the first this-many layers save for the
  /// backward are copied to host memory during the forward and back before the backward needs them.
  /// 0: none. Megatron-core allows it only without pipeline parallelism or recomputation
  /// (plan_check.hpp).
  int offload_layers = 0;
  /// RecomputeModule bits (job.hpp) the plan recomputes besides the job's own
  /// (JobSpec::recompute_modules), with no or selective recomputation: what the search adds when
  /// a plan fits only by dropping those outputs (the norms' first, the cheapest to redo).
  /// recomputed_modules (job.hpp) is what a plan recomputes.
  unsigned recompute_modules = 0;
  /// An explicit uneven split: layers on the first and on the last pipeline stage (0: the
  /// default split, pipeline_split). The middle stages share the rest equally.
  std::int64_t first_stage_layers = 0;
  std::int64_t last_stage_layers = 0;
  /// Layers on every pipeline stage, first to last (empty: the split above): how stages on GPUs
  /// of different speeds are balanced (stage_balance.hpp). Each holds at least vpp layers (a
  /// multiple of vpp unless flexible_layout).
  std::vector<std::int64_t> stage_layers;
  /// Megatron-core's --pipeline-model-parallel-layout: with interleaving, a stage's layers need
  /// not be a multiple of vpp (its model chunks differ by a layer); set from the software stack.
  bool flexible_layout = false;
  /// Expert tensor parallelism for the MoE layers' experts (0: as tp). A divisor of tp; below tp
  /// the expert groups fold over the TP ranks (see above).
  int expert_tp = 0;

  [[nodiscard]] int operator[](Dim d) const { return degree[d]; }
  [[nodiscard]] int& operator[](Dim d) { return degree[d]; }
  [[nodiscard]] std::int64_t world() const;
};

/// The experts' tensor-parallel degree: Plan::expert_tp, or tp when unset.
[[nodiscard]] int expert_tp_of(const Plan& p);
/// The expert layers fold over the TP ranks: EP > 1 with expert TP below tp (what reports, the
/// plan table and Megatron-LM's arguments show; plan JSON records expert_tp whenever it differs).
[[nodiscard]] bool folds_experts(const Plan& p);
/// Ranks of one pipeline stage that EP x expert-TP re-divide: tp x cp x dp.
[[nodiscard]] std::int64_t expert_ranks(const Plan& p);
/// Replicas of each expert weight: expert_ranks / (ep x expert-TP) (the expert data-parallel
/// degree).
[[nodiscard]] double expert_replicas(const Plan& p);

/// Transformer layers per pipeline stage (per rank, over all its virtual stages): the first, each
/// middle one, the last. Megatron-LM expresses an uneven split with
/// --decoder-first-pipeline-num-layers and --decoder-last-pipeline-num-layers; with interleaving
/// every stage's count must divide into its vpp model chunks.
struct StageLayers {
  std::int64_t first = 0, middle = 0, last = 0;
  [[nodiscard]] std::int64_t max() const;
  [[nodiscard]] bool even() const { return first == middle && middle == last; }
};
/// The default split of `layers` over `pp` stages of `vpp` chunks each: the middle stages as
/// few layers as allows (a multiple of vpp, at least layers / pp), the first and last sharing
/// the rest, the first taking the smaller part (it keeps the most microbatches in flight); each
/// a multiple of vpp. pp dividing the layers into multiples of vpp gives the even split.
/// nullopt when no such split exists (more stages than layers; chunks that cannot be equal).
/// `flexible` (a stack with Megatron-core's layout flag): that split when it exists, else the
/// vpp-1 split, each stage holding at least vpp layers (the first and last at least vpp - 1: one
/// chunk may hold the embedding or the loss alone), its chunks as equal as the count allows.
[[nodiscard]] std::optional<StageLayers> pipeline_split(std::int64_t layers, int pp, int vpp = 1,
                                                        bool flexible = false);
/// Layers in each of a stage's `vpp` model chunks, in chunk order (the first ones take the
/// extra layer when the count does not divide).
[[nodiscard]] std::int64_t chunk_layers(std::int64_t stage_layers, int vpp, int chunk);
/// The default split for vpp 1 (always exists for pp <= layers).
[[nodiscard]] StageLayers stage_layers(std::int64_t layers, int pp);

/// The plan's split of `layers`: its explicit first/last stage layers, or the default split;
/// nullopt when that is not a valid split (plan_check reports why).
[[nodiscard]] std::optional<StageLayers> plan_split(const Plan& p, std::int64_t layers);
/// Layers on pipeline stage `i` of a plan's split (its stage_layers when set).
[[nodiscard]] std::int64_t layers_on_stage(const Plan& p, const StageLayers& split, int i);
/// The split a plan that passed check_plan runs with (plan_split; the vpp-1 default otherwise).
[[nodiscard]] StageLayers split_of(const Plan& p, std::int64_t layers);

/// The layers per pipeline stage as reports show them, "4 / 4 x 14 / 1" (first / middle x count /
/// last; "f / l" at pp 2; each stage's for a plan with stage_layers); "" for one stage and for
/// an even split the plan does not set.
[[nodiscard]] std::string split_string(const Plan& p, std::int64_t layers);
/// ", layers per stage 4 / 4 x 14 / 1" for plan lines; "" when split_string is.
[[nodiscard]] std::string split_clause(const Plan& p, std::int64_t layers);
/// Whether the plan sets its first or last stage's layers (given, or found by the split search).
[[nodiscard]] bool sets_first_last_split(const Plan& p);
/// The plan tables' split cell: "first/last" stage layers when the plan sets them, else "-".
[[nodiscard]] std::string split_cell(const Plan& p, std::int64_t layers);

/// The recomputation as reports show it: "none", "selective", "full", or "block N" when full
/// recomputation covers only N layers per stage; "+" the modules recomputed besides (the
/// plan's and `job_modules`, the job's RecomputeModule bits), e.g. "none+layernorm".
[[nodiscard]] std::string recompute_string(const Plan& p, unsigned job_modules = 0);
/// The modules the plan itself recomputes (Plan::recompute_modules; none under full
/// recomputation): what plan JSON records as "recompute_modules".
[[nodiscard]] unsigned own_recompute_modules(const Plan& p);

/// "tp 8 cp 2 pp 4 dp 16": the degrees as reports print them; cp and ep only when above 1, dp
/// unless `with_dp` is false (inference, where dp counts replicas).
[[nodiscard]] std::string degrees_string(const Plan& p, bool with_dp = true);
/// "tp-cp-ep-dp-pp". Always names all five dimensions.
[[nodiscard]] std::string order_string(const Order& o);
/// Parses an order string. Dimensions left out are appended in default order, so "tp-dp-pp"
/// means tp-dp-pp-cp-ep (size-1 dimensions do not change the layout). InputError on a bad token
/// or a repeated dimension; `what` names the flag or field.
[[nodiscard]] Order parse_order(const std::string& s, const std::string& what);
/// Megatron-LM's --use-tp-pp-dp-mapping order.
inline constexpr Order kTpPpDpOrder{Dim::tp, Dim::cp, Dim::ep, Dim::pp, Dim::dp};
/// True when `other` lays out the plan's dimensions of degree > 1 as the plan's order does
/// (so both give the same groups).
[[nodiscard]] bool same_layout(const Plan& p, const Order& other);
/// The order string with size-1 dimensions dropped ("tp-dp-pp"), as reports show it.
[[nodiscard]] std::string short_order_string(const Plan& p);

}  // namespace topoplan
