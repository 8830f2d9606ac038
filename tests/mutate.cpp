/// Mutation test (issue 11): seeded random edits of Hugging Face config.json files and cluster
/// JSON files, each run through what `plan` and `plan --inference` do (parse, validate, search,
/// render text and JSON). Fails on an exception that is not an InputError (the CLI's exit 3), a
/// NaN or infinity in any output, or a case over the time limit; a crash names the case.
///
///   topoplan_mutate SEED COUNT TIME_LIMIT_S FILE...   (a file with hidden_size or n_embd is a
///                                                      model, the others clusters)
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "topoplan/error.hpp"
#include "topoplan/inference.hpp"
#include "topoplan/inference_report.hpp"
#include "topoplan/presets.hpp"
#include "topoplan/report.hpp"
#include "topoplan/search.hpp"

namespace {

using nlohmann::json;

// The case being run, written out by the signal handler if it crashes.
char g_case[4096];

extern "C" void on_crash(int sig) {
  const char head[] = "topoplan_mutate: crashed on case: ";
  (void)!write(2, head, sizeof head - 1);
  (void)!write(2, g_case, strnlen(g_case, sizeof g_case));
  (void)!write(2, "\n", 1);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

/// Values a hostile or careless edit puts in a field.
std::vector<json> hostile_values() {
  return {0,
          -1,
          json(9223372036854775808ULL),  // 2^63
          1e308,
          -1e308,
          1e-300,
          "",
          "x",
          nullptr,
          json::array(),
          json::object(),
          true,
          3.5,
          2147483648LL,  // 2^31
          65536,
          1048576,
          7};
}

void collect_paths(const json& j, const json::json_pointer& at,
                   std::vector<json::json_pointer>& out) {
  if (!at.empty()) out.push_back(at);
  if (j.is_object())
    for (auto it = j.begin(); it != j.end(); ++it) collect_paths(*it, at / it.key(), out);
  else if (j.is_array())
    for (std::size_t i = 0; i < j.size(); ++i) collect_paths(j[i], at / i, out);
}

json mutate(const json& seed, std::mt19937_64& rng, std::string& what) {
  static const std::vector<json> values = hostile_values();
  json doc = seed;
  const int edits = 1 + static_cast<int>(rng() % 3);
  for (int e = 0; e < edits; ++e) {
    std::vector<json::json_pointer> paths;
    collect_paths(doc, json::json_pointer(), paths);
    if (paths.empty()) break;
    const auto& p = paths[rng() % paths.size()];
    if (rng() % 8 == 0 && !p.parent_pointer().empty() && doc[p.parent_pointer()].is_object()) {
      what += " delete ";
      what += p.to_string();
      doc[p.parent_pointer()].erase(p.back());
      continue;
    }
    const json& v = values[rng() % values.size()];
    what += ' ';
    what += p.to_string();
    what += '=';
    what += v.dump();
    doc[p] = v;
  }
  return doc;
}

bool has_non_finite(const std::string& out) {
  static const std::regex bad(R"((^|[^A-Za-z])(nan|-?inf|infinity)([^A-Za-z]|$))",
                              std::regex::icase);
  return std::regex_search(out, bad);
}

/// What `plan` and `plan --inference` do with a model and a cluster; returns the outputs.
std::string plan_outputs(const topoplan::Cluster& c, const topoplan::Model& m) {
  using namespace topoplan;
  const JobSpec job;
  const Calibration cal;
  SearchOptions opt;
  opt.top_k = 3;
  const SearchResult r = search(c, m, job, cal, opt);
  const RunContext ctx{c, m, job, cal};
  std::string out = plan_report_text(ctx, r) + plan_report_json(ctx, r);
  const InferenceJob ij;
  InferenceSearchOptions iopt;
  iopt.top_k = 3;
  const InferenceSearchResult ir = search_inference(c, m, ij, cal, iopt);
  const InferenceContext ictx{c, m, ij, cal};
  out += inference_search_text(ictx, ir, iopt.objective);
  out += inference_search_json(ictx, ir, iopt.objective);
  return out;
}

struct Seed {
  std::string path;
  json doc;
  bool model;
};

int run(std::uint64_t seed_value, int count, double limit_s, const std::vector<Seed>& seeds) {
  using namespace topoplan;
  std::mt19937_64 rng(seed_value);
  const Cluster small(load_cluster("dgx-h100", "mutate"), "dgx-h100");
  const Model base_model(load_model("llama3-8b", "mutate"), "llama3-8b");
  int failures = 0, rejected = 0;
  double slowest = 0;
  for (int i = 0; i < count; ++i) {
    const Seed& s = seeds[rng() % seeds.size()];
    std::string what;
    const std::string text = mutate(s.doc, rng, what).dump();
    std::snprintf(g_case, sizeof g_case, "#%d %s:%s", i, s.path.c_str(), what.c_str());
    const auto t0 = std::chrono::steady_clock::now();
    std::string out;
    try {
      if (s.model) {
        const Model m(parse_model_json(text, "config.json"), "config.json");
        out = plan_outputs(small, m);
      } else {
        const Cluster c(parse_cluster_with_presets(text, "cluster.json"), "cluster.json");
        out = plan_outputs(c, base_model);
      }
    } catch (const InputError&) {
      ++rejected;
    } catch (const std::exception& e) {
      std::cerr << "internal error (" << e.what() << ") on case " << g_case << "\n";
      ++failures;
    }
    const double s_taken =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    slowest = std::max(slowest, s_taken);
    if (s_taken > limit_s) {
      std::cerr << "took " << s_taken << " s (limit " << limit_s << ") on case " << g_case << "\n";
      ++failures;
    }
    if (has_non_finite(out)) {
      std::cerr << "NaN or infinity printed on case " << g_case << "\n";
      ++failures;
    }
  }
  std::cout << count << " mutations (seed " << seed_value << "): " << rejected
            << " rejected as bad input, " << count - rejected << " planned, " << failures
            << " failures; slowest " << slowest << " s\n";
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::cerr << "usage: topoplan_mutate SEED COUNT TIME_LIMIT_S FILE...\n";
    return 2;
  }
  for (int sig : {SIGFPE, SIGSEGV, SIGABRT, SIGILL, SIGBUS}) std::signal(sig, on_crash);
  topoplan::set_warning_sink([](const std::string&) {});
  std::vector<Seed> seeds;
  for (int k = 4; k < argc; ++k) {
    std::ifstream f(argv[k]);
    std::stringstream ss;
    ss << f.rdbuf();
    json doc = json::parse(ss.str());
    const bool model = doc.contains("hidden_size") || doc.contains("n_embd");
    seeds.push_back({argv[k], std::move(doc), model});
  }
  return run(std::stoull(argv[1]), std::stoi(argv[2]), std::stod(argv[3]), seeds);
}
