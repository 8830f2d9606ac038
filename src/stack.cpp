#include "topoplan/stack.hpp"

#include <fmt/format.h>

#include <array>

#include "topoplan/error.hpp"

namespace topoplan {
namespace {

// clang-format off
// What each stack is and where its settings come from: the README's table (--stack).
constexpr std::array<SoftwareStack, 5> kStacks{{
    // name            flash  fa2    tp ovl  fp8 AG  grad ovl  gather ovl  pp ovl  ZeRO  sequence parallel  flexible layout  offload  modules
    {"megatron-core",  true,  false, false,  false,  true,     true,       true,   -1,   std::nullopt,      true,            true,    true},
    {"megatron-2021",  false, false, false,  false,  false,    false,      false,  0,    false,             false,           false,   false},
    {"nemo",           true,  false, true,   false,  true,     true,       true,   1,    true,              false,           true,    true},
    {"torchtitan",     true,  true,  false,  true,   true,     false,      true,   3,    true,              false,           false,   false},
    {"deepspeed",      true,  false, false,  false,  true,     false,      false,  1,    false,             false,           false,   false},
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
