#include <fmt/format.h>

#include "detail/names.hpp"
#include "topoplan/error.hpp"
#include "topoplan/export.hpp"

namespace topoplan {

namespace {
constexpr std::array<const char*, 7> kFormatNames{"json",  "megatron",  "devicemesh", "torchrun",
                                                  "slurm", "deepspeed", "openmpi"};
}  // namespace

const char* to_string(ExportFormat f) { return detail::name_of(kFormatNames, f); }

ExportFormat parse_export_format(const std::string& s, const std::string& what) {
  if (auto f = detail::from_name<ExportFormat>(kFormatNames, s)) return *f;
  throw_input(what, "", fmt::format("expected {}, got '{}'", detail::names_list(kFormatNames), s));
}

const char* export_file_name(ExportFormat f) {
  switch (f) {
    case ExportFormat::json: return "ranks.json";
    case ExportFormat::megatron: return "megatron-args.txt";
    case ExportFormat::devicemesh: return "devicemesh.py";
    case ExportFormat::torchrun: return "torchrun.sh";
    case ExportFormat::slurm: return "slurm-hostfile";
    case ExportFormat::deepspeed: return "deepspeed-hostfile";
    case ExportFormat::openmpi: return "rankfile";
  }
  return "out";
}

std::string render_export(ExportFormat f, const ExportContext& x) {
  switch (f) {
    case ExportFormat::json: return export_ranks_json(x);
    case ExportFormat::megatron: return export_megatron_args(x);
    case ExportFormat::devicemesh: return export_devicemesh(x);
    case ExportFormat::torchrun: return export_torchrun(x);
    case ExportFormat::slurm: return export_slurm_hostfile(x);
    case ExportFormat::deepspeed: return export_deepspeed_hostfile(x);
    case ExportFormat::openmpi: return export_openmpi_rankfile(x);
  }
  return "";
}

bool can_launch(ExportFormat f, const RankTable& t) {
  switch (f) {
    case ExportFormat::json:
    case ExportFormat::megatron:
    case ExportFormat::devicemesh: return true;
    case ExportFormat::torchrun: return t.node_contiguous;
    case ExportFormat::deepspeed: return t.node_contiguous && !t.gpus_permuted;
    case ExportFormat::slurm:
    case ExportFormat::openmpi: return !t.gpus_permuted;
  }
  return false;
}

std::string launchers_for(const RankTable& t) {
  std::string out;
  for (ExportFormat f : {ExportFormat::torchrun, ExportFormat::slurm, ExportFormat::openmpi,
                         ExportFormat::deepspeed})
    if (can_launch(f, t))
      out += fmt::format("{}--format {}", out.empty() ? "" : " or ", to_string(f));
  return out;
}

}  // namespace topoplan
