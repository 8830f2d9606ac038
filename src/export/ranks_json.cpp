#include <nlohmann/json.hpp>

#include "detail/json_output.hpp"
#include "topoplan/export.hpp"
#include "topoplan/fingerprint.hpp"

namespace topoplan {

std::string export_ranks_json(const ExportContext& x) {
  using nlohmann::ordered_json;
  const auto& run = x.run;
  ordered_json j;
  j["schema"] = kRanksSchema;
  j["world_size"] = x.mapping.world();
  ordered_json plan;
  detail::put_plan_fields(plan, x.plan);
  j["plan"] = plan;
  j["inputs"] = {{"cluster", x.options.cluster_arg},
                 {"nodes", run.cluster.spec().nodes},
                 {"model", x.options.model_arg}};
  const auto job = detail::job_json(run.job);
  for (const auto& [key, value] : job.items()) j["inputs"][key] = value;
  detail::put_specs(j["inputs"], run.cluster, run.model);
  j["fingerprints"] = {{"cluster", fingerprint(run.cluster)},
                       {"model", fingerprint(run.model)},
                       {"job", fingerprint(run.job)}};
  ordered_json ranks = ordered_json::array();
  // An explicit placement: the order to start processes in (devicemesh.py builds on it).
  const std::vector<int> launch =
      x.mapping.identity() ? std::vector<int>{} : launch_ranks(x.mapping);
  for (const auto& e : x.table.ranks) {
    ordered_json r;
    r["rank"] = e.rank;
    if (!launch.empty()) r["launch_rank"] = launch[static_cast<std::size_t>(e.rank)];
    r["node"] = e.node;
    r["host"] = x.table.hosts[e.host];
    r["local_rank"] = e.local_rank;
    r["gpu"] = e.gpu;
    // Hosts that split a server (an NVL72 rack's trays): the CUDA device on the host.
    if (x.run.cluster.hosts_split_servers()) r["host_gpu"] = e.host_gpu;
    for (Dim d : kDefaultOrder) r[to_string(d)] = e.coord[d];
    ranks.push_back(r);
  }
  j["ranks"] = ranks;
  ordered_json groups;
  for (Dim d : kDefaultOrder) groups[to_string(d)] = x.mapping.groups(d);
  groups["expert_dp"] = x.mapping.expert_dp_groups();
  j["groups"] = groups;
  return j.dump(2) + "\n";
}

}  // namespace topoplan
