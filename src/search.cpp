#include "topoplan/search.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "topoplan/error.hpp"

namespace topoplan {

bool ranks_before(const Candidate& a, const Candidate& b) {
  if (a.eval.fits != b.eval.fits) return a.eval.fits;
  if (a.eval.step_time != b.eval.step_time) return a.eval.step_time < b.eval.step_time;
  for (Dim d : {Dim::tp, Dim::pp, Dim::dp, Dim::cp, Dim::ep})
    if (a.plan[d] != b.plan[d]) return a.plan[d] < b.plan[d];
  if (a.plan.micro_batch != b.plan.micro_batch) return a.plan.micro_batch < b.plan.micro_batch;
  return order_string(a.plan.order) < order_string(b.plan.order);
}

std::vector<Order> distinct_orders(const Plan& p) {
  std::vector<Dim> active;
  for (Dim d : kDefaultOrder)
    if (p[d] > 1) active.push_back(d);
  std::vector<Order> out;
  std::sort(active.begin(), active.end());
  do {
    Order o{};
    int n = 0;
    for (Dim d : active) o[n++] = d;
    for (Dim d : kDefaultOrder)
      if (p[d] == 1) o[n++] = d;
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

/// Keeps the best K in order without reallocating.
class TopK {
 public:
  explicit TopK(int k) : k_(static_cast<std::size_t>(std::max(1, k))) { items_.reserve(k_ + 1); }
  void offer(const Candidate& c) {
    if (items_.size() == k_ && !ranks_before(c, items_.back())) return;
    auto at = std::upper_bound(items_.begin(), items_.end(), c, ranks_before);
    items_.insert(at, c);
    if (items_.size() > k_) items_.pop_back();
  }
  std::vector<Candidate> take() { return std::move(items_); }

 private:
  std::size_t k_;
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
  TopK top(opt.top_k);
  Candidate cand;
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
      for (int mb : mbs) {
        if (opt.micro_batch && mb != opt.micro_batch) continue;
        base.micro_batch = mb;
        PlanError err = check_plan(c, m, j, base);
        if (err != PlanError::none) {
          reject(err);
          continue;
        }
        for (const Order& o : orders) {
          cand.plan = base;
          cand.plan.order = o;
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
