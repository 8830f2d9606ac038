#pragma once
/// Fits the link constants of the calibration to a user's own nccl-tests logs: for each log, the
/// tier its ranks span (inside one server: the server's link; across servers: the network's),
/// that link's achieved bandwidth from the largest messages and its per-step latency from the
/// smallest, both solved through topoplan's own collective model so that the fitted constants
/// reproduce the log when `plan` and `evaluate` use them.
#include <string>
#include <vector>

#include "topoplan/calibration.hpp"
#include "topoplan/import/nccl_tests.hpp"
#include "topoplan/topology.hpp"

namespace topoplan {

struct NcclFitRow {
  double bytes = 0;
  double measured_s = 0;
  double predicted_s = 0;  ///< with the fitted constants, NCCL's choice of algorithm modelled
};

struct NcclFit {
  std::string source;
  NcclOp op = NcclOp::all_reduce;
  int ranks = 0, nodes = 0;
  int tier = 0;  ///< the innermost tier holding every rank
  Link link = Link::nvlink4;
  std::vector<std::pair<std::string, double>> constants;  ///< key (calibrate --constants), value
  double busbw = 0;       ///< achieved bus bandwidth on the largest messages, bytes/s
  double small_time = 0;  ///< the smallest message's time, seconds
  std::vector<NcclFitRow> rows;
};

/// Fits every log in turn (single-server logs first, then by server count), each against the
/// constants the earlier ones left; `cal` ends with the fitted values (a link fitted by several
/// logs keeps the one with the most servers). `cluster` gives the servers and link kinds; its
/// node count is set per log. InputError when a log's ranks do not fit the cluster's servers.
[[nodiscard]] std::vector<NcclFit> fit_nccl_tests(const ClusterSpec& cluster, Calibration& cal,
                                                  std::vector<NcclTestLog> logs);

/// The fitted constants as a calibration file (`--calibration`), with its provenance.
[[nodiscard]] std::string nccl_fit_calibration_json(const std::vector<NcclFit>& fits);

}  // namespace topoplan
