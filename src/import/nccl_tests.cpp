// nccl-tests output: the device list, the column header and the result rows.
#include "topoplan/import/nccl_tests.hpp"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <set>
#include <sstream>

#include "detail/words.hpp"
#include "topoplan/error.hpp"

namespace topoplan {
namespace {

constexpr std::array<std::pair<const char*, NcclOp>, 10> kOpNames{{
    {"all_reduce", NcclOp::all_reduce},
    {"allreduce", NcclOp::all_reduce},
    {"all_gather", NcclOp::all_gather},
    {"allgather", NcclOp::all_gather},
    {"reduce_scatter", NcclOp::reduce_scatter},
    {"reducescatter", NcclOp::reduce_scatter},
    {"alltoall", NcclOp::all_to_all},
    {"all_to_all", NcclOp::all_to_all},
    {"sendrecv", NcclOp::send_recv},
    {"send_recv", NcclOp::send_recv},
}};

bool all_digits(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

/// A finite number >= 0 (positive when `positive`), or InputError naming the line and column.
double number(const std::string& s, const std::string& source, int line, const char* column,
              bool positive) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v) || v < 0 ||
      (positive && v == 0))
    throw_input(source, fmt::format("line {}", line),
                fmt::format("{}: expected a {} number, got '{}'", column,
                            positive ? "positive" : "non-negative", s));
  return v;
}

struct Header {
  bool seen = false;
  int leading = 3;  ///< size, count, type, and redop and root when the header has them
};

/// "#  Rank  3 Group  0 Pid  1234 on HOST device  3 [...] NAME": the rank and its host.
void read_rank_line(const std::vector<std::string>& w, const std::string& source, int line,
                    std::set<int>& ranks, std::set<std::string>& hosts) {
  if (w.size() < 3 || !all_digits(w[2]) || w[2].size() > 7)
    throw_input(source, fmt::format("line {}", line),
                "expected '#  Rank N Group G Pid P on HOST device D ...'");
  const int rank = std::atoi(w[2].c_str());
  if (!ranks.insert(rank).second)
    throw_input(source, fmt::format("line {}", line), fmt::format("rank {} is listed twice", rank));
  for (std::size_t i = 3; i + 1 < w.size(); ++i)
    if (w[i] == "on") hosts.insert(w[i + 1]);
}

NcclTestRow read_row(const std::vector<std::string>& w, const Header& h, const std::string& source,
                     int line) {
  const std::size_t need = static_cast<std::size_t>(h.leading) + 4;
  if (w.size() < need)
    throw_input(source, fmt::format("line {}", line),
                fmt::format("expected at least {} columns (size, count, type{}, then time, algbw, "
                            "busbw and #wrong out of place), got {}",
                            need,
                            h.leading == 5   ? ", redop, root"
                            : h.leading == 4 ? ", redop"
                                             : "",
                            w.size()));
  NcclTestRow r;
  r.line = line;
  r.bytes = number(w[0], source, line, "size", false);
  if (r.bytes > 1e15)
    throw_input(source, fmt::format("line {}", line),
                fmt::format("size: expected at most 1e15 bytes, got {}", w[0]));
  const std::size_t t = static_cast<std::size_t>(h.leading);
  r.time_s = number(w[t], source, line, "time (us)", true) * 1e-6;
  r.algbw = number(w[t + 1], source, line, "algbw (GB/s)", false) * 1e9;
  r.busbw = number(w[t + 2], source, line, "busbw (GB/s)", false) * 1e9;
  return r;
}

/// The collective from the file name, else from busbw / algbw and the header's columns.
NcclOp infer_op(const NcclTestLog& log, bool reduces) {
  for (const auto& [name, op] : kOpNames)
    if (log.source.find(name) != std::string::npos) return op;
  const NcclTestRow* big = nullptr;
  for (const auto& r : log.rows)
    if (r.algbw > 0 && (!big || r.bytes > big->bytes)) big = &r;
  const double n = log.ranks;
  if (big && n > 2) {
    const double factor = big->busbw / big->algbw;
    auto near = [&](double want) { return std::abs(factor - want) <= 0.03 * want; };
    if (near(2 * (n - 1) / n)) return NcclOp::all_reduce;
    if (near((n - 1) / n)) return reduces ? NcclOp::reduce_scatter : NcclOp::all_gather;
    if (near(1)) return NcclOp::send_recv;
  }
  throw_input(log.source, "",
              "cannot tell which collective this log measures (name the file after its test, "
              "e.g. all_reduce_perf.txt, or pass --collective)");
}

}  // namespace

const char* to_string(NcclOp op) {
  switch (op) {
    case NcclOp::all_reduce: return "all_reduce";
    case NcclOp::all_gather: return "all_gather";
    case NcclOp::reduce_scatter: return "reduce_scatter";
    case NcclOp::all_to_all: return "alltoall";
    case NcclOp::send_recv: return "sendrecv";
  }
  return "?";
}

NcclOp parse_nccl_op(const std::string& s, const std::string& what) {
  for (const auto& [name, op] : kOpNames)
    if (s == name || s == std::string(name) + "_perf") return op;
  throw_input(what, "",
              fmt::format("expected all_reduce, all_gather, reduce_scatter, alltoall or "
                          "sendrecv, got '{}'",
                          s));
}

NcclTestLog parse_nccl_tests(const std::string& text, const std::string& source,
                             const std::string& op) {
  NcclTestLog log;
  log.source = source;
  std::set<int> ranks;
  std::set<std::string> hosts;
  Header h;
  bool reduces = false;
  std::istringstream in(text);
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    const std::vector<std::string> w = detail::words(line);
    if (w.empty()) continue;
    if (w[0] == "#" && w.size() > 1 && w[1] == "Rank") {
      read_rank_line(w, source, n, ranks, hosts);
    } else if (w[0] == "#" && w.size() > 3 && w[1] == "size" && w[2] == "count") {
      h.seen = true;
      for (const auto& x : w) h.leading += (x == "redop" || x == "root") ? 1 : 0;
    } else if (h.seen && all_digits(w[0])) {
      log.rows.push_back(read_row(w, h, source, n));
      reduces = reduces || (h.leading >= 4 && w[3] != "none");
    }
  }
  if (!h.seen)
    throw_input(source, "",
                "expected nccl-tests output: no column header ('#  size  count  type ...')");
  if (log.rows.empty()) throw_input(source, "", "no result rows under the column header");
  if (ranks.empty())
    throw_input(source, "",
                "no device list ('#  Rank  0 Group  0 Pid ... on HOST device 0 ...'): keep the "
                "lines nccl-tests prints before its results");
  if (*ranks.rbegin() != static_cast<int>(ranks.size()) - 1)
    throw_input(source, "",
                fmt::format("expected ranks 0 to {} in the device list, got up to {}",
                            ranks.size() - 1, *ranks.rbegin()));
  log.ranks = static_cast<int>(ranks.size());
  log.nodes = static_cast<int>(hosts.size());
  if (log.nodes == 0) log.nodes = 1;
  log.op = op.empty() ? infer_op(log, reduces) : parse_nccl_op(op, "--collective");
  return log;
}

}  // namespace topoplan
