// `topoplan import nvidia-smi FILE`: a cluster file from what a user can paste from a server.
#include <fmt/format.h>

#include <memory>

#include "cli/common.hpp"
#include "detail/json_input.hpp"
#include "topoplan/import/nvidia_smi.hpp"
#include "topoplan/presets.hpp"
#include "topoplan/units.hpp"

namespace topoplan::cli {
namespace {

struct ImportArgs {
  CLI::App* smi = nullptr;
  std::string file;
  std::string gpu = "h100-sxm";
  int nodes = 1;
  double nic_gbps = 400;
  std::string network;  ///< a cluster preset whose tiers above the server are used
  std::string name = "imported";
  OutputOptions out;
};

int run_import(const ImportArgs& a) {
  if (a.nodes < 1)
    throw_input("--nodes", "", fmt::format("expected a positive integer, got {}", a.nodes));
  if (!(a.nic_gbps > 0))
    throw_input("--nic-gbps", "", fmt::format("expected a positive number, got {}", a.nic_gbps));
  const SmiTopology t = parse_nvidia_smi_topo(detail::read_text_file(a.file), a.file);
  SmiClusterOptions opt;
  opt.name = a.name;
  opt.nodes = a.nodes;
  opt.nic_bandwidth = units::from_Gbps(a.nic_gbps);
  if (!a.network.empty()) {
    const ClusterSpec preset = load_cluster(a.network, "--network");
    opt.network.assign(preset.tiers.begin() + 1, preset.tiers.end());
  }
  ClusterSpec s = cluster_from_smi(t, load_gpu(a.gpu, "--gpu"), opt);
  const Cluster checked(s, a.file);  // the same validation plan applies
  (void)checked;
  write_output(a.out.path, cluster_json(s) + "\n");
  return 0;
}

}  // namespace

Runner register_import(CLI::App& cmd) {
  auto a = std::make_shared<ImportArgs>();
  cmd.require_subcommand(1);
  a->smi = cmd.add_subcommand("nvidia-smi", "a cluster file from `nvidia-smi topo -m` output");
  a->smi->add_option("file", a->file, "the saved output of nvidia-smi topo -m")->required();
  a->smi->add_option("--gpu", a->gpu, "the GPU preset of the server")->capture_default_str();
  a->smi->add_option("--nodes", a->nodes, "servers in the cluster")->capture_default_str();
  a->smi->add_option("--nic-gbps", a->nic_gbps, "line rate of each NIC, Gb/s")
      ->capture_default_str();
  a->smi->add_option("--network", a->network,
                     "a cluster preset whose tiers above the server to use (default: one "
                     "InfiniBand tier at the NIC share)");
  a->smi->add_option("--name", a->name, "the cluster's name")->capture_default_str();
  add_output_options(*a->smi, a->out, {"json"});
  return [a] { return run_import(*a); };
}

}  // namespace topoplan::cli
