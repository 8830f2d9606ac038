#include "topoplan/search.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "topoplan/error.hpp"
#include "topoplan/plan_check.hpp"

namespace topoplan {

namespace {

/// 0: Megatron's default order; 1: its --use-tp-pp-dp-mapping order; 2: any other.
int order_preference(const Plan& p) {
  if (same_layout(p, kDefaultOrder)) return 0;
  if (same_layout(p, kTpPpDpOrder)) return 1;
  return 2;
}

}  // namespace

bool ranks_before(const Candidate& a, const Candidate& b) {
  if (a.eval.fits != b.eval.fits) return a.eval.fits;
  if (a.eval.step_time != b.eval.step_time) return a.eval.step_time < b.eval.step_time;
  for (Dim d : {Dim::tp, Dim::pp, Dim::dp, Dim::cp, Dim::ep})
    if (a.plan[d] != b.plan[d]) return a.plan[d] < b.plan[d];
  if (a.plan.micro_batch != b.plan.micro_batch) return a.plan.micro_batch < b.plan.micro_batch;
  if (a.plan.vpp != b.plan.vpp) return a.plan.vpp < b.plan.vpp;
  if (a.plan.zero != b.plan.zero) return a.plan.zero < b.plan.zero;
  if (a.plan.recompute != b.plan.recompute) return a.plan.recompute < b.plan.recompute;
  if (a.plan.recompute_layers != b.plan.recompute_layers)
    return a.plan.recompute_layers < b.plan.recompute_layers;
  if (a.plan.offload_layers != b.plan.offload_layers)
    return a.plan.offload_layers < b.plan.offload_layers;
  if (a.plan.recompute_modules != b.plan.recompute_modules)
    return a.plan.recompute_modules < b.plan.recompute_modules;
  if (a.plan.sequence_parallel != b.plan.sequence_parallel) return !a.plan.sequence_parallel;
  const int pa = order_preference(a.plan), pb = order_preference(b.plan);
  if (pa != pb) return pa < pb;
  return a.plan.order < b.plan.order;  // Dim's declared order: tp < cp < ep < dp < pp
}

std::vector<Order> distinct_orders(const Plan& p) {
  // Permute the dimensions > 1 among their own places in the default order; size-1 dimensions
  // keep theirs, so the default layout comes out as exactly the default order string.
  std::vector<int> places;
  std::vector<Dim> active;
  for (int i = 0; i < kDims; ++i)
    if (p[kDefaultOrder[i]] > 1) {
      places.push_back(i);
      active.push_back(kDefaultOrder[i]);
    }
  std::vector<Order> out;
  do {
    Order o = kDefaultOrder;
    for (std::size_t k = 0; k < places.size(); ++k) o[places[k]] = active[k];
    out.push_back(o);
  } while (std::next_permutation(active.begin(), active.end()));
  std::sort(out.begin(), out.end(),
            [](const Order& a, const Order& b) { return order_string(a) < order_string(b); });
  return out;
}

namespace {

/// Every divisor of n, ascending, in O(sqrt n).
std::vector<int> divisors(std::int64_t n) {
  std::vector<int> low, high;
  for (std::int64_t d = 1; d * d <= n; ++d)
    if (n % d == 0) {
      low.push_back(static_cast<int>(d));
      if (d * d != n) high.push_back(static_cast<int>(n / d));
    }
  low.insert(low.end(), high.rbegin(), high.rend());
  return low;
}

/// Same plan but for the order, and exactly the same cost: a mirror layout that gives nothing new.
bool equivalent(const Candidate& a, const Candidate& b) {
  return a.plan.degree == b.plan.degree && a.plan.micro_batch == b.plan.micro_batch &&
         a.plan.vpp == b.plan.vpp && a.plan.zero == b.plan.zero &&
         a.plan.recompute == b.plan.recompute &&
         a.plan.recompute_layers == b.plan.recompute_layers &&
         a.plan.offload_layers == b.plan.offload_layers &&
         a.plan.recompute_modules == b.plan.recompute_modules &&
         a.plan.sequence_parallel == b.plan.sequence_parallel &&
         a.eval.step_time == b.eval.step_time && a.eval.memory.total() == b.eval.memory.total();
}

/// Same degrees and micro-batch: one configuration for `--distinct` listings.
bool same_configuration(const Candidate& a, const Candidate& b) {
  return a.plan.degree == b.plan.degree && a.plan.micro_batch == b.plan.micro_batch;
}

/// Keeps the best K in order without reallocating. Of equivalent plans only the best-ranked
/// is kept, so the list shows K different choices.
class TopK {
 public:
  TopK(int k, bool distinct) : k_(static_cast<std::size_t>(std::max(1, k))), distinct_(distinct) {
    items_.reserve(k_ + 1);
  }
  void offer(const Candidate& c) {
    if (items_.size() == k_ && !ranks_before(c, items_.back())) return;
    for (auto it = items_.begin(); it != items_.end(); ++it) {
      if (!(distinct_ ? same_configuration(*it, c) : equivalent(*it, c))) continue;
      if (!ranks_before(c, *it)) return;
      items_.erase(it);
      break;
    }
    auto at = std::upper_bound(items_.begin(), items_.end(), c, ranks_before);
    items_.insert(at, c);
    if (items_.size() > k_) items_.pop_back();
  }
  std::vector<Candidate> take() { return std::move(items_); }

