/// topoplan: the command line. Parses flags, runs one subcommand, maps errors to exit codes:
/// 0 success, 1 the command's own "no" (no plan fits), 2 bad input, 3 internal error.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <iostream>

#include "cli/common.hpp"
#include "topoplan/error.hpp"
#include "topoplan/search.hpp"

namespace {

struct Subcommand {
  const char* name;
  const char* help;
  topoplan::cli::Runner (*add)(CLI::App&);
};

constexpr Subcommand kSubcommands[] = {
    {"plan", "search parallel configurations and mappings; print the best",
     topoplan::cli::register_plan},
    {"evaluate", "score one plan and explain where its time goes",
     topoplan::cli::register_evaluate},
    {"check", "fail (exit 1) a configuration whose mapping is pathological",
     topoplan::cli::register_check},
    {"export",
     "write the rank placement for launchers: JSON, Megatron-LM, DeviceMesh, torchrun, Slurm, "
     "DeepSpeed, Open MPI",
     topoplan::cli::register_export},
    {"presets", "list the built-in clusters, GPUs and models", topoplan::cli::register_presets},
    {"import",
     "build inputs from what machines report: import nvidia-smi, nccl-xml, slurm-topology, "
     "nccl-tests",
     topoplan::cli::register_import},
    {"model",
     "what topoplan derives from a model: parameters (total, active), FLOPs and KV cache per token",
     topoplan::cli::register_model},
    {"validate", "check input files (cluster, GPU, model, calibration, ranks, plan): every problem",
     topoplan::cli::register_validate},
    {"schema", "print the JSON Schema of an input format (--format markdown: its fields)",
     topoplan::cli::register_schema},
    {"calibrate",
     "compare predictions with published runs (the accuracy table); --constants lists the "
     "calibration",
     topoplan::cli::register_calibrate},
};

/// The first Ctrl-C (or SIGTERM) asks the running search to stop: it ends within milliseconds,
/// nothing is written, exit 130. A second one ends the process at once.
extern "C" void on_stop_signal(int sig) {
  if (topoplan::cli::stop_requested().exchange(true)) {
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"topoplan: plan how a large language model is split across a GPU cluster"};
  app.set_version_flag("--version", "topoplan 0.1.0");
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "log what is loaded and searched to stderr");
  std::vector<std::pair<CLI::App*, topoplan::cli::Runner>> runners;
  for (const auto& s : kSubcommands) {
    CLI::App* cmd = app.add_subcommand(s.name, s.help);
    runners.emplace_back(cmd, s.add(*cmd));
    topoplan::cli::require_positive_counts(*cmd);
    for (CLI::App* nested : cmd->get_subcommands({}))
      topoplan::cli::require_positive_counts(*nested);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "topoplan: " << topoplan::cli::describe_parse_error(app, e) << "\n";
    return 2;
  }
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  topoplan::set_warning_sink(
      [](const std::string& m) { std::cerr << "topoplan: warning: " << m << "\n"; });
  auto log = spdlog::stderr_color_st("topoplan");
  spdlog::set_default_logger(log);
  spdlog::set_level(verbose ? spdlog::level::debug : spdlog::level::warn);
  for (auto& [cmd, run] : runners) {
    if (!cmd->parsed()) continue;
    try {
      return run();
    } catch (const topoplan::InputError& e) {
      std::cerr << "topoplan: " << e.what() << "\n";
      return 2;
    } catch (const topoplan::Interrupted&) {
      std::cerr << "topoplan: interrupted; nothing written\n";
      return 130;
    } catch (const std::exception& e) {
      std::cerr << "topoplan: internal error: " << e.what() << "\n";
      return 3;
    }
  }
  std::cout << app.help();
  return 0;
}
