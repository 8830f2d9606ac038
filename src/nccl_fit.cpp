// Link constants fitted to nccl-tests logs through topoplan's own collective model.
#include "topoplan/nccl_fit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <nlohmann/json.hpp>

#include "detail/json_output.hpp"
#include "topoplan/collectives.hpp"
#include "topoplan/error.hpp"
#include "topoplan/mapping.hpp"

namespace topoplan {
namespace {

/// The model's time for one log row: NCCL's choice among the algorithms (`choose`), or the
/// ring the bandwidth is defined on.
double model_time(const Fabric& f, const GroupShape& g, NcclOp op, double bytes, bool choose) {
  switch (op) {
    case NcclOp::all_reduce:
      return (choose ? all_reduce(f, g, bytes) : ring_all_reduce(f, g, bytes)).time;
    case NcclOp::all_gather: return ring_all_gather(f, g, bytes).time;
    case NcclOp::reduce_scatter: return ring_reduce_scatter(f, g, bytes).time;
    case NcclOp::all_to_all: return all_to_all(f, g, bytes).time;
    case NcclOp::send_recv: return send_recv(f, std::max(g.span_tier, 0), bytes).time;
  }
  return 0;
}

/// x in [lo, hi] where time(x) = target, for time decreasing (`falling`) or increasing in x;
/// the nearer end when the target lies outside.
double solve(double lo, double hi, bool falling, double target,
             const std::function<double(double)>& time) {
  for (int i = 0; i < 80; ++i) {
    const double mid = (lo + hi) / 2;
    if ((time(mid) > target) == falling)
      lo = mid;
    else
      hi = mid;
  }
  return (lo + hi) / 2;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

/// The rows with the `k` largest (or smallest) sizes.
std::vector<NcclTestRow> extreme_rows(std::vector<NcclTestRow> rows, std::size_t k, bool largest) {
  std::stable_sort(rows.begin(), rows.end(), [&](const auto& a, const auto& b) {
    return largest ? a.bytes > b.bytes : a.bytes < b.bytes;
  });
  rows.resize(std::min(k, rows.size()));
  return rows;
}

struct Group {
  Cluster cluster;
  GroupShape shape;
};

Group group_of(const ClusterSpec& base, const NcclTestLog& log) {
  ClusterSpec spec = base;
  spec.nodes = log.nodes;
  const int per_server = base.tiers.front().fanout;
  if (log.ranks % log.nodes != 0 || log.ranks / log.nodes > per_server)
    throw_input(
        log.source, "",
        fmt::format("{} ranks on {} host{} do not fit {}'s servers of {} GPUs (pass "
                    "the cluster these logs were measured on with --cluster)",
                    log.ranks, log.nodes, log.nodes == 1 ? "" : "s", base.name, per_server));
  Cluster c(spec, log.source);
  std::vector<int> devices;
  for (int node = 0; node < log.nodes; ++node)
    for (int i = 0; i < log.ranks / log.nodes; ++i) devices.push_back(node * per_server + i);
  const GroupShape g = shape_of_devices(c, devices);
  return {std::move(c), g};
}

NcclFit fit_one(const ClusterSpec& base, Calibration& cal, const NcclTestLog& log) {
  const Group grp = group_of(base, log);
  const Cluster& c = grp.cluster;
  NcclFit fit;
  fit.source = log.source;
  fit.op = log.op;
  fit.ranks = log.ranks;
  fit.nodes = log.nodes;
  fit.tier = std::max(grp.shape.span_tier, 0);
  fit.link = c.link(fit.tier);
  LinkCalibration& lc = cal.links[static_cast<std::size_t>(fit.link)];
  const std::string key = fmt::format("link.{}.", to_string(fit.link));
  auto time_with = [&](bool choose, double bytes) {
    return model_time(make_fabric(c, cal), grp.shape, log.op, bytes, choose);
  };
  // Bandwidth from the largest messages: the ring's share of the line rate that gives the
  // measured time (NVLS when a single-server all-reduce beats the line rate).
  std::vector<double> fractions;
  const auto big = extreme_rows(log.rows, 3, true);
  for (const auto& r : big)
    fractions.push_back(solve(1e-3, 4.0, true, r.time_s, [&](double x) {
      lc.bw_fraction = x;
      return time_with(false, r.bytes);
    }));
  lc.bw_fraction = median(fractions);
  if (log.op == NcclOp::all_reduce && fit.tier == 0 && lc.bw_fraction > 1.0 &&
      lc.nvls_bw_fraction > 0) {
    std::vector<double> nvls;
    lc.bw_fraction = std::min(lc.bw_fraction, 1.0);
    for (const auto& r : big)
      nvls.push_back(solve(1e-3, 4.0, true, r.time_s, [&](double x) {
        lc.nvls_bw_fraction = x;
        return nvls_all_reduce(make_fabric(c, cal), grp.shape, r.bytes).time;
      }));
    lc.nvls_bw_fraction = median(nvls);
    fit.constants.emplace_back(key + "nvls_bw_fraction", lc.nvls_bw_fraction);
  } else {
    // Above the line rate the model's topology is wrong for this log (more NICs, say); the
    // ceiling keeps the file loadable and the residuals show the rest.
    lc.bw_fraction = std::min(lc.bw_fraction, 1.0);
    fit.constants.emplace_back(key + "bw_fraction", lc.bw_fraction);
    // A single-server all-reduce at ring speed where the model would pick NVLS: the log shows
    // NVLS is not in use (NCCL_NVLS_ENABLE=0, or no NVSwitch support), so the fit turns it off.
    const auto& top = big.front();
    if (log.op == NcclOp::all_reduce && fit.tier == 0 && lc.nvls_bw_fraction > 0 &&
        nvls_all_reduce(make_fabric(c, cal), grp.shape, top.bytes).time < 0.97 * top.time_s) {
      lc.nvls_bw_fraction = 0;
      fit.constants.emplace_back(key + "nvls_bw_fraction", 0.0);
    }
  }
  // Latency from the smallest messages, with the bandwidth just fitted.
  std::vector<double> steps;
  for (const auto& r : extreme_rows(log.rows, 3, false))
    steps.push_back(solve(0.0, 1e-3, false, r.time_s, [&](double x) {
      lc.step_latency = x;
      return time_with(true, r.bytes);
    }));
  lc.step_latency = median(steps);
  fit.constants.emplace_back(key + "step_latency_us", lc.step_latency * 1e6);
  fit.busbw = big.empty() ? 0 : big.front().busbw;
  fit.small_time = extreme_rows(log.rows, 1, false).front().time_s;
  return fit;
}

}  // namespace

std::vector<NcclFit> fit_nccl_tests(const ClusterSpec& cluster, Calibration& cal,
                                    std::vector<NcclTestLog> logs) {
  std::stable_sort(logs.begin(), logs.end(), [](const auto& a, const auto& b) {
    return a.nodes != b.nodes ? a.nodes < b.nodes : a.ranks < b.ranks;
  });
  std::vector<NcclFit> fits;
  for (const auto& log : logs) fits.push_back(fit_one(cluster, cal, log));
  // Residuals once every constant is fitted: what plan and evaluate will now predict.
  for (std::size_t i = 0; i < logs.size(); ++i) {
    const Group grp = group_of(cluster, logs[i]);
    const Fabric f = make_fabric(grp.cluster, cal);
    for (const auto& r : logs[i].rows)
      fits[i].rows.push_back(
          {r.bytes, r.time_s, model_time(f, grp.shape, logs[i].op, r.bytes, true)});
  }
  return fits;
}

std::string nccl_fit_calibration_json(const std::vector<NcclFit>& fits) {
  nlohmann::ordered_json j;
  std::string from;
  for (const auto& f : fits) from += (from.empty() ? "" : ", ") + f.source;
  j["source"] = "topoplan import nccl-tests: " + from;
  // A link fitted by several logs keeps the last fit (the most servers).
  for (const auto& f : fits)
    for (const auto& [key, value] : f.constants) j[key] = detail::sig(value, 4);
  return j.dump(2) + "\n";
}

}  // namespace topoplan
