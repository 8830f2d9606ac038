#include "topoplan/job.hpp"

#include <fmt/format.h>

#include "topoplan/error.hpp"

namespace topoplan {

double dtype_bytes(Dtype d) {
  switch (d) {
    case Dtype::bf16:
    case Dtype::fp16: return 2.0;
  }
  return 2.0;
}

const char* to_string(Dtype d) { return d == Dtype::bf16 ? "bf16" : "fp16"; }

const char* to_string(Recompute r) {
  switch (r) {
    case Recompute::none: return "none";
    case Recompute::selective: return "selective";
    case Recompute::full: return "full";
  }
  return "none";
}

Dtype parse_dtype(const std::string& s, const std::string& what) {
  if (s == "bf16") return Dtype::bf16;
  if (s == "fp16") return Dtype::fp16;
  throw_input(what, "", fmt::format("expected bf16 or fp16, got '{}'", s));
}

Recompute parse_recompute(const std::string& s, const std::string& what) {
  if (s == "none") return Recompute::none;
  if (s == "selective") return Recompute::selective;
  if (s == "full") return Recompute::full;
  throw_input(what, "", fmt::format("expected none, selective or full, got '{}'", s));
}

void validate(const JobSpec& j) {
  if (j.seq_len < 1) throw_input("--seq-len", "", fmt::format("expected a positive integer, got {}", j.seq_len));
  if (j.global_batch < 1)
    throw_input("--global-batch", "", fmt::format("expected a positive integer, got {}", j.global_batch));
  if (j.zero_stage < 0 || j.zero_stage > 3)
    throw_input("--zero", "", fmt::format("expected 0, 1, 2 or 3, got {}", j.zero_stage));
}

}  // namespace topoplan
