// The search on clusters with GPUs down: GPU counts, order strings, then explicit placements.
#include <algorithm>
#include <map>
#include <set>

#include "topoplan/search.hpp"

namespace topoplan {

std::vector<int> candidate_worlds(const Cluster& c) {
  const int usable = c.usable_count();
  std::set<int, std::greater<>> worlds;
  for (int g = 1; g <= usable; g *= 2) worlds.insert(usable / g * g);
  for (int tp = 1; tp <= c.gpus_per_server(); tp *= 2)
    worlds.insert(static_cast<int>(c.tp_capacity(tp)));
  std::vector<int> out;
  for (int w : worlds)
    if (w > 0 && out.size() < 8) out.push_back(w);
  return out;
}

namespace {

bool divides_fixed(const SearchOptions& opt, int n) {
  for (Dim d : kDefaultOrder)
    if (opt.fixed[d] > 0 && n % opt.fixed[d] != 0) return false;
  return true;
}

}  // namespace

SearchResult search(const Cluster& c, const Model& m, const JobSpec& j, const Calibration& cal,
                    const SearchOptions& opt) {
  if (!c.has_down_gpus() && !opt.place) return search_orders(c, m, j, cal, opt);
  std::vector<int> worlds;
  if (j.gpus > 0) {
    worlds.push_back(j.gpus);
  } else {
    for (int w : candidate_worlds(c))
      if (divides_fixed(opt, w)) worlds.push_back(w);
    // None fits the fixed degrees: the order search over the usable count says why.
    if (worlds.empty()) worlds.push_back(c.usable_count());
  }
  SearchResult all;
  std::vector<Candidate> pool;
  std::map<std::string, std::int64_t> rejected;
  for (int w : worlds) {
    JobSpec jw = j;
    jw.gpus = w;
    SearchResult r = search_orders(c, m, jw, cal, opt);
    all.evaluated += r.evaluated;
    all.out_of_memory += r.out_of_memory;
    all.plans_upper_bound += r.plans_upper_bound;
    for (const auto& [why, n] : r.rejected) rejected[why] += n;
    if (!all.closest_unfit && r.closest_unfit) all.closest_unfit = r.closest_unfit;
    pool.insert(pool.end(), r.top.begin(), r.top.end());
  }
  for (const auto& [why, n] : rejected) all.rejected.emplace_back(why, n);
  // Place the best on the regular estimate, then rank them again on where they really run.
  std::sort(pool.begin(), pool.end(), ranks_before);
  pool.resize(std::min<std::size_t>(pool.size(), 2 * static_cast<std::size_t>(opt.top_k)));
  for (Candidate& cand : pool) {
    if (opt.stop && opt.stop->load()) throw Interrupted();
    Placement pl = place(c, m, j, cand.plan, cal, opt.placement);
    cand.plan = pl.plan;
    cand.eval = pl.eval;
    cand.devices = std::move(pl.devices);
    cand.placement = pl.stats;
  }
  std::sort(pool.begin(), pool.end(), ranks_before);
  pool.resize(std::min<std::size_t>(pool.size(), static_cast<std::size_t>(opt.top_k)));
  all.top = std::move(pool);
  if (!all.top.empty()) all.closest_unfit.reset();
  return all;
}

}  // namespace topoplan
