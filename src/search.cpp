#include "topoplan/search.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "topoplan/error.hpp"

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
  std::sort(out.begin(), out.end(), [](const Order& a, const Order& b) {
    return order_string(a) < order_string(b);
  });
  return out;
}

namespace {

std::vector<int> divisors(std::int64_t n) {
  std::vector<int> out;
  for (std::int64_t d = 1; d <= n; ++d)
    if (n % d == 0) out.push_back(static_cast<int>(d));
  return out;
}

/// Same plan but for the order, and exactly the same cost: a mirror layout that gives nothing new.
bool equivalent(const Candidate& a, const Candidate& b) {
  return a.plan.degree == b.plan.degree && a.plan.micro_batch == b.plan.micro_batch &&
         a.plan.vpp == b.plan.vpp &&
         a.plan.zero == b.plan.zero && a.plan.recompute == b.plan.recompute &&
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
  TopK(int k, bool distinct)
      : k_(static_cast<std::size_t>(std::max(1, k))), distinct_(distinct) {
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

SearchResult search(const Cluster& c, const Model& m, const JobSpec& j, const Calibration& cal,
                    const SearchOptions& opt) {
  SearchResult r;
  const int n = c.gpu_count();
  const int ftp = opt.fixed[static_cast<int>(Dim::tp)];
  const int fpp = opt.fixed[static_cast<int>(Dim::pp)];
  const int fdp = opt.fixed[static_cast<int>(Dim::dp)];
  for (Dim d : {Dim::tp, Dim::pp, Dim::dp}) {
    const int v = opt.fixed[static_cast<int>(d)];
    if (v < 0 || (v > 0 && n % v != 0))
      throw_input(fmt::format("--{}", to_string(d)), "",
                  fmt::format("{} does not divide the cluster's {} GPUs", v, n));
  }
  std::vector<std::pair<PlanError, std::int64_t>> rejected;
  auto reject = [&](PlanError e) {
    for (auto& [k, cnt] : rejected)
      if (k == e) {
        ++cnt;
        return;
      }
    rejected.emplace_back(e, 1);
  };
  if (opt.zero < -1 || opt.zero > 3)
    throw_input("--zero", "", fmt::format("expected 0, 1, 2 or 3, got {}", opt.zero));
  TopK top(opt.top_k, opt.distinct);
  Candidate cand;
  const std::vector<Recompute> recomputes =
      opt.recompute ? std::vector<Recompute>{*opt.recompute}
                    : std::vector<Recompute>{Recompute::none, Recompute::selective, Recompute::full};
  for (int tp : divisors(n)) {
    if (ftp && tp != ftp) continue;
    for (int pp : divisors(n / tp)) {
      if (fpp && pp != fpp) continue;
      const int dp = n / tp / pp;
      if (fdp && dp != fdp) continue;
      Plan base;
      base[Dim::tp] = tp;
      base[Dim::pp] = pp;
      base[Dim::dp] = dp;
      const std::int64_t per_dp = j.global_batch % dp == 0 ? j.global_batch / dp : 0;
      std::vector<int> mbs = per_dp ? divisors(per_dp) : std::vector<int>{1};
      const std::vector<Order> orders = opt.order ? std::vector<Order>{*opt.order}
                                                  : distinct_orders(base);
      // Choices that cannot differ are searched once: ZeRO with dp = 1, SP with tp = 1.
      std::vector<int> zeros;
      if (opt.zero >= 0) zeros = {opt.zero};
      else if (dp == 1) zeros = {0};
      else zeros = {0, 1, 2, 3};
      std::vector<bool> sps;
      if (opt.sequence_parallel) sps = {*opt.sequence_parallel};
      else if (tp == 1) sps = {false};
      else sps = {false, true};
      // Interleaving: 1, or any number of model chunks per stage that divides the layers.
      std::vector<int> vpps;
      if (opt.vpp) {
        vpps = {opt.vpp};
      } else {
        vpps = {1};
        for (std::int64_t v = 2; pp > 1 && v * pp <= m.spec.layers; ++v)
          if (m.spec.layers % (v * pp) == 0) vpps.push_back(static_cast<int>(v));
      }
      for (int mb : mbs)
      for (int vpp : vpps) {
        if (opt.micro_batch && mb != opt.micro_batch) continue;
        base.micro_batch = mb;
        base.vpp = vpp;
        PlanError err = check_plan(c, m, j, base);
        if (err != PlanError::none) {
          reject(err);
          continue;
        }
        for (int zero : zeros)
          for (Recompute rc : recomputes)
            for (bool sp : sps)
              for (const Order& o : orders) {
                cand.plan = base;
                cand.plan.order = o;
                cand.plan.zero = zero;
                cand.plan.recompute = rc;
                cand.plan.sequence_parallel = sp;
                cand.eval = evaluate(c, m, j, cand.plan, Mapping::from_order(cand.plan), cal);
                ++r.evaluated;
                if (!cand.eval.fits) {
                  ++r.out_of_memory;
                  if (!r.closest_unfit ||
                      cand.eval.memory.total() < r.closest_unfit->eval.memory.total())
                    r.closest_unfit = cand;
                  continue;
                }
                top.offer(cand);
              }
      }
    }
  }
  r.top = top.take();
  if (!r.top.empty()) r.closest_unfit.reset();
  std::sort(rejected.begin(), rejected.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [e, cnt] : rejected) r.rejected.emplace_back(short_reason(e), cnt);
  if (opt.micro_batch && r.evaluated == 0 && r.rejected.empty())
    throw_input("--micro-batch", "",
                fmt::format("{} divides no data-parallel share of the global batch {}",
                            opt.micro_batch, j.global_batch));
  return r;
}

}  // namespace topoplan
