#pragma once
/// Launcher formats for one scored placement. Each function returns the file's text.
#include <string>
#include <vector>

#include "topoplan/context.hpp"
#include "topoplan/job.hpp"
#include "topoplan/model.hpp"
#include "topoplan/rank_table.hpp"

namespace topoplan {

inline constexpr const char* kRanksSchema = "topoplan.ranks/v1";

enum class ExportFormat { json, megatron, devicemesh, torchrun, slurm, deepspeed, openmpi };
inline constexpr ExportFormat kAllExportFormats[] = {
    ExportFormat::json,  ExportFormat::megatron,  ExportFormat::devicemesh, ExportFormat::torchrun,
    ExportFormat::slurm, ExportFormat::deepspeed, ExportFormat::openmpi};

[[nodiscard]] const char* to_string(ExportFormat f);
/// InputError naming `what` for an unknown name.
[[nodiscard]] ExportFormat parse_export_format(const std::string& s, const std::string& what);
/// The file --out-dir writes for a format ("ranks.json", "torchrun.sh", ...).
[[nodiscard]] const char* export_file_name(ExportFormat f);

struct ExportOptions {
  std::string cluster_arg;  ///< the cluster as the user named it (preset or path), for re-loading
  std::string model_arg;    ///< the model likewise
  std::string script = "train.py";  ///< the training script torchrun starts
  int port = 29500;                 ///< rendezvous / master port
  int cpus_per_gpu = 1;             ///< cores per rank in the Open MPI rankfile
};

struct ExportContext {
  const RunContext& run;
  const Plan& plan;
  const Mapping& mapping;
  const RankTable& table;
  const ExportOptions& options;
};

[[nodiscard]] std::string render_export(ExportFormat f, const ExportContext& x);

/// Whether a launcher format can start this placement as it is (the one rule every format's
/// advice follows). The rank table and the Megatron/DeviceMesh texts can always be written;
/// torchrun needs each node to hold consecutive ranks (GPUs permuted inside a node are set
/// with CUDA_VISIBLE_DEVICES); the DeepSpeed hostfile needs that and GPUs in local-rank order;
/// a Slurm hostfile and an Open MPI rankfile place any rank on any host, but their tasks take
/// GPUs in local-rank order.
[[nodiscard]] bool can_launch(ExportFormat f, const RankTable& t);
/// "--format torchrun or --format slurm", the launchers that can start it; "" when none.
[[nodiscard]] std::string launchers_for(const RankTable& t);

/// The Megatron-LM order flag for a plan: "" (default order), "--use-tp-pp-dp-mapping", or
/// nullopt-like "?" when no Megatron flag gives this layout.
[[nodiscard]] std::string megatron_order_flag(const Plan& p, bool& expressible);

/// Megatron-LM's flags for a plan's interleaving and layer split of model `m`, as export
/// --format megatron writes them (leading space; "" for one stage of even layers):
/// --num-virtual-stages-per-pipeline-rank, --decoder-first/last-pipeline-num-layers, or
/// --pipeline-model-parallel-layout when no such flag gives the split.
[[nodiscard]] std::string megatron_pipeline_args(const Plan& p, const ModelSpec& m);

// One function per format (src/export/<format>.cpp).
[[nodiscard]] std::string export_ranks_json(const ExportContext& x);
[[nodiscard]] std::string export_megatron_args(const ExportContext& x);
[[nodiscard]] std::string export_devicemesh(const ExportContext& x);
[[nodiscard]] std::string export_torchrun(const ExportContext& x);
[[nodiscard]] std::string export_slurm_hostfile(const ExportContext& x);
[[nodiscard]] std::string export_deepspeed_hostfile(const ExportContext& x);
[[nodiscard]] std::string export_openmpi_rankfile(const ExportContext& x);

}  // namespace topoplan
