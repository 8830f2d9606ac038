#pragma once
/// Reads nccl-tests output (all_reduce_perf, all_gather_perf, reduce_scatter_perf,
/// alltoall_perf, sendrecv_perf): the device list ("#  Rank  3 Group  0 Pid ... on HOST device
/// 3 ..."), the column header, and one row per message size (size, count, type, [redop],
/// [root], then time, algbw, busbw and #wrong or error, out of place and in place).
#include <string>
#include <vector>

namespace topoplan {

enum class NcclOp : unsigned char { all_reduce, all_gather, reduce_scatter, all_to_all, send_recv };
[[nodiscard]] const char* to_string(NcclOp op);
/// "all_reduce", "allreduce", "all_reduce_perf", ... ; InputError naming `what` otherwise.
[[nodiscard]] NcclOp parse_nccl_op(const std::string& s, const std::string& what);

struct NcclTestRow {
  double bytes = 0;   ///< the size column
  double time_s = 0;  ///< out-of-place time
  double algbw = 0;   ///< bytes/s
  double busbw = 0;   ///< bytes/s
  int line = 0;
};

struct NcclTestLog {
  std::string source;
  int ranks = 0;  ///< devices listed
  int nodes = 0;  ///< distinct hosts among them
  NcclOp op = NcclOp::all_reduce;
  std::vector<NcclTestRow> rows;  ///< in file order
};

/// Parses one log. The collective is `op` when given, else named by the file (all_reduce_perf,
/// ...), else told by busbw / algbw on the largest row (2(n-1)/n: all-reduce; (n-1)/n:
/// all-gather, or reduce-scatter when the rows carry a reduction; 1: send/recv). InputError
/// names `source`, the line and what was expected.
[[nodiscard]] NcclTestLog parse_nccl_tests(const std::string& text, const std::string& source,
                                           const std::string& op = "");

}  // namespace topoplan