 private:
  std::size_t k_;
  bool distinct_;
  std::vector<Candidate> items_;
};

}  // namespace

namespace {

/// Less memory, then the ranking: which of two unfit plans to show.
bool closer(const Candidate& a, const Candidate& b) {
  if (a.eval.memory.total() != b.eval.memory.total())
    return a.eval.memory.total() < b.eval.memory.total();
  return ranks_before(a, b);
}

/// One worker's share of a search.
struct Partial {
  std::vector<Candidate> top;
  std::optional<Candidate> closest_unfit;
  std::int64_t evaluated = 0;
  std::int64_t out_of_memory = 0;
  std::vector<std::pair<PlanError, std::int64_t>> rejected;
  void reject(PlanError e, std::int64_t n = 1) {
    for (auto& [k, cnt] : rejected)
      if (k == e) {
        cnt += n;
        return;
      }
    rejected.emplace_back(e, n);
  }
};

/// The orders to cost for one set of degrees (those Megatron-LM can run).
std::vector<Order> orders_to_cost(const SearchOptions& opt, const Plan& base, Partial& out) {
  std::vector<Order> orders = opt.order ? std::vector<Order>{*opt.order} : distinct_orders(base);
  std::size_t keep = 0;
  for (const Order& o : orders) {
    Plan q = base;
    q.order = o;
    if (q[Dim::ep] > 1 && expert_pp_mismatch(q)) {
      out.reject(PlanError::ep_order);
      continue;
    }
    orders[keep++] = o;
  }
  orders.resize(keep);
  return orders;
}

/// Each order's group shapes, computed on first use: on a large cluster they walk every group,
/// which is wasted when no choice for these degrees is valid.
class LazyShapes {
 public:
  LazyShapes(const Cluster& c, const Plan& base, const std::vector<Order>& orders)
      : c_(c), base_(base), orders_(orders) {}
  const PlanShapes& operator[](std::size_t o) {
    if (shapes_.empty()) {
      shapes_.reserve(orders_.size());
      for (const Order& order : orders_) {
        Plan q = base_;
        q.order = order;
        shapes_.push_back(plan_shapes(c_, Mapping::from_order(q)));
      }
    }
    return shapes_[o];
  }

