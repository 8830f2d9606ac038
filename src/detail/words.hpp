#pragma once
/// Whitespace-separated fields of one line of a text dump (nvidia-smi, nccl-tests logs).
#include <sstream>
#include <string>
#include <vector>

namespace topoplan::detail {

[[nodiscard]] inline std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

}  // namespace topoplan::detail
