#include "topoplan/placement.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>

#include "topoplan/search.hpp"

namespace topoplan {

double PlacementStats::gain() const {
  return order_kept || order_step_time <= 0 ? 0.0 : 1.0 - step_time / order_step_time;
}

std::vector<int> usable_devices(const Cluster& c) {
  std::vector<int> out;
  out.reserve(static_cast<std::size_t>(c.usable_count()));
  for (int d = 0; d < c.gpu_count(); ++d)
    if (c.usable(d)) out.push_back(d);
  return out;
}

namespace {

/// Costs the plan's communication on an assignment of devices; compute and memory do not depend
/// on it (prepare once).
class Costing {
 public:
  Costing(const Cluster& c, const Model& m, const JobSpec& j, const Plan& p, const Calibration& cal)
      : c_(c),
        m_(m),
        j_(j),
        cal_(cal),
        core_(prepare(c, m, j, p, cal)),
        fab_(make_fabric(c, cal)) {}
  Evaluation operator()(const Plan& p, const std::vector<int>& devices) {
    ++count_;
    if (c_.mixed())  // stage by stage on their GPUs
      return evaluate(c_, m_, j_, p, Mapping::with_devices(p, devices), cal_);
    return finish(core_, plan_shapes(c_, Mapping::with_devices(p, devices)), fab_, c_, j_, p, cal_);
  }
  [[nodiscard]] std::int64_t count() const { return count_; }

 private:
  const Cluster& c_;
  const Model& m_;
  const JobSpec& j_;
  const Calibration& cal_;
  PlanCore core_;
  Fabric fab_;
  std::int64_t count_ = 0;
};

/// Sets of tp usable devices that keep a TP group inside one server (or, above a server's size,
/// on whole consecutive usable servers), in device order.
struct Slots {
  int tp = 1;
  std::vector<int> devices;  ///< slot k: devices[k*tp .. k*tp+tp)
  std::vector<int> server;   ///< the (first) server of each slot
  std::vector<char> whole;   ///< the slot's server has no GPU down
  [[nodiscard]] int count() const { return static_cast<int>(server.size()); }
};

Slots make_slots(const Cluster& c, int tp) {
  Slots s;
  s.tp = tp;
  const int per = c.gpus_per_server();
  const int servers = c.spec().nodes;
  auto up_in = [&](int srv) {
    std::vector<int> up;
    for (int g = 0; g < per; ++g)
      if (c.usable(srv * per + g)) up.push_back(g);
    return up;
  };
  auto add = [&](int srv, bool whole, const std::vector<int>& devs) {
    s.devices.insert(s.devices.end(), devs.begin(), devs.end());
    s.server.push_back(srv);
    s.whole.push_back(whole ? 1 : 0);
  };
  if (tp > per) {
    if (tp % per != 0) return s;
    const int span = tp / per;
    std::vector<int> run;
    for (int srv = 0; srv < servers; ++srv) {
      if (static_cast<int>(up_in(srv).size()) != per) {
        run.clear();
        continue;
      }
      run.push_back(srv);
      if (static_cast<int>(run.size()) < span) continue;
      std::vector<int> devs;
      for (int r : run)
        for (int g = 0; g < per; ++g) devs.push_back(r * per + g);
      add(run.front(), true, devs);
      run.clear();
    }
    return s;
  }
  for (int srv = 0; srv < servers; ++srv) {
    const std::vector<int> up = up_in(srv);
    const bool whole = static_cast<int>(up.size()) == per;
    std::vector<char> taken(static_cast<std::size_t>(per), 0);
    // The aligned positions first (GPU indices k*tp ..): TP groups of every server then sit on
    // the same indices, and the groups across servers on the same rails.
    for (int k = 0; (k + 1) * tp <= per; ++k) {
      bool all = true;
      for (int g = k * tp; g < (k + 1) * tp; ++g) all = all && c.usable(srv * per + g);
      if (!all) continue;
      std::vector<int> devs;
      for (int g = k * tp; g < (k + 1) * tp; ++g) {
        devs.push_back(srv * per + g);
        taken[static_cast<std::size_t>(g)] = 1;
      }
      add(srv, whole, devs);
    }
    std::vector<int> rest;
    for (int g : up)
      if (!taken[static_cast<std::size_t>(g)]) rest.push_back(srv * per + g);
    for (std::size_t i = 0; i + static_cast<std::size_t>(tp) <= rest.size(); i += tp)
      add(srv, whole,
          std::vector<int>(rest.begin() + static_cast<std::ptrdiff_t>(i),
                           rest.begin() + static_cast<std::ptrdiff_t>(i) + tp));
  }
  return s;
}

/// An assignment of the plan's TP groups to slots, and the device of each rank it gives.
struct Assignment {
  std::vector<int> slot_of_group;
  std::vector<int> devices;
};

class Placer {
 public:
  Placer(const Cluster& c, const Plan& p, Costing& cost)
      : p_(p), cost_(cost), slots_(make_slots(c, p[Dim::tp])) {
    groups_ = Mapping::from_order(p).groups(Dim::tp);
  }
  [[nodiscard]] bool possible() const { return slots_.count() >= static_cast<int>(groups_.size()); }