 private:
  const Cluster& c_;
  const Plan& base_;
  const std::vector<Order>& orders_;
  std::vector<PlanShapes> shapes_;
};

/// The choices searched for one set of degrees, each list in the order it is tried.
struct Choices {
  std::vector<int> mbs, vpps, zeros;
  std::vector<Recompute> recomputes;
  std::vector<bool> sps;
};

Choices choices_for(const Model& m, const JobSpec& j, const SearchOptions& opt, const Plan& base) {
  const int tp = base[Dim::tp], pp = base[Dim::pp], dp = base[Dim::dp];
  Choices ch;
  auto& [mbs, vpps, zeros, recomputes, sps] = ch;
  const std::int64_t per_dp = j.global_batch % dp == 0 ? j.global_batch / dp : 0;
  if (per_dp > 0)
    for (int b : divisors(per_dp))
      if (!opt.micro_batch || b == opt.micro_batch) mbs.push_back(b);
  if (mbs.empty()) mbs.push_back(opt.micro_batch ? opt.micro_batch : 1);
  if (opt.vpp) {
    vpps = {opt.vpp};
  } else {
    vpps = {1};
    // A flexible layout lets the first and the last stage hold one chunk fewer than vpp layers.
    const std::int64_t chunks = m.spec.layers + (j.flexible_pipeline_layout ? 2 : 0);
    for (std::int64_t v = 2; pp > 1 && v * pp <= chunks && v <= kMaxSearchedVpp; ++v)
      if (pipeline_split(m.spec.layers, pp, static_cast<int>(v), j.flexible_pipeline_layout))
        vpps.push_back(static_cast<int>(v));
  }
  if (opt.zero >= 0)
    zeros = {opt.zero};
  else if (dp * base[Dim::cp] == 1)
    zeros = {0};
  else
    zeros = {0, 1, 2, 3};
  recomputes = opt.recompute
                   ? std::vector<Recompute>{*opt.recompute}
                   : std::vector<Recompute>{Recompute::none, Recompute::selective, Recompute::full};
  if (opt.sequence_parallel)
    sps = {*opt.sequence_parallel};
  else if (tp == 1)
    sps = {false};
  else
    sps = {false, true};
  return ch;
}

/// A plan that trades time for memory by a count of layers (recomputed or offloaded), with its
/// costed core.
struct LayerTrade {
  Plan plan;
  PlanCore core;
};

/// The least count in [1, most] for which `with(count)` fits, by bisection (fitting only gets
/// easier as the count grows); nullopt when even `most` does not fit.
template <class With>
std::optional<LayerTrade> least_that_fits(const Cluster& c, const Model& m, const JobSpec& j,
                                          const Calibration& cal, int most, With with) {
  std::optional<LayerTrade> found;  // the least count that fits so far, with its core
  auto fits = [&](int k) {
    LayerTrade t{with(k), {}};
    t.core = prepare(c, m, j, t.plan, cal);
    if (t.core.fits) found = t;
    return t.core.fits;
  };
  if (most < 1 || !fits(most)) return std::nullopt;
  int lo = 1, hi = most;  // fits(hi); find the least
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (fits(mid))
      hi = mid;
    else
      lo = mid + 1;
  }
  return found;  // the last count that fitted is hi == lo
}

/// With full recomputation fitting, the fewest recomputed layers per stage that still fit, when
/// fewer than all: Megatron-LM's block method, k layers in each of the stage's vpp model chunks
/// (k x vpp per stage; the largest chunk has ceil(layers / vpp), so k runs up to one less).
/// nullopt when recomputing every layer is the only way.
std::optional<LayerTrade> fewest_recomputed_layers(const Cluster& c, const Model& m,
                                                   const JobSpec& j, const Plan& full,
                                                   const Calibration& cal) {
  const int stage = static_cast<int>(split_of(full, m.spec.layers).max());
  const int per_chunk = (stage + full.vpp - 1) / full.vpp;  // layers in the largest chunk
  if (per_chunk < 2 || (per_chunk - 1) * full.vpp >= stage) return std::nullopt;
  return least_that_fits(c, m, j, cal, per_chunk - 1, [&](int k) {
    Plan p = full;
    p.recompute_layers = k * full.vpp;
    return p;
  });
}

/// Whether a plan's slowest stage (PlanCore::layers_per_stage) can be its last, the one stage
/// that runs the head. Only then can moving layers from the last stage to the first shorten the
/// step: the first stage only grows, in compute, activations and parameters.
bool last_stage_can_be_slowest(const PlanCore& core, const Plan& p, const Model& m) {
  const StageLayers split = split_of(p, m.spec.layers);
  return core.layers_per_stage == static_cast<double>(split.last) + m.counts.mtp_layers;
}

/// SearchOptions::search_split: the plan with layers moved from its last stage to its first, a
/// step (vpp layers, one with a flexible layout) at a time while the last keeps at least one
/// step; each that fits goes to `cost` (the first stage's extra layers and activations are
/// costed as any stage's: the slowest stage and the most loaded one decide). Nothing moves when
/// the base plan's slowest stage is not its last, and the moves stop at the first split whose
/// slowest stage is another: more would only add to that stage. Nothing moves on a cluster of
/// mixed GPUs either: there every stage's layers are balanced to its GPU's speed
/// (balanced_stage_layers), which a first / last split would not change.
template <class Cost>
void cost_lighter_last_stages(const Cluster& c, const Model& m, const JobSpec& j,
                              const Calibration& cal, const Plan& base, const PlanCore& base_core,
                              Cost&& cost) {
  const int pp = base[Dim::pp];
  if (pp < 3 || c.mixed() || sets_first_last_split(base) ||
      !last_stage_can_be_slowest(base_core, base, m))
    return;
  const StageLayers split = split_of(base, m.spec.layers);
  const std::int64_t step = base.flexible_layout ? 1 : base.vpp;
  for (std::int64_t d = step; split.last - d >= step; d += step) {
    Plan v = base;
    v.first_stage_layers = split.first + d;
    v.last_stage_layers = split.last - d;
    if (check_plan(c, m, j, v) != PlanError::none) continue;
    const PlanCore core = prepare(c, m, j, v, cal);
    if (core.fits) cost(v, core);
    if (!last_stage_can_be_slowest(core, v, m)) return;
  }
}

/// Without recomputation not fitting: the fewest layers whose activations, offloaded to host
/// memory, make it fit (Megatron-core offloads only with pp 1 and no recomputation, fewer than
/// all layers). nullopt when offloading is off, impossible or not enough.
std::optional<LayerTrade> fewest_offloaded_layers(const Cluster& c, const Model& m,
                                                  const JobSpec& j, const Plan& base,
                                                  const Calibration& cal) {
  Plan one = base;
  one.offload_layers = 1;
  if (!j.activation_offload || offload_rule(c, m, one) != PlanError::none) return std::nullopt;
  return least_that_fits(c, m, j, cal, static_cast<int>(m.spec.layers) - 1, [&](int k) {
    Plan p = base;
    p.offload_layers = k;
    return p;
  });
}

/// Without full recomputation not fitting: the plan with the fewest more modules recomputed
/// (Megatron-core's --recompute-modules, Plan::recompute_modules) that fits, adding them in the
/// order of their cost per byte they free: the norms' outputs (an element-wise pass again), the
/// MoE experts' SwiGLU output (one more), MLA's up-projected Q, K and V (matmuls again). Only
/// modules the model has and the job does not recompute already; nullopt when none is left or
/// even all of them do not fit.
std::optional<LayerTrade> fewest_recomputed_modules(const Cluster& c, const Model& m,
                                                    const JobSpec& j, const Plan& base,
                                                    const Calibration& cal) {
  Plan p = base;
  for (const unsigned module : {kRecomputeLayernorm, kRecomputeMoeAct, kRecomputeMlaUpProj}) {
    if ((j.recompute_modules & module) || (module == kRecomputeMoeAct && !m.spec.moe()) ||
        (module == kRecomputeMlaUpProj && !m.spec.mla()))
      continue;
    p.recompute_modules |= module;
    LayerTrade t{p, prepare(c, m, j, p, cal)};
    if (t.core.fits) return t;
  }
  return std::nullopt;
}

/// Costs every choice for one set of degrees: the order-independent core once per choice, each
/// order's communication from shapes computed once per order. Memory prunes before the orders,
/// and a micro-batch that does not fit ends the larger ones.
void search_degrees(const Cluster& c, const Model& m, const JobSpec& j, const Calibration& cal,
                    const Fabric& fab, const SearchOptions& opt, const Plan& base_in, TopK& top,
                    Partial& out) {
  Plan base = base_in;
  base.flexible_layout = j.flexible_pipeline_layout;
  base.first_stage_layers = opt.first_stage_layers;
  base.last_stage_layers = opt.last_stage_layers;
  const std::vector<Order> orders = orders_to_cost(opt, base, out);
  if (orders.empty()) return;
  LazyShapes shapes(c, base_in, orders);
  const auto [mbs, vpps, zeros, recomputes, sps] = choices_for(m, j, opt, base);
  Candidate cand;
  for (int zero : zeros)
    for (Recompute rc : recomputes)
      for (bool sp : sps)
        for (int vpp : vpps)
          for (int mb : mbs) {  // ascending: once one does not fit, larger ones do not either
            base.micro_batch = mb;
            base.vpp = vpp;
            base.zero = zero;
            base.recompute = rc;
            base.sequence_parallel = sp;
            PlanError err = check_plan(c, m, j, base);
            if (err != PlanError::none) {
              out.reject(err);
              continue;
            }
            auto cost_orders = [&](const Plan& plan, const PlanCore& pc) {
              for (std::size_t o = 0; o < orders.size(); ++o) {
                cand.plan = plan;
                cand.plan.order = orders[o];
                cand.eval = finish(pc, shapes[o], fab, c, j, cand.plan, cal);
                ++out.evaluated;
                top.offer(cand);
              }
            };
            const PlanCore core = prepare(c, m, j, base, cal);
            if (!core.fits && rc == Recompute::none) {
              if (const auto off = fewest_offloaded_layers(c, m, j, base, cal)) {
                cost_orders(off->plan, off->core);
                continue;  // a larger micro-batch may fit with more layers offloaded
              }
            }
            if (!core.fits && rc != Recompute::full && !opt.recompute &&
                j.recompute_module_search) {
              if (const auto more = fewest_recomputed_modules(c, m, j, base, cal)) {
                cost_orders(more->plan, more->core);
                if (opt.search_split)
                  cost_lighter_last_stages(c, m, j, cal, more->plan, more->core, cost_orders);
                continue;  // a larger micro-batch may fit with more modules recomputed
              }
            }
            if (!core.fits) {
              const std::int64_t skipped =
                  static_cast<std::int64_t>(orders.size()) *
                  static_cast<std::int64_t>(mbs.end() - std::find(mbs.begin(), mbs.end(), mb));
              out.out_of_memory += skipped;  // pruned: memory only grows with the micro-batch
              if (!out.closest_unfit ||
                  core.memory.total() <= out.closest_unfit->eval.memory.total()) {
                cand.plan = base;
                cand.plan.order = orders.front();
                cand.eval = finish(core, shapes[0], fab, c, j, cand.plan, cal);
                if (!out.closest_unfit || closer(cand, *out.closest_unfit))
                  out.closest_unfit = cand;
              }
              break;
            }
            cost_orders(base, core);
            if (opt.search_split) cost_lighter_last_stages(c, m, j, cal, base, core, cost_orders);
            if (rc != Recompute::full || opt.recompute) continue;  // fixed: every layer
            // Recompute only as many layers as memory needs.
            if (const auto partial = fewest_recomputed_layers(c, m, j, base, cal))
              cost_orders(partial->plan, partial->core);
          }
}

std::vector<int> degree_options(std::int64_t n, int fixed, int max) {
  std::vector<int> out;
  for (int d : divisors(n))
    if ((!fixed || d == fixed) && (!max || d <= max || d == fixed)) out.push_back(d);
  return out;
}

}  // namespace

