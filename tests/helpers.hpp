#pragma once
// Shared test fixtures: presets loaded by name (no disk access) and small clusters built in code.
#include <catch2/catch.hpp>

#include "topoplan/cost_model.hpp"
#include "topoplan/presets.hpp"
#include "topoplan/topology.hpp"

namespace topoplan::test {

inline Cluster preset_cluster(const std::string& name, int nodes) {
  ClusterSpec s = load_cluster(name, "test");
  s.nodes = nodes;
  return Cluster(s, name);
}

inline Model preset_model(const std::string& name) { return Model(load_model(name, "test"), name); }

/// A training job: sequence length and global batch, the rest at JobSpec's defaults.
inline JobSpec job(std::int64_t seq_len, std::int64_t global_batch) {
  JobSpec j;
  j.seq_len = seq_len;
  j.global_batch = global_batch;
  return j;
}

/// A plan from its degrees (micro-batch 1, no interleaving) and an order string.
inline Plan plan(int tp, int pp, int dp, const char* order = "tp-cp-ep-dp-pp", int cp = 1,
                 int ep = 1) {
  Plan p;
  p[Dim::tp] = tp;
  p[Dim::cp] = cp;
  p[Dim::ep] = ep;
  p[Dim::pp] = pp;
  p[Dim::dp] = dp;
  p.order = parse_order(order, "--order");
  return p;
}

/// A dense transformer's shape (no biases, RMSNorm, rotary positions): head_dim = hidden / heads.
inline ModelSpec dense_spec(const char* name, std::int64_t hidden, std::int64_t layers,
                            std::int64_t heads, std::int64_t ffn, std::int64_t vocab, bool gated) {
  ModelSpec s;
  s.name = name;
  s.hidden = hidden;
  s.layers = layers;
  s.heads = s.kv_heads = heads;
  s.head_dim = hidden / heads;
  s.ffn = ffn;
  s.vocab = vocab;
  s.gated_mlp = gated;
  return s;
}

/// Evaluates a plan that must be valid, with the default calibration.
inline Evaluation eval(const Cluster& c, const Model& m, const JobSpec& j, const Plan& p) {
  REQUIRE(check_plan(c, m, j, p) == PlanError::none);
  return evaluate(c, m, j, p, Mapping::from_order(p), Calibration{});
}

}  // namespace topoplan::test
