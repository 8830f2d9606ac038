#pragma once
/// Flags shared by the subcommands and the steps every subcommand takes: load inputs, write output.
#include <cstdint>
#include <functional>
#include <string>

#include <CLI/CLI.hpp>

#include "topoplan/calibration.hpp"
#include "topoplan/cost_model.hpp"
#include "topoplan/job.hpp"
#include "topoplan/model.hpp"
#include "topoplan/topology.hpp"

namespace topoplan::cli {

struct InputOptions {
  std::string cluster = "dgx-h100";
  int nodes = 0;  ///< 0: the preset's own
  std::string model = "llama3-70b";
  std::int64_t seq_len = 4096;
  std::int64_t global_batch = 512;
  std::string dtype = "bf16";
};

/// ZeRO stage, recomputation and sequence parallelism: given for evaluate, searched by plan
/// unless fixed.
struct ChoiceOptions {
  int zero = -1;           ///< -1: not given
  std::string recompute;   ///< empty: not given
  bool sp_on = false;
  bool sp_off = false;
};

struct OutputOptions {
  std::string format = "table";
  std::string path;  ///< empty: stdout
};

/// Everything loaded and validated from InputOptions.
struct Inputs {
  Cluster cluster;
  Model model;
  JobSpec job;
  Calibration cal;
};

void add_input_options(CLI::App& cmd, InputOptions& o);
void add_output_options(CLI::App& cmd, OutputOptions& o);
/// `searched`: the help says the default is searched (plan) rather than a fixed value.
void add_choice_options(CLI::App& cmd, ChoiceOptions& o, bool searched);
[[nodiscard]] Inputs load_inputs(const InputOptions& o);
/// Writes to stdout, or to a file through a temporary file and a rename.
void write_output(const OutputOptions& o, const std::string& text);

/// A subcommand: registers its flags on `cmd` and returns what runs it (exit code).
using Runner = std::function<int()>;
Runner register_plan(CLI::App& cmd);
Runner register_evaluate(CLI::App& cmd);
Runner register_presets(CLI::App& cmd);

}  // namespace topoplan::cli