namespace {

/// InputError for options that can never give a plan.
void check_options(const Model& m, const SearchOptions& opt, int n, int cluster_gpus) {
  if (n > cluster_gpus)
    throw_input("gpus", "", fmt::format("{} GPUs, but the cluster has {}", n, cluster_gpus));
  for (Dim d : {Dim::tp, Dim::cp, Dim::pp, Dim::dp, Dim::ep}) {
    const int v = opt.fixed[d];
    if (v < 0 || (v > 0 && n % v != 0))
      throw_input(to_string(d), "", fmt::format("{} does not divide the {} GPUs", v, n));
  }
  if (opt.zero < -1 || opt.zero > 3)
    throw_input("zero", "", fmt::format("expected 0, 1, 2 or 3, got {}", opt.zero));
  if (opt.fixed[Dim::ep] > 1 && !m.spec.moe())
    throw_input("ep", "", fmt::format("{} is a dense model (no experts)", m.spec.name));
}

/// The experts' TP degrees a configuration of tensor-parallel degree tp is costed with (Plan::
/// expert_tp, 0 = as tp): opt.expert_tp > 0 fixes min(it, tp); unset, a model with experts tries
/// tp (Megatron's default) and 1 (EP over the TP ranks, Megatron-core's advice for fine-grained
/// experts). The degrees between are left to --expert-tp: they double the search again (tp 8).
std::vector<int> expert_tp_options(const Model& m, const SearchOptions& opt, int tp) {
  if (opt.expert_tp > 0) return {opt.expert_tp < tp ? opt.expert_tp : 0};
  if (opt.expert_tp < 0 || !m.spec.moe() || tp == 1) return {0};
  return {0, 1};
}

/// Adds `base` (degrees and expert TP set) with every EP degree its expert layers allow. A folded
/// expert TP only with EP > 1: without experts split, their TP is moot (and the plan is the
/// unfolded one's).
void add_expert_degrees(const Model& m, const SearchOptions& opt, const Plan& base,
                        std::vector<Plan>& configs, Partial& pre) {
  const int fixed_ep = opt.fixed[Dim::ep];
  const std::int64_t ep_ranks = expert_ranks(base) / expert_tp_of(base);
  std::vector<int> eps{1};
  if (m.spec.moe())
    eps = degree_options(ep_ranks, fixed_ep, opt.max[Dim::ep]);
  else if (fixed_ep > 1)
    pre.reject(PlanError::ep_dense);
  for (int ep : eps) {
    if (fixed_ep && ep != fixed_ep) continue;
    if (const PlanError e = ep_rule(m.spec, ep, ep_ranks); e != PlanError::none) {
      pre.reject(e);
      continue;
    }
    Plan p = base;
    p[Dim::ep] = ep;
    if (ep == 1) {
      if (base.expert_tp > 0 && opt.expert_tp <= 0) continue;  // the unfolded plan has it
      p.expert_tp = 0;
    }
    configs.push_back(p);
  }
}

/// Every set of degrees (tp, cp, pp, dp, ep) within the bounds that passes the per-dimension
/// rules (plan_check.hpp), so the workers only see candidates that can run.
std::vector<Plan> list_degrees(const Cluster& c, const Model& m, const JobSpec& j,
                               const SearchOptions& opt, int n, Partial& pre) {
  auto fixed = [&](Dim d) { return opt.fixed[d]; };
  auto max = [&](Dim d) { return opt.max[d]; };
  std::vector<Plan> configs;
  for (int tp : degree_options(n, fixed(Dim::tp), max(Dim::tp))) {
    if (const PlanError e = tp_rule(m.spec, tp); e != PlanError::none) {
      pre.reject(e);
      continue;
    }
    if ((c.has_down_gpus() || opt.place) && n > c.tp_capacity(tp)) {
      pre.reject(PlanError::placement);
      continue;
    }
    for (int cp : degree_options(n / tp, fixed(Dim::cp), max(Dim::cp))) {
      if (const PlanError e = cp_rule(j.seq_len, cp); e != PlanError::none) {
        pre.reject(e);
        continue;
      }
      if (cp > 1 && !fixed(Dim::cp) && j.seq_len / cp < opt.min_cp_tokens) continue;
      for (int pp : degree_options(n / tp / cp, fixed(Dim::pp), max(Dim::pp))) {
        if (pp > m.spec.layers) continue;
        const int dp = n / tp / cp / pp;
        if (fixed(Dim::dp) && dp != fixed(Dim::dp)) continue;
        for (int etp : expert_tp_options(m, opt, tp)) {
          Plan base;
          base.degree = DimArray<int>{{tp, cp, 1, dp, pp}};  // Dim order
          base.expert_tp = etp;
          if (expert_tp_rule(m.spec, base) != PlanError::none ||
              (!m.spec.moe() && opt.expert_tp > 0)) {
            pre.reject(PlanError::expert_tp);
            continue;
          }
          add_expert_degrees(m, opt, base, configs, pre);
        }
      }
    }
  }
  return configs;
}

/// Costs the configurations on `threads` workers; each keeps its own top list and counts.
void run_workers(const Cluster& c, const Model& m, const JobSpec& j, const Calibration& cal,
                 const SearchOptions& opt, const std::vector<Plan>& configs,
                 std::vector<TopK>& tops, std::vector<Partial>& parts) {
  const Fabric fab = make_fabric(c, cal);
  const int threads = static_cast<int>(parts.size());
  std::atomic<std::size_t> next{0};
  std::atomic<std::int64_t> costed{0};
  auto work = [&](int t) {
    for (std::size_t i = next.fetch_add(1); i < configs.size(); i = next.fetch_add(1)) {
      if (opt.stop && opt.stop->load(std::memory_order_relaxed)) break;
      const std::int64_t before = parts[t].evaluated;
      search_degrees(c, m, j, cal, fab, opt, configs[i], tops[t], parts[t]);
      costed.fetch_add(parts[t].evaluated - before, std::memory_order_relaxed);
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work, t);
  if (!opt.progress) {
    work(0);
  } else {
    std::atomic<bool> done{false};
    std::thread main_worker([&] {
      work(0);
      done = true;
    });
    while (!done) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      opt.progress(configs.empty() ? 1.0
                                   : std::min(1.0, static_cast<double>(next.load()) /
                                                       static_cast<double>(configs.size())),
                   costed.load());
    }
    main_worker.join();
  }
  for (auto& th : pool) th.join();
}

/// The winner's degrees and choices laid out the slowest way (what its mapping is worth); the
/// first of equally slow orders in distinct_orders' order.
std::optional<Candidate> worst_order(const Cluster& c, const Model& m, const JobSpec& j,
                                     const Calibration& cal, const Candidate& w) {
  Candidate worst = w;
  for (const Order& o : distinct_orders(w.plan)) {
    Candidate alt = w;
    alt.plan.order = o;
    alt.eval = evaluate(c, m, j, alt.plan, Mapping::from_order(alt.plan), cal);
    if (alt.eval.step_time > worst.eval.step_time) worst = alt;
  }
  if (worst.eval.step_time > w.eval.step_time) return worst;
  return std::nullopt;
}

}  // namespace

