#include <fmt/format.h>

#include <filesystem>
#include <memory>

#include "cli/common.hpp"
#include "topoplan/error.hpp"
#include "topoplan/export.hpp"

namespace topoplan::cli {
namespace {

struct ExportArgs {
  InputOptions in;
  PlanOptions plan;
  OutputOptions out;
  std::string hosts_file;
  std::string out_dir;
  ExportOptions opt;
};

int run_export(const ExportArgs& a) {
  Resolved r = resolve_plan(a.in, a.plan);
  // The same rules as evaluate and check (plan_check.hpp).
  const PlanError err = check_plan(r.in.cluster, r.in.model, r.in.job, r.plan);
  if (err != PlanError::none) throw_plan_error(err, r);
  // --hosts (a file or a Slurm host list), else the cluster file's names: its hosts (Slurm's
  // order) where each server is one host, its compute_hosts where servers are several.
  const ClusterSpec& spec = r.in.cluster.spec();
  const bool split = r.in.cluster.hosts_split_servers();
  const int count = host_count(r.in.cluster);
  const std::vector<std::string>& named = split ? spec.compute_hosts : spec.hosts;
  std::vector<std::string> hosts;
  if (!a.hosts_file.empty()) {
    hosts = load_hosts(a.hosts_file, count, split ? "host" : "server");
  } else if (!named.empty()) {
    if (static_cast<int>(named.size()) < count)
      throw_input("--nodes", "",
                  fmt::format("{} {}, but the cluster file names {} hosts: pass --hosts", count,
                              split ? "hosts" : "servers", named.size()));
    hosts.assign(named.begin(), named.begin() + count);
  }
  RankTable table = build_rank_table(r.in.cluster, r.mapping, std::move(hosts));
  const RunContext ctx = r.in.run();
  ExportOptions opt = a.opt;
  opt.cluster_arg = r.in.cluster_arg;
  opt.model_arg = r.in.model_arg;
  if (opt.cpus_per_gpu < 1)
    throw_input("--cpus-per-gpu", "",
                fmt::format("expected a positive integer, got {}", opt.cpus_per_gpu));
  ExportContext x{ctx, r.plan, r.mapping, table, opt};
  if (a.out_dir.empty()) {
    write_output(a.out.path, render_export(parse_export_format(a.out.format, "--format"), x));
    return 0;
  }
  // Render everything first, so a format that cannot express the placement fails before any
  // file is written; then write each file atomically.
  std::vector<std::pair<std::string, std::string>> files;
  std::vector<std::string> skipped;
  for (ExportFormat f : kAllExportFormats) {
    try {
      files.emplace_back(export_file_name(f), render_export(f, x));
    } catch (const InputError& e) {
      skipped.push_back(fmt::format("{}: {}", export_file_name(f), e.what()));
    }
  }
  std::error_code ec;
  std::filesystem::create_directories(a.out_dir, ec);
  if (ec) throw_input(a.out_dir, "", "cannot create directory: " + ec.message());
  for (const auto& [name, text] : files)
    write_output((std::filesystem::path(a.out_dir) / name).string(), text);
  for (const auto& s : skipped) fmt::print(stderr, "topoplan: not written: {}\n", s);
  return 0;
}

}  // namespace

Runner register_export(CLI::App& cmd) {
  auto a = std::make_shared<ExportArgs>();
  add_plan_under_test_options(cmd, a->in, a->plan, nullptr);
  cmd.add_option("--hosts", a->hosts_file,
                 "a file with one hostname per server, or a Slurm host list such as "
                 "gpu[001-016] (default: the cluster file's hosts, else node000, node001, ...)");
  cmd.add_option("--out-dir", a->out_dir, "write every format into this directory");
  cmd.add_option("--script", a->opt.script, "training script for torchrun.sh")
      ->capture_default_str();
  cmd.add_option("--port", a->opt.port, "rendezvous port")->capture_default_str();
  cmd.add_option("--cpus-per-gpu", a->opt.cpus_per_gpu, "cores bound per rank in the rankfile")
      ->capture_default_str();
  add_output_options(
      cmd, a->out, {"json", "megatron", "devicemesh", "torchrun", "slurm", "deepspeed", "openmpi"});
  return [a] { return run_export(*a); };
}

}  // namespace topoplan::cli
