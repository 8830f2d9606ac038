// Checks documents against topoplan's JSON Schemas, reporting every problem with its path.
#include "topoplan/json_schema.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "detail/json_input.hpp"
#include "topoplan/calibration.hpp"
#include "topoplan/error.hpp"
#include "topoplan/presets.hpp"

namespace topoplan {
namespace {

using nlohmann::json;

std::string shown(const json& v) {
  std::string s = v.dump();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

std::string join_path(const std::string& base, const std::string& key) {
  return base.empty() ? key : base + "." + key;
}

bool is_integer(const json& v) {
  return v.is_number_integer() || (v.is_number_float() && std::isfinite(v.get<double>()) &&
                                   v.get<double>() == std::floor(v.get<double>()));
}

bool has_type(const json& v, const std::string& t) {
  if (t == "integer") return is_integer(v);
  if (t == "number") return v.is_number();
  if (t == "string") return v.is_string();
  if (t == "boolean") return v.is_boolean();
  if (t == "object") return v.is_object();
  if (t == "array") return v.is_array();
  return t == "null" && v.is_null();
}

std::string type_words(const std::string& t) {
  if (t == "integer") return "an integer";
  if (t == "number") return "a number";
  if (t == "string") return "a string";
  if (t == "boolean") return "true or false";
  if (t == "object") return "an object";
  if (t == "array") return "an array";
  return "null";
}

/// A bound as people write it: whole numbers in full (1048576), others shortest (0.001, 1e+07).
std::string bound(const json& v) {
  const double d = v.get<double>();
  if (d == std::floor(d) && std::abs(d) < 1e7) return fmt::format("{:.0f}", d);
  return fmt::format("{:g}", d);
}

/// "an integer from 1 to 64", "a number at least 0.001", ...
std::string range_words(const json& s, const std::string& kind) {
  const bool lo = s.contains("minimum"), hi = s.contains("maximum");
  if (lo && hi)
    return fmt::format("{} from {} to {}", kind, bound(s["minimum"]), bound(s["maximum"]));
  if (lo) return fmt::format("{} at least {}", kind, bound(s["minimum"]));
  if (hi) return fmt::format("{} at most {}", kind, bound(s["maximum"]));
  return kind;
}

struct Checker {
  const json& root;
  std::vector<SchemaProblem> out;

  const json& resolve(const json& s) {
    if (!s.is_object() || !s.contains("$ref")) return s;
    const std::string ref = s["$ref"].get<std::string>();
    static const std::string local = "#/$defs/";
    if (ref.starts_with(local)) return root["$defs"][ref.substr(local.size())];
    static std::map<std::string, json> loaded;  // external schemas, loaded once per run
    auto it = loaded.find(ref);
    if (it == loaded.end())
      it = loaded.emplace(ref, schema_of(ref.substr(0, ref.find('.')), ref)).first;
    return it->second;
  }

  void fail(const std::string& path, const std::string& what) { out.push_back({path, what}); }

  bool matches(const json& v, const json& s) {
    Checker sub{root, {}};
    sub.check(v, s, "");
    for (const auto& p : sub.out)
      if (!p.warning) return false;
    return true;
  }

  void check_alternatives(const json& v, const json& s, const std::string& path) {
    for (const char* key : {"oneOf", "anyOf"}) {
      if (!s.contains(key)) continue;
      bool any = false;
      for (const auto& branch : s[key]) any = any || matches(v, branch);
      if (any) continue;
      // The branch of the value's own type says what is wrong; else the description.
      for (const auto& branch : s[key]) {
        const json& b = resolve(branch);
        if (b.contains("type") && b["type"].is_string() && has_type(v, b["type"])) {
          check(v, b, path);
          return;
        }
      }
      fail(path, fmt::format("expected {}, got {}", s.value("description", "another value"),
                             key == std::string("anyOf") ? "none of them" : shown(v)));
    }
  }

  bool check_type(const json& v, const json& s, const std::string& path) {
    if (!s.contains("type")) return true;
    std::vector<std::string> types;
    if (s["type"].is_string())
      types.push_back(s["type"]);
    else
      for (const auto& t : s["type"]) types.push_back(t);
    for (const auto& t : types)
      if (has_type(v, t)) return true;
    std::string words;
    for (const auto& t : types) words += (words.empty() ? "" : " or ") + type_words(t);
    if (s.contains("minimum") || s.contains("maximum"))
      words = range_words(s, type_words(types.front()));
    fail(path, fmt::format("expected {}, got {}", words, shown(v)));
    return false;
  }

  void check_object(const json& v, const json& s, const std::string& path) {
    const json& props = s.contains("properties") ? s["properties"] : json::object();
    for (const auto& key : s.value("required", json::array()))
      if (!v.contains(key.get<std::string>()))
        fail(join_path(path, key), "required field is missing");
    std::vector<std::string> known;
    for (const auto& [k, unused] : props.items()) known.push_back(k);
    for (const auto& [key, value] : v.items()) {
      if (props.contains(key)) {
        check(value, props[key], join_path(path, key));
      } else if (s.value("additionalProperties", true) == false && key != "schema" &&
                 key != "source" && key != "note") {
        std::vector<std::string_view> names(known.begin(), known.end());
        out.push_back({join_path(path, key), detail::unknown_key_message(key, names), true});
      }
    }
  }

  void check_array(const json& v, const json& s, const std::string& path) {
    if (s.contains("minItems") && v.size() < s["minItems"].get<std::size_t>())
      fail(path, fmt::format("expected at least {} item{}, got {}", s["minItems"].get<int>(),
                             s["minItems"].get<int>() == 1 ? "" : "s", v.size()));
    if (s.contains("maxItems") && v.size() > s["maxItems"].get<std::size_t>())
      fail(path,
           fmt::format("expected at most {} items, got {}", s["maxItems"].get<int>(), v.size()));
    if (s.contains("items"))
      for (std::size_t i = 0; i < v.size(); ++i)
        check(v[i], s["items"], fmt::format("{}[{}]", path, i));
  }

  void check(const json& v, const json& s_in, const std::string& path) {
    const json& s = resolve(s_in);
    if (s.contains("const") && v != s["const"])
      return fail(path, fmt::format("expected {}, got {}", s["const"].dump(), shown(v)));
    if (s.contains("enum")) {
      for (const auto& e : s["enum"])
        if (v == e) return;
      std::string names;
      for (const auto& e : s["enum"])
        names += (names.empty() ? "" : ", ") + (e.is_string() ? e.get<std::string>() : e.dump());
      return fail(path, fmt::format("expected one of {}, got {}", names, shown(v)));
    }
    check_alternatives(v, s, path);
    if (!check_type(v, s, path)) return;
    if (v.is_number() && ((s.contains("minimum") && v.get<double>() < s["minimum"]) ||
                          (s.contains("maximum") && v.get<double>() > s["maximum"])))
      fail(path, fmt::format("expected {}, got {}",
                             range_words(s, type_words(s.value("type", json("number")).is_string()
                                                           ? s.value("type", "number")
                                                           : "number")),
                             shown(v)));
    if (v.is_string() && s.value("minLength", 0) > 0 && v.get<std::string>().empty())
      fail(path, "expected a non-empty string, got \"\"");
    if (v.is_object()) check_object(v, s, path);
    if (v.is_array()) check_array(v, s, path);
  }
};

/// The calibration file's schema, from the constants table (keys, units, ranges, sources).
json calibration_schema() {
  Calibration cal;
  json props = json::object();
  props["schema"] = {{"type", "string"}, {"description", "ignored"}};
  for (const auto& e : calibration_entries(cal)) {
    const auto [lo, hi] = calibration_range(e);
    props[e.key] = {{"type", "number"},
                    {"minimum", lo},
                    {"maximum", hi},
                    {"default", *e.value * e.scale},
                    {"description", e.unit + "; " + e.source}};
  }
  props["source"] = {{"type", "string"}, {"description", "where the figures come from"}};
  props["note"] = {{"type", "string"}, {"description", "free text"}};
  return {{"$schema", "https://json-schema.org/draft/2020-12/schema"},
          {"$id", "calibration.schema.json"},
          {"title", "topoplan calibration"},
          {"description",
           "Overrides of the cost model's constants (--calibration FILE), in the units shown; "
           "generated from the constants table (topoplan schema calibration)."},
          {"type", "object"},
          {"additionalProperties", false},
          {"properties", props}};
}

}  // namespace

std::vector<SchemaProblem> check_against_schema(const json& doc, const json& schema) {
  Checker c{schema, {}};
  c.check(doc, schema, "");
  return c.out;
}

const std::vector<std::string>& schema_names() {
  static const std::vector<std::string> names{"cluster", "gpu", "model", "calibration"};
  return names;
}

json schema_of(const std::string& name, const std::string& what) {
  if (name == "calibration") return calibration_schema();
  for (const auto& f : embedded_presets())
    if (f.path == "schema/" + name + ".schema.json") return json::parse(f.text);
  throw_input(what, "", fmt::format("expected cluster, gpu, model or calibration, got '{}'", name));
}

std::string schema_markdown(const json& schema) {
  std::string rows;
  std::function<void(const json&, const std::string&, bool)> walk =
      [&](const json& s_in, const std::string& path, bool required) {
        const json& s = s_in.contains("$ref") && s_in["$ref"].get<std::string>().starts_with("#/")
                            ? schema["$defs"][s_in["$ref"].get<std::string>().substr(8)]
                            : s_in;
        std::string type = s.contains("type")
                               ? (s["type"].is_string() ? s["type"].get<std::string>()
                                                        : s["type"][0].get<std::string>())
                           : s.contains("enum")  ? "string"
                           : s.contains("oneOf") ? "string or object"
                                                 : "";
        std::string allowed;
        if (s.contains("enum"))
          for (const auto& e : s["enum"])
            allowed += (allowed.empty() ? "" : ", ") + e.get<std::string>();
        if (s.contains("const")) allowed = s["const"].get<std::string>();
        if (s.contains("minimum") || s.contains("maximum")) allowed = range_words(s, "").substr(1);
        if (s.contains("default")) allowed += fmt::format(" (default {})", s["default"].dump());
        if (!path.empty() && type != "object" && type != "array")
          rows += fmt::format("| `{}` | {} | {} | {} | {} |\n", path, type, allowed,
                              required ? "yes" : "", s.value("description", ""));
        else if (!path.empty())
          rows += fmt::format("| `{}` | {} | | {} | {} |\n", path, type, required ? "yes" : "",
                              s.value("description", ""));
        const json& req = s.value("required", json::array());
        if (s.contains("properties"))
          for (const auto& [k, sub] : s["properties"].items()) {
            if (k == "schema" && path.empty() && !s["properties"][k].contains("const")) continue;
            walk(sub, path.empty() ? k : path + "." + k,
                 std::find(req.begin(), req.end(), k) != req.end());
          }
        if (s.contains("items")) walk(s["items"], path + "[]", false);
      };
  walk(schema, "", true);
  return "| field | type | allowed | required | meaning |\n|---|---|---|---|---|\n" + rows;
}

}  // namespace topoplan