std::optional<Candidate> with_other_expert_tp(const Cluster& c, const Model& m, const JobSpec& j,
                                              const Calibration& cal, const Plan& p) {
  if (!m.spec.moe() || p[Dim::ep] <= 1 || p[Dim::tp] <= 1) return std::nullopt;
  Candidate alt{p, {}, {}, {}, 0};
  alt.plan.expert_tp = folds_experts(p) ? 0 : 1;
  if (check_plan(c, m, j, alt.plan) != PlanError::none) return std::nullopt;
  alt.eval = evaluate(c, m, j, alt.plan, Mapping::from_order(alt.plan), cal);
  return alt;
}

namespace {

std::int64_t upper_bound_of(const std::vector<Plan>& configs, const Model& m, const JobSpec& j,
                            const SearchOptions& opt) {
  std::int64_t total = 0;
  for (const Plan& base : configs) {
    const auto orders =
        opt.order ? std::int64_t{1} : static_cast<std::int64_t>(distinct_orders(base).size());
    const Choices ch = choices_for(m, j, opt, base);
    const auto size = [](const auto& v) { return static_cast<std::int64_t>(v.size()); };
    const std::int64_t rest = size(ch.mbs) * size(ch.vpps) * size(ch.zeros) * size(ch.sps);
    // Full recomputation, when searched, is costed again with the fewest layers that fit.
    const std::int64_t recomputes = size(ch.recomputes) + (opt.recompute ? 0 : 1);
    total += orders * rest * recomputes;
  }
  return total;
}

}  // namespace

