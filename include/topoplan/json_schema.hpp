#pragma once
/// topoplan's input formats as JSON Schemas (configs/schema/), and a checker that reports every
/// problem of a document at once, each with its JSON path, in the words the loaders use.
/// The checker covers the part of JSON Schema (2020-12) the schemas use: type, const, enum,
/// properties, required, additionalProperties (false: a warning, as the loaders warn),
/// prefixItems, items, minItems, maxItems, minimum, maximum, minLength, oneOf, anyOf (with a
/// description saying what is expected) and local $ref.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace topoplan {

struct SchemaProblem {
  std::string path;  ///< "tiers[1].bandwidth_GBps"; "" for the top level
  std::string message;
  bool warning = false;  ///< unknown keys: reported, not failed
};

/// Checks `doc` against `schema`; every problem, in document order.
[[nodiscard]] std::vector<SchemaProblem> check_against_schema(const nlohmann::json& doc,
                                                              const nlohmann::json& schema);

/// The schemas topoplan validates: "cluster", "gpu", "model" (a Hugging Face config.json as
/// topoplan reads it) and "calibration" (generated from the constants table).
[[nodiscard]] const std::vector<std::string>& schema_names();
/// InputError naming `what` for an unknown name.
[[nodiscard]] nlohmann::json schema_of(const std::string& name, const std::string& what);

/// The fields of a schema as a Markdown table (field, type, allowed values, required, meaning).
[[nodiscard]] std::string schema_markdown(const nlohmann::json& schema);

}  // namespace topoplan
