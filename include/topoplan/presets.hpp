#pragma once
/// Built-in presets (the JSON under configs/, compiled in) and loading by name or file path.
#include <span>
#include <string>
#include <vector>

#include "topoplan/model.hpp"
#include "topoplan/topology.hpp"

namespace topoplan {

struct PresetFile {
  const char* path;  ///< relative to configs/, e.g. "clusters/dgx-h100.json"
  const char* text;
};

/// Generated at build time from configs/.
[[nodiscard]] std::span<const PresetFile> embedded_presets();

/// Names of the presets of one kind ("clusters", "gpus", "models"), sorted.
[[nodiscard]] std::vector<std::string> preset_names(const std::string& kind);

/// A preset name, or else a path to a JSON file. `flag` names the option in errors.
[[nodiscard]] GpuSpec load_gpu(const std::string& name_or_path, const std::string& flag);
[[nodiscard]] ClusterSpec load_cluster(const std::string& name_or_path, const std::string& flag);
[[nodiscard]] ModelSpec load_model(const std::string& name_or_path, const std::string& flag);
/// Parses a cluster document whose `gpu` may name a GPU preset.
[[nodiscard]] ClusterSpec parse_cluster_with_presets(const std::string& text,
                                                     const std::string& source);
/// True when the spec is a built-in preset as it ships (same name and same figures; a cluster
/// at any node count). Results name such inputs; others carry the whole spec.
[[nodiscard]] bool is_preset(const ClusterSpec& s);
[[nodiscard]] bool is_preset(const ModelSpec& s);

}  // namespace topoplan
