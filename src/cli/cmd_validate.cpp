// `topoplan validate FILE...`: every problem of each input file, with its JSON path.
#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "cli/common.hpp"
#include "detail/json_input.hpp"
#include "topoplan/import/plan_json.hpp"
#include "topoplan/json_schema.hpp"
#include "topoplan/presets.hpp"

namespace topoplan::cli {
namespace {

struct ValidateArgs {
  std::vector<std::string> files;
  std::string kind;  ///< empty: told by the file
};

/// What a document is: its "schema" key, else its keys.
std::string kind_of(const nlohmann::json& doc, const std::string& file) {
  if (!doc.is_object()) throw_input(file, "(top level)", "expected an object");
  const std::string schema = doc.value("schema", "");
  for (const char* k : {"cluster", "gpu", "ranks", "plan", "search"})
    if (schema == fmt::format("topoplan.{}/v1", k)) return k == std::string("search") ? "plan" : k;
  if (doc.contains("tiers")) return "cluster";
  if (doc.contains("bf16_TFLOPs")) return "gpu";
  if (doc.contains("hidden_size") || doc.contains("n_embd") || doc.contains("text_config") ||
      doc.contains("model_type"))
    return "model";
  Calibration cal;
  for (const auto& e : calibration_entries(cal))
    if (doc.contains(e.key)) return "calibration";
  throw_input(file, "",
              "cannot tell what kind of topoplan input this is: pass --kind cluster, gpu, model, "
              "calibration, ranks or plan");
}

/// What the loader says once the schema finds nothing: the rules a schema cannot state.
void load(const std::string& kind, const std::string& text, const std::string& file) {
  if (kind == "cluster") (void)Cluster(parse_cluster_with_presets(text, file), file);
  if (kind == "gpu") (void)parse_gpu_json(text, file);
  if (kind == "model") (void)Model(parse_model_json(text, file), file);
  if (kind == "calibration") {
    Calibration cal;
    apply_calibration_json(text, file, cal);
  }
  if (kind == "ranks") (void)parse_ranks_json(text, file);
  if (kind == "plan") (void)parse_plan_json(text, file);
}

/// Prints the file's problems; true when it has no error.
bool validate_file(const std::string& file, const std::string& given_kind, std::string& out) {
  std::string kind = given_kind;
  int errors = 0, warnings = 0;
  try {
    const std::string text = detail::read_text_file(file);
    const nlohmann::json doc = detail::parse_json(text, file);
    if (kind.empty()) kind = kind_of(doc, file);
    const bool has_schema = kind != "ranks" && kind != "plan";
    if (has_schema)
      for (const auto& p : check_against_schema(doc, schema_of(kind, "--kind"))) {
        out += fmt::format("{}{}: {}: {}\n", p.warning ? "warning: " : "", file,
                           p.path.empty() ? "(top level)" : p.path, p.message);
        (p.warning ? warnings : errors) += 1;
      }
    if (errors == 0) load(kind, text, file);
  } catch (const InputError& e) {
    out += std::string(e.what()) + "\n";
    ++errors;
  }
  if (errors == 0)
    out += fmt::format(
        "{}: ok ({}{})\n", file, kind,
        warnings ? fmt::format(", {} warning{}", warnings, warnings == 1 ? "" : "s") : "");
  return errors == 0;
}

int run_validate(const ValidateArgs& a) {
  if (!a.kind.empty() && a.kind != "ranks" && a.kind != "plan") (void)schema_of(a.kind, "--kind");
  set_warning_sink([](const std::string&) {});  // the schema reports unknown keys itself
  bool ok = true;
  std::string out;
  for (const auto& f : a.files) ok = validate_file(f, a.kind, out) && ok;
  write_output("", out);
  return ok ? 0 : 2;
}

}  // namespace

Runner register_validate(CLI::App& cmd) {
  auto a = std::make_shared<ValidateArgs>();
  cmd.add_option("files", a->files,
                 "input files: cluster, GPU, model config.json, calibration, "
                 "rank table or plan")
      ->required();
  cmd.add_option("--kind", a->kind,
                 "cluster, gpu, model, calibration, ranks or plan (default: told by the file)");
  return [a] { return run_validate(*a); };
}

}  // namespace topoplan::cli
