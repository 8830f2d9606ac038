// The search on clusters with GPUs down: GPU counts, order strings, then explicit placements.
#include <algorithm>
#include <map>
#include <set>

#include "topoplan/plan_check.hpp"
#include "topoplan/search.hpp"
#include "topoplan/stage_balance.hpp"

namespace topoplan {

std::vector<int> candidate_worlds(const Cluster& c) {
  const int usable = c.usable_count();
  std::set<int, std::greater<>> worlds;
  for (int g = 1; g <= usable; g *= 2) worlds.insert(usable / g * g);
  for (int tp = 1; tp <= c.gpus_per_server(); tp *= 2)
    worlds.insert(static_cast<int>(c.tp_capacity(tp)));
  // Down to half the usable GPUs: 500 usable rarely factor with the batch, and one GPU down of
  // 16,384 may leave 15,360 (a multiple of 1,024) as the best count.
  std::vector<int> out;
  for (int w : worlds)
    if (w > 0 && 2 * static_cast<std::int64_t>(w) >= usable) out.push_back(w);
  return out;
}

namespace {

/// Mixed GPU types: the candidate costed stage by stage, with the split that balances its
/// stages when that is faster than the default one. Returns it with the default split.
Candidate balance_stages(const Cluster& c, const Model& m, const JobSpec& j, const Calibration& cal,
                         Candidate& cand) {
  const Mapping map = cand.devices.empty() ? Mapping::from_order(cand.plan)
                                           : Mapping::with_devices(cand.plan, cand.devices);
  cand.eval = evaluate(c, m, j, cand.plan, map, cal);
  const Candidate even = cand;
  if (cand.plan[Dim::pp] < 2) return even;
  const auto gpus = stage_gpus(c, cand.plan, map);
  // Each stage holds at least vpp layers: a balance that gives the slow stages few layers may
  // need less interleaving than the even split chose.
  std::vector<int> vpps{cand.plan.vpp};
  for (int v : {1, 2, 4})
    if (v < cand.plan.vpp) vpps.push_back(v);
  for (int v : vpps) {
    Plan q = cand.plan;
    q.vpp = v;
    q.stage_layers = balanced_stage_layers(m, j, q, cal, gpus);
    if (q.stage_layers.empty() || check_plan(c, m, j, q) != PlanError::none) continue;
    const Evaluation e = evaluate(c, m, j, q, map, cal);
    if (!(e.step_time < cand.eval.step_time) || e.fits != even.eval.fits) continue;
    cand.even_split_step_time = even.eval.step_time;
    cand.plan = std::move(q);
    cand.eval = e;
  }
  return even;
}

/// One order-string search's plans into the pool, its counts into the result (the counts and
/// rejections of the main search only: the pipeline searches repeat part of it).
void add_searched(const Cluster& c, const Model& m, const JobSpec& j, const Calibration& cal,
                  const SearchOptions& opt, SearchResult& all, std::vector<Candidate>& pool,
                  std::map<std::string, std::int64_t>& rejected, bool main) {
  SearchResult r = search_orders(c, m, j, cal, opt);
  if (main) {
    all.evaluated += r.evaluated;
    all.out_of_memory += r.out_of_memory;
    all.plans_upper_bound += r.plans_upper_bound;
    for (const auto& [why, n] : r.rejected) rejected[why] += n;
    if (!all.closest_unfit && r.closest_unfit) all.closest_unfit = r.closest_unfit;
  }
  for (auto& cand : r.top) {
    const bool seen = std::any_of(pool.begin(), pool.end(), [&](const Candidate& o) {
      return o.plan.degree == cand.plan.degree && o.plan.micro_batch == cand.plan.micro_batch &&
             o.plan.vpp == cand.plan.vpp && o.plan.order == cand.plan.order &&
             o.plan.zero == cand.plan.zero && o.plan.recompute == cand.plan.recompute &&
             o.plan.recompute_layers == cand.plan.recompute_layers &&
             o.plan.offload_layers == cand.plan.offload_layers &&
             o.plan.recompute_modules == cand.plan.recompute_modules &&
             o.plan.sequence_parallel == cand.plan.sequence_parallel;
    });
    if (!seen) pool.push_back(std::move(cand));
  }
}

bool divides_fixed(const SearchOptions& opt, int n) {
  for (Dim d : kDefaultOrder)
    if (opt.fixed[d] > 0 && n % opt.fixed[d] != 0) return false;
  return true;
}

}  // namespace

SearchResult search(const Cluster& c, const Model& m, const JobSpec& j, const Calibration& cal,
                    const SearchOptions& opt) {
  const bool down = c.has_down_gpus();
  if (!down && !opt.place && !c.mixed()) return search_orders(c, m, j, cal, opt);
  std::vector<int> worlds;
  if (j.gpus > 0 || !down) {
    worlds.push_back(j.gpus > 0 ? j.gpus : c.gpu_count());
  } else {
    for (int w : candidate_worlds(c))
      if (divides_fixed(opt, w)) worlds.push_back(w);
    // None fits the fixed degrees: the order search over the usable count says why.
    if (worlds.empty()) worlds.push_back(c.usable_count());
  }
  SearchResult all;
  std::vector<Candidate> pool;
  std::map<std::string, std::int64_t> rejected;
  // Mixed GPU types: plans are ranked with the slowest GPU everywhere, where pipelines look no
  // better than data parallelism; pipelines are what balance stages, so each pipeline degree's
  // best plans join the pool too.
  std::vector<SearchOptions> searches{opt};
  if (c.mixed() && opt.fixed[Dim::pp] == 0)
    for (int pp : {2, 4, 8, 16}) {
      if (opt.max[Dim::pp] > 0 && pp > opt.max[Dim::pp]) continue;
      searches.push_back(opt);
      searches.back().fixed[Dim::pp] = pp;
    }
  for (int w : worlds)
    for (const SearchOptions& o : searches) {
      if (&o != &searches.front() && w % o.fixed[Dim::pp] != 0) continue;
      JobSpec jw = j;
      jw.gpus = w;
      add_searched(c, m, jw, cal, o, all, pool, rejected, &o == &searches.front());
    }
  for (const auto& [why, n] : rejected) all.rejected.emplace_back(why, n);
  // Place the best on the regular estimate (every pipeline degree's, when mixed), then rank
  // them again on where they really run.
  std::sort(pool.begin(), pool.end(), ranks_before);
  const std::size_t keep = (c.mixed() ? searches.size() : 2) * static_cast<std::size_t>(opt.top_k);
  pool.resize(std::min(pool.size(), keep));
  for (Candidate& cand : pool) {
    if (opt.stop && opt.stop->load()) throw Interrupted();
    if (down || opt.place) {
      Placement pl = place(c, m, j, cand.plan, cal, opt.placement);
      cand.plan = pl.plan;
      cand.eval = pl.eval;
      cand.devices = std::move(pl.devices);
      cand.placement = pl.stats;
    }
    if (!c.mixed()) continue;
    const Candidate even = balance_stages(c, m, j, cal, cand);
    if (!all.best_even_split || ranks_before(even, *all.best_even_split))
      all.best_even_split = even;
  }
  std::sort(pool.begin(), pool.end(), ranks_before);
  pool.resize(std::min<std::size_t>(pool.size(), static_cast<std::size_t>(opt.top_k)));
  all.top = std::move(pool);
  if (!all.top.empty()) all.closest_unfit.reset();
  return all;
}

}  // namespace topoplan
