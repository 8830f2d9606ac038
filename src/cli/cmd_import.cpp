// `topoplan import nvidia-smi FILE` and `import nccl-xml FILE`: a cluster file from what a server
// reports; `import slurm-topology FILE`: the tiers above the servers and the host order from
// Slurm; `import nccl-tests FILE...`: link constants fitted to the user's own nccl-tests logs.
#include <fmt/format.h>

#include <memory>

#include "cli/common.hpp"
#include "detail/json_input.hpp"
#include "topoplan/import/nccl_tests.hpp"
#include "topoplan/import/nccl_xml.hpp"
#include "topoplan/import/nvidia_smi.hpp"
#include "topoplan/import/slurm.hpp"
#include "topoplan/nccl_fit.hpp"
#include "topoplan/presets.hpp"
#include "topoplan/units.hpp"

namespace topoplan::cli {
namespace {

struct ImportArgs {
  CLI::App* cmd = nullptr;
  bool xml = false;  ///< an NCCL topology dump, not nvidia-smi topo -m
  std::string file;
  std::string gpu = "h100-sxm";
  int nodes = 1;
  double nic_gbps = 400;
  std::string network;  ///< a cluster preset whose tiers above the server are used
  std::string name = "imported";
  OutputOptions out;
};

struct NcclArgs {
  CLI::App* cmd = nullptr;
  std::vector<std::string> files;
  std::string cluster = "dgx-h100";
  std::string calibration;  ///< constants to start from
  std::string collective;   ///< empty: from each file
  OutputOptions out;
};

std::string nccl_report(const std::string& cluster, const std::vector<NcclFit>& fits) {
  std::string text = fmt::format("topoplan import nccl-tests: {} log{} on {}\n", fits.size(),
                                 fits.size() == 1 ? "" : "s", cluster);
  for (const auto& f : fits) {
    std::string fitted;
    for (const auto& [key, value] : f.constants)
      fitted += fmt::format("{}{} {:.4g}", fitted.empty() ? "" : ", ", key, value);
    text += fmt::format(
        "\n{}: {}, {} ranks on {} host{}, spanning tier {} ({}); busbw {:.1f} GB/s on the "
        "largest messages, {:.1f} us on the smallest\nfitted: {}\n{:>14} {:>12} {:>12} "
        "{:>8}\n",
        f.source, to_string(f.op), f.ranks, f.nodes, f.nodes == 1 ? "" : "s", f.tier,
        to_string(f.link), f.busbw / 1e9, f.small_time * 1e6, fitted, "size (B)", "measured us",
        "predicted us", "error");
    for (const auto& r : f.rows)
      text += fmt::format("{:>14.0f} {:>12.2f} {:>12.2f} {:>+7.1f}%\n", r.bytes, r.measured_s * 1e6,
                          r.predicted_s * 1e6, 100 * (r.predicted_s - r.measured_s) / r.measured_s);
  }
  text +=
      "\nwrite the constants with --format json -o FILE and use them with plan/evaluate "
      "--calibration FILE\n";
  return text;
}

struct SlurmArgs {
  CLI::App* cmd = nullptr;
  std::string file;
  std::string cluster = "dgx-h100";
  std::string name;
  OutputOptions out;
};

int run_slurm(const SlurmArgs& a) {
  const ClusterSpec base = load_cluster(a.cluster, "--cluster");
  ClusterSpec s = cluster_from_slurm(parse_slurm_topology(detail::read_text_file(a.file), a.file),
                                     base, a.file);
  if (!a.name.empty()) s.name = a.name;
  const Cluster checked(s, a.file);  // the same validation plan applies
  (void)checked;
  write_output(a.out.path, cluster_json(s) + "\n");
  return 0;
}

int run_nccl_tests(const NcclArgs& a) {
  Calibration cal;
  if (!a.calibration.empty()) apply_calibration_file(a.calibration, cal);
  const ClusterSpec spec = load_cluster(a.cluster, "--cluster");
  std::vector<NcclTestLog> logs;
  for (const auto& f : a.files)
    logs.push_back(parse_nccl_tests(detail::read_text_file(f), f, a.collective));
  const std::vector<NcclFit> fits = fit_nccl_tests(spec, cal, std::move(logs));
  write_output(a.out.path, a.out.format == "json" ? nccl_fit_calibration_json(fits)
                                                  : nccl_report(spec.name, fits));
  return 0;
}

/// The server's matrix from the file, and the GPU and NIC speed the flags or the dump give.
SmiTopology read_server(const ImportArgs& a, std::string& gpu, double& nic_gbps) {
  const std::string text = detail::read_text_file(a.file);
  if (!a.xml) return parse_nvidia_smi_topo(text, a.file);
  const NcclXmlTopology x = parse_nccl_topo_xml(text, a.file);
  const bool gpu_given = a.cmd->get_option("--gpu")->count() > 0;
  if (!gpu_given) gpu = gpu_preset_for_sm(x.sm);
  if (gpu.empty())
    throw_input("--gpu", "",
                fmt::format("the dump's GPUs (sm {}) match no preset: name one (a preset or a GPU "
                            "file)",
                            x.sm));
  if (a.cmd->get_option("--nic-gbps")->count() == 0 && x.nic_speed_Mbps > 0)
    nic_gbps = x.nic_speed_Mbps / 1000;
  return x.matrix;
}

int run_import(const ImportArgs& a) {
  if (!(a.nic_gbps > 0))
    throw_input("--nic-gbps", "", fmt::format("expected a positive number, got {}", a.nic_gbps));
  std::string gpu = a.gpu;
  double nic_gbps = a.nic_gbps;
  const SmiTopology t = read_server(a, gpu, nic_gbps);
  SmiClusterOptions opt;
  opt.name = a.name;
  opt.nodes = a.nodes;
  opt.nic_bandwidth = units::from_Gbps(nic_gbps);
  if (!a.network.empty()) {
    const ClusterSpec preset = load_cluster(a.network, "--network");
    opt.network.assign(preset.tiers.begin() + 1, preset.tiers.end());
  }
  ClusterSpec s = cluster_from_smi(t, load_gpu(gpu, "--gpu"), opt);
  if (a.xml) s.source = "imported from an NCCL topology dump (NCCL_TOPO_DUMP_FILE)";
  const Cluster checked(s, a.file);  // the same validation plan applies
  (void)checked;
  write_output(a.out.path, cluster_json(s) + "\n");
  return 0;
}

}  // namespace

Runner register_import(CLI::App& cmd) {
  auto server_import = [&](const char* name, const char* help, const char* file_help, bool xml) {
    auto a = std::make_shared<ImportArgs>();
    a->xml = xml;
    a->cmd = cmd.add_subcommand(name, help);
    a->cmd->add_option("file", a->file, file_help)->required();
    a->cmd
        ->add_option("--gpu", a->gpu,
                     xml ? "the GPU preset or file (default: from the dump's sm)"
                         : "the GPU preset of the server")
        ->capture_default_str();
    a->cmd->add_option("--nodes", a->nodes, "servers in the cluster")->capture_default_str();
    a->cmd
        ->add_option("--nic-gbps", a->nic_gbps,
                     xml ? "line rate of each NIC, Gb/s (default: the dump's net speed)"
                         : "line rate of each NIC, Gb/s")
        ->capture_default_str();
    a->cmd->add_option("--network", a->network,
                       "a cluster preset whose tiers above the server to use (default: one "
                       "InfiniBand tier at the NIC share)");
    a->cmd->add_option("--name", a->name, "the cluster's name")->capture_default_str();
    add_output_options(*a->cmd, a->out, {"json"});
    return a;
  };
  auto smi = server_import("nvidia-smi", "a cluster file from `nvidia-smi topo -m` output",
                           "the saved output of nvidia-smi topo -m", false);
  auto xml = server_import("nccl-xml", "a cluster file from an NCCL topology dump",
                           "the file NCCL_TOPO_DUMP_FILE wrote", true);
  auto n = std::make_shared<NcclArgs>();
  n->cmd = cmd.add_subcommand("nccl-tests",
                              "link constants fitted to nccl-tests logs (all_reduce_perf, ...)");
  n->cmd->add_option("files", n->files, "nccl-tests output files, inside a server and across")
      ->required();
  n->cmd->add_option("--cluster", n->cluster, "the cluster they were measured on (preset or file)")
      ->capture_default_str();
  n->cmd->add_option("--calibration", n->calibration, "constants to start from (JSON)");
  n->cmd->add_option("--collective", n->collective,
                     "all_reduce, all_gather, reduce_scatter, alltoall or sendrecv (default: "
                     "from each file's name, else its busbw/algbw)");
  add_output_options(*n->cmd, n->out, {"table", "json"});
  auto slurm = std::make_shared<SlurmArgs>();
  slurm->cmd = cmd.add_subcommand(
      "slurm-topology",
      "the tiers above the servers, and the host order, from Slurm's topology.conf");
  slurm->cmd
      ->add_option("file", slurm->file,
                   "topology.conf: SwitchName=... Nodes=/Switches=... (tree), or BlockName=... "
                   "Nodes=... (block: one NVLink domain each, with --cluster gb200-nvl72 or "
                   "gb300-nvl72)")
      ->required();
  slurm->cmd
      ->add_option("--cluster", slurm->cluster,
                   "preset or file giving the servers (GPU, NVLink tier, NICs) and the links of "
                   "each switch level")
      ->capture_default_str();
  slurm->cmd->add_option("--name", slurm->name, "the cluster's name (default: --cluster's)");
  add_output_options(*slurm->cmd, slurm->out, {"json"});
  return [smi, xml, n, slurm] {
    if (slurm->cmd->parsed()) return run_slurm(*slurm);
    if (n->cmd->parsed()) return run_nccl_tests(*n);
    return run_import(xml->cmd->parsed() ? *xml : *smi);
  };
}

}  // namespace topoplan::cli
