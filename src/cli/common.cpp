#include "cli/common.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "topoplan/error.hpp"
#include "topoplan/presets.hpp"

namespace topoplan::cli {

void add_input_options(CLI::App& cmd, InputOptions& o) {
  cmd.add_option("--cluster", o.cluster, "cluster preset name or cluster JSON file")
      ->capture_default_str();
  cmd.add_option("--nodes", o.nodes, "number of servers (default: the cluster's own)");
  cmd.add_option("--model", o.model, "model preset name or Hugging Face config.json")
      ->capture_default_str();
  cmd.add_option("--seq-len", o.seq_len, "tokens per sequence")->capture_default_str();
  cmd.add_option("--global-batch", o.global_batch, "sequences per optimizer step")
      ->capture_default_str();
  cmd.add_option("--dtype", o.dtype, "bf16 or fp16")->capture_default_str();
}

void add_choice_options(CLI::App& cmd, ChoiceOptions& o, bool searched) {
  const char* dflt = searched ? " (default: searched)" : "";
  cmd.add_option("--zero", o.zero,
                 fmt::format("ZeRO stage 0-3, 1 = distributed optimizer{}",
                             searched ? dflt : " (default: 1)"));
  cmd.add_option("--recompute", o.recompute,
                 fmt::format("activation recomputation: none, selective, full{}",
                             searched ? dflt : " (default: none)"));
  auto* on = cmd.add_flag("--sequence-parallel", o.sp_on,
                          fmt::format("Megatron sequence parallelism on{}", dflt));
  auto* off = cmd.add_flag("--no-sequence-parallel", o.sp_off, "sequence parallelism off");
  on->excludes(off);
}

void add_output_options(CLI::App& cmd, OutputOptions& o) {
  cmd.add_option("--format", o.format, "table or json")->capture_default_str();
  cmd.add_option("-o,--output", o.path, "write to this file (atomically) instead of stdout");
}

Inputs load_inputs(const InputOptions& o) {
  ClusterSpec cs = load_cluster(o.cluster, "--cluster");
  if (o.nodes < 0)
    throw_input("--nodes", "", fmt::format("expected a positive integer, got {}", o.nodes));
  if (o.nodes > 0) cs.nodes = o.nodes;
  ModelSpec ms = load_model(o.model, "--model");
  JobSpec job;
  job.seq_len = o.seq_len;
  job.global_batch = o.global_batch;
  job.dtype = parse_dtype(o.dtype, "--dtype");
  validate(job);
  Inputs in{Cluster(cs, o.cluster), Model(ms, o.model), job, Calibration{}};
  spdlog::debug("cluster {}: {} GPUs in {} tiers; model {}: {} parameters", cs.name,
                in.cluster.gpu_count(), in.cluster.tier_count(), ms.name,
                in.model.counts.total_params);
  return in;
}

void write_output(const OutputOptions& o, const std::string& text) {
  if (o.format != "table" && o.format != "json")
    throw_input("--format", "", fmt::format("expected table or json, got '{}'", o.format));
  if (o.path.empty() || o.path == "-") {
    std::cout << text << std::flush;
    return;
  }
  namespace fs = std::filesystem;
  fs::path target(o.path);
  fs::path tmp = target;
  tmp += fmt::format(".tmp.{}", ::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw_input(o.path, "", "cannot write file");
    out << text;
    out.flush();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw_input(o.path, "", "cannot write file");
    }
  }
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw_input(o.path, "", "cannot replace file: " + ec.message());
  }
}

}  // namespace topoplan::cli