SearchTooLarge::SearchTooLarge(std::int64_t b, std::int64_t l)
    : InputError(fmt::format("max_plans: this search could cost up to {} plans, over the limit of "
                             "{}; fix or cap a degree, or fix the micro-batch, order, vpp, ZeRO "
                             "stage or recomputation",
                             b, l)),
      bound(b),
      limit(l) {}

std::int64_t plans_upper_bound(const Cluster& c, const Model& m, const JobSpec& j,
                               const SearchOptions& opt) {
  const int n = j.gpus > 0 ? j.gpus : c.gpu_count();
  check_options(m, opt, n, c.gpu_count());
  Partial pre;
  return upper_bound_of(list_degrees(c, m, j, opt, n, pre), m, j, opt);
}

SearchResult search_orders(const Cluster& c, const Model& m, const JobSpec& j,
                           const Calibration& cal, const SearchOptions& opt) {
  const int n = j.gpus > 0 ? j.gpus : c.gpu_count();
  check_options(m, opt, n, c.gpu_count());
  Partial pre;
  const std::vector<Plan> configs = list_degrees(c, m, j, opt, n, pre);
  const std::int64_t bound = upper_bound_of(configs, m, j, opt);
  if (opt.max_plans > 0 && bound > opt.max_plans) throw SearchTooLarge(bound, opt.max_plans);
  const int threads = std::max(1, std::min<int>(opt.threads, static_cast<int>(configs.size())));
  std::vector<Partial> parts(static_cast<std::size_t>(threads));
  std::vector<TopK> tops;
  for (int t = 0; t < threads; ++t) tops.emplace_back(opt.top_k, opt.distinct);
  run_workers(c, m, j, cal, opt, configs, tops, parts);
  if (opt.stop && opt.stop->load()) throw Interrupted();

  // Merge in a fixed order; the ranking is a total order, so the result is the same for any
  // number of threads.
  TopK top(opt.top_k, opt.distinct);
  Partial all = std::move(pre);  // starts with the rejections found while listing degrees
  for (int t = 0; t < threads; ++t) {
    const Partial& p = parts[t];
    for (const auto& cand : tops[t].take()) top.offer(cand);
    all.evaluated += p.evaluated;
    all.out_of_memory += p.out_of_memory;
    if (p.closest_unfit && (!all.closest_unfit || closer(*p.closest_unfit, *all.closest_unfit)))
      all.closest_unfit = p.closest_unfit;
    for (const auto& [e, cnt] : p.rejected) all.reject(e, cnt);
  }
  SearchResult r;
  r.plans_upper_bound = bound;
  r.top = top.take();
  r.evaluated = all.evaluated;
  r.out_of_memory = all.out_of_memory;
  if (r.top.empty())
    r.closest_unfit = std::move(all.closest_unfit);
  else {
    r.worst_order = worst_order(c, m, j, cal, r.top.front());
    if (r.top.front().devices.empty())  // an explicit placement is not re-placed here
      r.other_expert_tp = with_other_expert_tp(c, m, j, cal, r.top.front().plan);
  }
  std::sort(all.rejected.begin(), all.rejected.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [e, cnt] : all.rejected) r.rejected.emplace_back(short_reason(e), cnt);
  if (opt.micro_batch && r.evaluated == 0 && r.rejected.empty() && r.out_of_memory == 0)
    throw_input("micro_batch", "",
                fmt::format("{} divides no data-parallel share of the global batch {}",
                            opt.micro_batch, j.global_batch));
  return r;
}

}  // namespace topoplan