  /// Slots in device order, first n; and the same preferring servers with no GPU down.
  std::vector<std::vector<int>> constructions() const {
    const int n = static_cast<int>(groups_.size());
    std::vector<int> in_order(static_cast<std::size_t>(slots_.count()));
    std::iota(in_order.begin(), in_order.end(), 0);
    std::vector<int> whole_first = in_order;
    std::stable_sort(whole_first.begin(), whole_first.end(),
                     [&](int a, int b) { return slots_.whole[a] > slots_.whole[b]; });
    whole_first.resize(static_cast<std::size_t>(n));
    std::sort(whole_first.begin(), whole_first.end());
    in_order.resize(static_cast<std::size_t>(n));
    std::vector<std::vector<int>> out{in_order};
    if (whole_first != in_order) out.push_back(whole_first);
    return out;
  }

  std::vector<int> devices_of(const std::vector<int>& slot_of_group) const {
    std::vector<int> dev(static_cast<std::size_t>(p_.world()));
    const int tp = slots_.tp;
    for (std::size_t g = 0; g < groups_.size(); ++g)
      for (int k = 0; k < tp; ++k)
        dev[static_cast<std::size_t>(groups_[g][k])] =
            slots_.devices[static_cast<std::size_t>(slot_of_group[g] * tp + k)];
    return dev;
  }

  /// First-improvement moves of whole TP groups: swap two groups' slots, move one to an unused
  /// slot, or swap every group of two servers. `best` is updated in place.
  int improve(std::vector<int>& best, Evaluation& best_eval, int moves, std::uint64_t seed) const {
    const int groups = static_cast<int>(best.size());
    const int slots = slots_.count();
    std::vector<int> group_in(static_cast<std::size_t>(slots), -1);
    for (int g = 0; g < groups; ++g) group_in[static_cast<std::size_t>(best[g])] = g;
    std::uint64_t state = seed;
    auto next = [&](std::uint64_t bound) {  // splitmix64
      state += 0x9e3779b97f4a7c15ULL;
      std::uint64_t z = state;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      return static_cast<int>((z ^ (z >> 31)) % bound);
    };
    int improvements = 0;
    for (int i = 0; i < moves && groups > 1; ++i) {
      std::vector<int> trial = best;
      const int kind = next(3);
      const int a = next(static_cast<std::uint64_t>(groups));
      if (kind == 0) {
        std::swap(trial[a], trial[next(static_cast<std::uint64_t>(groups))]);
      } else if (kind == 1 && slots > groups) {
        const int s = next(static_cast<std::uint64_t>(slots));
        if (group_in[static_cast<std::size_t>(s)] >= 0) continue;
        trial[a] = s;
      } else {
        const int b = next(static_cast<std::uint64_t>(groups));
        swap_servers(trial, slots_.server[best[a]], slots_.server[best[b]]);
      }
      if (trial == best) continue;
      const Evaluation e = cost_(p_, devices_of(trial));
      if (e.step_time < best_eval.step_time) {
        for (int g = 0; g < groups; ++g) group_in[static_cast<std::size_t>(best[g])] = -1;
        best = std::move(trial);
        for (int g = 0; g < groups; ++g) group_in[static_cast<std::size_t>(best[g])] = g;
        best_eval = e;
        ++improvements;
      }
    }
    return improvements;
  }

