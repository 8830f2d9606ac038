#include <fmt/format.h>

#include "topoplan/error.hpp"
#include "topoplan/export.hpp"

namespace topoplan {
namespace {

/// InputError when `f` cannot start the placement, naming why and what can.
void require_launchable(const ExportContext& x, ExportFormat f) {
  if (can_launch(f, x.table)) return;
  const char* name = to_string(f);
  const std::string why =
      !x.table.node_contiguous && (f == ExportFormat::torchrun || f == ExportFormat::deepspeed)
          ? "puts non-consecutive ranks on one node"
          : "permutes GPUs inside a node (its tasks take GPUs in local-rank order)";
  const std::string alt = launchers_for(x.table);
  throw InputError(fmt::format(
      "--format {}: this placement {}, which {} cannot express; {}", name, why, name,
      alt.empty() ? "no launcher format here can start it as is: start one process per rank "
                    "and give each the node and GPU ranks.json names"
                  : "use " + alt));
}

}  // namespace

std::string export_torchrun(const ExportContext& x) {
  require_launchable(x, ExportFormat::torchrun);
  const RankTable& t = x.table;
  const int nnodes = static_cast<int>(t.node_rank_host.size());
  std::string out = "#!/usr/bin/env bash\n";
  out += fmt::format(
      "# torchrun, one command per node (static rendezvous: node ranks are fixed).\n"
      "# On every host: bash torchrun.sh [HOST [SCRIPT ARGS...]] (HOST defaults to "
      "$(hostname)). {} x {} = {} ranks.\n",
      nnodes, t.gpus_per_node, x.mapping.world());
  out += "set -euo pipefail\n";
  out += "host=${1:-$(hostname)}\n";
  out += "case \"$host\" in\n";
  for (int k = 0; k < nnodes; ++k) {
    std::string env;
    if (t.gpus_permuted) {
      std::string devs;
      for (int i = 0; i < t.gpus_per_node; ++i)
        devs += fmt::format("{}{}", i ? "," : "",
                            t.ranks[static_cast<std::size_t>(k) * t.gpus_per_node + i].host_gpu);
      env = fmt::format("CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES={} ", devs);
    }
    out += fmt::format(
        "  {})\n    {}exec torchrun --nnodes={} --nproc-per-node={} --node-rank={} "
        "--rdzv-backend=static --rdzv-endpoint={}:{} {} \"${{@:2}}\" ;;\n",
        t.node_rank_host[k], env, nnodes, t.gpus_per_node, k, t.node_rank_host[0], x.options.port,
        x.options.script);
  }
  out += "  *) echo \"torchrun.sh: $host is not in this placement\" >&2; exit 2 ;;\nesac\n";
  return out;
}

std::string export_slurm_hostfile(const ExportContext& x) {
  // SLURM_HOSTFILE for srun --distribution=arbitrary: line r is the host of task r.
  require_launchable(x, ExportFormat::slurm);
  std::string out;
  for (const auto& e : x.table.ranks) out += x.table.hosts[e.host] + "\n";
  return out;
}

std::string export_deepspeed_hostfile(const ExportContext& x) {
  require_launchable(x, ExportFormat::deepspeed);
  std::string out = "# DeepSpeed hostfile: ranks go in host order, then slot order\n";
  for (const auto& host : x.table.node_rank_host)
    out += fmt::format("{} slots={}\n", host, x.table.gpus_per_node);
  return out;
}

std::string export_openmpi_rankfile(const ExportContext& x) {
  // slot= is CPU binding (not the GPU): local rank i gets cores [i*k, i*k + k - 1].
  require_launchable(x, ExportFormat::openmpi);
  const int k = std::max(1, x.options.cpus_per_gpu);
  std::string out;
  for (const auto& e : x.table.ranks) {
    const int first = e.local_rank * k;
    if (k == 1)
      out += fmt::format("rank {}={} slot={}\n", e.rank, x.table.hosts[e.host], first);
    else
      out += fmt::format("rank {}={} slot={}-{}\n", e.rank, x.table.hosts[e.host], first,
                         first + k - 1);
  }
  return out;
}

}  // namespace topoplan
