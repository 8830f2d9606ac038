#include "topoplan/presets.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "detail/json_input.hpp"
#include "topoplan/error.hpp"
#include "topoplan/fingerprint.hpp"

namespace topoplan {
namespace {

const PresetFile* find_preset(const std::string& kind, const std::string& name) {
  const std::string path = kind + "/" + name + ".json";
  for (const auto& f : embedded_presets())
    if (path == f.path) return &f;
  return nullptr;
}

/// The text of a preset or a file, and the name errors should show for it.
std::pair<std::string, std::string> resolve(const std::string& kind, const std::string& arg,
                                            const std::string& flag) {
  if (const PresetFile* p = find_preset(kind, arg))
    return {p->text, std::string("configs/") + p->path};
  std::error_code ec;
  if (!std::filesystem::exists(arg, ec)) {
    std::string names;
    for (const auto& n : preset_names(kind)) names += (names.empty() ? "" : ", ") + n;
    throw_input(flag, "",
                fmt::format("'{}' is neither a preset ({}) nor an existing file", arg, names));
  }
  return {detail::read_text_file(arg), arg};
}

}  // namespace

std::vector<std::string> preset_names(const std::string& kind) {
  std::vector<std::string> out;
  const std::string prefix = kind + "/";
  for (const auto& f : embedded_presets()) {
    std::string p = f.path;
    if (p.rfind(prefix, 0) == 0 && p.size() > prefix.size() + 5)
      out.push_back(p.substr(prefix.size(), p.size() - prefix.size() - 5));
  }
  std::sort(out.begin(), out.end());
  return out;
}

GpuSpec load_gpu(const std::string& name_or_path, const std::string& flag) {
  auto [text, source] = resolve("gpus", name_or_path, flag);
  return parse_gpu_json(text, source);
}

ClusterSpec load_cluster(const std::string& name_or_path, const std::string& flag) {
  auto [text, source] = resolve("clusters", name_or_path, flag);
  return parse_cluster_with_presets(text, source);
}

ClusterSpec parse_cluster_with_presets(const std::string& text, const std::string& source) {
  GpuResolver gpu = [](const std::string& name, const std::string& src, const std::string& path) {
    if (!find_preset("gpus", name)) {
      std::string names;
      for (const auto& n : preset_names("gpus")) names += (names.empty() ? "" : ", ") + n;
      throw_input(src, path,
                  fmt::format("expected a GPU preset ({}) or an object, got \"{}\"", names, name));
    }
    return load_gpu(name, path);
  };
  return parse_cluster_json(text, source, gpu);
}

bool is_preset(const ClusterSpec& s) {
  if (!find_preset("clusters", s.name)) return false;
  ClusterSpec p = load_cluster(s.name, "preset");
  p.nodes = s.nodes;
  if (p.tiers.size() != s.tiers.size()) return false;
  for (std::size_t k = 0; k < p.tiers.size(); ++k)
    if (p.tiers[k].link != s.tiers[k].link) return false;
  return fingerprint(Cluster(p, "preset")) == fingerprint(Cluster(s, "cluster")) &&
         p.gpu.arch == s.gpu.arch && p.gpu.peak_flops_fp8 == s.gpu.peak_flops_fp8 &&
         p.gpu.peak_flops_fp4 == s.gpu.peak_flops_fp4 && p.gpus_per_host == s.gpus_per_host;
}

bool is_preset(const ModelSpec& s) {
  if (!find_preset("models", s.name)) return false;
  return fingerprint(Model(load_model(s.name, "preset"), "preset")) ==
         fingerprint(Model(s, "model"));
}

ModelSpec load_model(const std::string& name_or_path, const std::string& flag) {
  auto [text, source] = resolve("models", name_or_path, flag);
  ModelSpec m = parse_model_json(text, source);
  if (find_preset("models", name_or_path)) m.name = name_or_path;
  return m;
}

}  // namespace topoplan