 private:
  /// Every group on server x goes to the same-numbered slot of server y and back (when both
  /// servers have as many slots).
  void swap_servers(std::vector<int>& assign, int x, int y) const {
    if (x == y) return;
    std::vector<int> sx, sy;
    for (int s = 0; s < slots_.count(); ++s) {
      if (slots_.server[s] == x) sx.push_back(s);
      if (slots_.server[s] == y) sy.push_back(s);
    }
    if (sx.size() != sy.size()) return;
    std::map<int, int> to;
    for (std::size_t k = 0; k < sx.size(); ++k) {
      to[sx[k]] = sy[k];
      to[sy[k]] = sx[k];
    }
    for (int& s : assign)
      if (auto it = to.find(s); it != to.end()) s = it->second;
  }

  const Plan& p_;
  Costing& cost_;
  Slots slots_;
  std::vector<std::vector<int>> groups_;
};

}  // namespace

Placement place(const Cluster& c, const Model& m, const JobSpec& j, const Plan& p,
                const Calibration& cal, const PlacementOptions& opt) {
  Costing cost(c, m, j, p, cal);
  const std::vector<int> usable = usable_devices(c);
  const std::vector<int> first(usable.begin(),
                               usable.begin() + static_cast<std::ptrdiff_t>(p.world()));
  // Every order string over the usable GPUs in device order.
  Placement out;
  bool have = false;
  for (const Order& o : distinct_orders(p)) {
    Plan q = p;
    q.order = o;
    Evaluation e = cost(q, first);
    if (!have || e.step_time < out.eval.step_time) {
      out = {q, first, e, {}};
      have = true;
    }
  }
  out.stats.order_step_time = out.eval.step_time;
  out.stats.best_order = short_order_string(out.plan);
  out.stats.order_kept = true;

  // Constructions under every order string (the order decides which ranks form each group),
  // then moves from the best of them.
  std::vector<Plan> plans;
  for (const Order& o : distinct_orders(p)) {
    plans.push_back(p);
    plans.back().order = o;
  }
  std::vector<Placer> placers;
  for (const Plan& q : plans) placers.emplace_back(c, q, cost);
  int best_placer = -1;
  std::vector<int> best;
  Evaluation best_eval;
  for (std::size_t k = 0; k < placers.size(); ++k) {
    if (!placers[k].possible()) continue;
    for (const auto& assign : placers[k].constructions()) {
      Evaluation e = cost(plans[k], placers[k].devices_of(assign));
      if (best_placer < 0 || e.step_time < best_eval.step_time) {
        best_placer = static_cast<int>(k);
        best = assign;
        best_eval = e;
      }
    }
  }
  if (best_placer >= 0) {
    const Placer& placer = placers[static_cast<std::size_t>(best_placer)];
    out.stats.improvements = placer.improve(best, best_eval, opt.moves, opt.seed);
    if (best_eval.step_time < out.eval.step_time) {
      out.plan = plans[static_cast<std::size_t>(best_placer)];
      out.devices = placer.devices_of(best);
      out.eval = best_eval;
      out.stats.order_kept = false;
    }
  }
  out.stats.step_time = out.eval.step_time;
  out.stats.candidates = cost.count();
  out.stats.idle = c.usable_count() - static_cast<int>(p.world());
  std::vector<char> used(static_cast<std::size_t>(c.gpu_count()), 0);
  for (int d : out.devices) used[static_cast<std::size_t>(d)] = 1;
  for (int d : usable)
    if (!used[static_cast<std::size_t>(d)]) out.stats.idle_devices.push_back(d);
  return out;
}

}  // namespace topoplan
