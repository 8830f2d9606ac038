#include "topoplan/stack.hpp"

#include <fmt/format.h>

#include <array>

#include "topoplan/error.hpp"

namespace topoplan {
namespace {

// clang-format off
constexpr std::array<SoftwareStack, 5> kStacks{{
    {"megatron-core", true, false, true, true, -1, std::nullopt,
     "Megatron-LM with megatron-core (2024-): flash attention, --overlap-grad-reduce, "
     "--overlap-p2p-communication; the distributed optimizer (ZeRO 1) or not, and sequence "
     "parallelism, searched"},
    {"megatron-2021", false, false, false, false, 0, false,
     "Megatron-LM as in Narayanan et al. SC'21: unfused softmax, gradient all-reduce after the "
     "backward pass, blocking pipeline sends, no distributed optimizer, no sequence parallelism"},
    {"nemo", true, true, true, true, 1, true,
     "NVIDIA NeMo LLM recipes on H100: megatron-core with TP communication overlap "
     "(userbuffers, tp_comm_overlap) and sequence parallelism on"},
    {"torchtitan", true, false, true, true, 3, true,
     "torchtitan: FSDP2 (parameters, gradients and optimizer sharded: ZeRO-3) with TP "
     "(sequence-parallel norms) and PP; SDPA flash attention"},
    {"deepspeed", true, false, true, false, 1, false,
     "Megatron-DeepSpeed: ZeRO-1 with overlap_comm, no Megatron sequence parallelism, "
     "blocking pipeline sends"},
}};
// clang-format on

}  // namespace

std::span<const SoftwareStack> software_stacks() { return kStacks; }

const SoftwareStack& find_stack(const std::string& name, const std::string& what) {
  std::string names;
  for (const auto& s : kStacks) {
    if (name == s.name) return s;
    names += (names.empty() ? "" : ", ") + std::string(s.name);
  }
  throw_input(what, "", fmt::format("expected one of {}, got '{}'", names, name));
}

}  // namespace topoplan
