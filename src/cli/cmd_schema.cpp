// `topoplan schema NAME`: the JSON Schema of an input format, or its fields as a table.
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/common.hpp"
#include "topoplan/json_schema.hpp"

namespace topoplan::cli {
namespace {

struct SchemaArgs {
  std::string name;
  OutputOptions out;
};

int run_schema(const SchemaArgs& a) {
  const nlohmann::json s = schema_of(a.name, "schema");
  write_output(a.out.path, a.out.format == "markdown" ? schema_markdown(s) : s.dump(2) + "\n");
  return 0;
}

}  // namespace

Runner register_schema(CLI::App& cmd) {
  auto a = std::make_shared<SchemaArgs>();
  cmd.add_option("name", a->name, "cluster, gpu, model or calibration")->required();
  add_output_options(cmd, a->out, {"json", "markdown"});
  return [a] { return run_schema(*a); };
}

}  // namespace topoplan::cli
