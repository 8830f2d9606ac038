#include "topoplan/check_report.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "detail/markup.hpp"
#include "detail/report_json.hpp"
#include "topoplan/report.hpp"

namespace topoplan {
namespace {

std::string findings_text(const CheckResult& r) {
  std::string out;
  for (const auto& f : r.findings)
    out += fmt::format("{} [{}] {}\n", to_string(f.severity), f.rule, f.message);
  int errors = 0, warnings = 0;
  for (const auto& f : r.findings) (f.severity == Severity::error ? errors : warnings)++;
  out += fmt::format("{}{} error{}, {} warning{}\n", r.findings.empty() ? "" : "\n", errors,
                     errors == 1 ? "" : "s", warnings, warnings == 1 ? "" : "s");
  return out + (r.passed() ? "PASS\n" : "FAIL\n");
}

std::string github_escape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '%')
      out += "%25";
    else if (ch == '\r')
      out += "%0D";
    else if (ch == '\n')
      out += "%0A";
    else
      out += ch;
  }
  return out;
}

using detail::xml_escape;

}  // namespace

std::string check_text(const RunContext& ctx, const CheckResult& r) {
  std::string out = "topoplan check: " + context_line(ctx) + "\n";
  out += fmt::format(
      "plan: {}, micro-batch {}, order {}, ZeRO-{}, recompute {}, "
      "sequence parallelism {}\n",
      degrees_string(r.plan), r.plan.micro_batch, short_order_string(r.plan), r.plan.zero,
      recompute_string(r.plan), r.plan.sequence_parallel ? "on" : "off");
  if (r.eval)
    out += fmt::format("predicted step time {:.3f} s, MFU {:.1f}%, {:.1f} GiB per GPU\n",
                       r.eval->step_time, 100 * r.eval->mfu,
                       r.eval->memory.total() / (1024.0 * 1024 * 1024));
  return out + "\n" + findings_text(r);
}

namespace {

nlohmann::ordered_json findings_json(const CheckResult& r) {
  nlohmann::ordered_json j;
  j["schema"] = kCheckSchema;
  j["passed"] = r.passed();
  auto findings = nlohmann::ordered_json::array();
  for (const auto& f : r.findings)
    findings.push_back(
        {{"rule", f.rule}, {"severity", to_string(f.severity)}, {"message", f.message}});
  j["findings"] = findings;
  return j;
}

/// A compared plan as its JSON document (training or serving), or null where there is none.
template <class Context, class Compared>
nlohmann::ordered_json plan_or_null(const Context& ctx, const std::optional<Compared>& c) {
  return c ? detail::to_json(ctx, c->plan, c->eval) : nlohmann::ordered_json(nullptr);
}

}  // namespace

std::string check_text(const InferenceContext& ctx, const CheckResult& r) {
  std::string out = fmt::format("topoplan check --inference: {} on {} x {}\n", ctx.model.spec.name,
                                ctx.cluster.spec().nodes, ctx.cluster.spec().name);
  out += fmt::format("plan: {}, order {}\n", degrees_string(r.plan, false),
                     short_order_string(r.plan));
  if (r.inference)
    out +=
        fmt::format("predicted {:.3f} ms per token, {:.2f} ms to first token, {:.1f} GiB per GPU\n",
                    r.inference->token_latency * 1e3, r.inference->ttft * 1e3,
                    r.inference->memory_total() / (1024.0 * 1024 * 1024));
  return out + "\n" + findings_text(r);
}

std::string check_json(const InferenceContext& ctx, const CheckResult& r) {
  auto j = findings_json(r);
  j["plan"] =
      r.inference ? detail::to_json(ctx, r.plan, *r.inference) : nlohmann::ordered_json(nullptr);
  // As training's (added in session 31): the plans the two comparisons used.
  j["best_same_degrees_plan"] = plan_or_null(ctx, r.best_same_degrees_serving);
  j["best_overall_plan"] = plan_or_null(ctx, r.best_overall_serving);
  return j.dump(2) + "\n";
}

std::string check_json(const RunContext& ctx, const CheckResult& r) {
  using nlohmann::ordered_json;
  auto j = findings_json(r);
  j["plan"] = r.eval ? detail::to_json(ctx, r.plan, *r.eval) : ordered_json(nullptr);
  j["best_same_degrees_step_time_s"] = r.best_same_degrees
                                           ? ordered_json(r.best_same_degrees->eval.step_time)
                                           : ordered_json(nullptr);
  j["best_overall_step_time_s"] =
      r.best_overall ? ordered_json(r.best_overall->eval.step_time) : ordered_json(nullptr);
  // The two plans themselves (added in session 31), as topoplan.plan/v1 documents: a script can
  // hand either to `evaluate --plan` or `export --plan`.
  j["best_same_degrees_plan"] = plan_or_null(ctx, r.best_same_degrees);
  j["best_overall_plan"] = plan_or_null(ctx, r.best_overall);
  return j.dump(2) + "\n";
}

std::string check_github(const CheckResult& r) {
  std::string out;
  for (const auto& f : r.findings)
    out += fmt::format("::{} title=topoplan {}::{}\n", to_string(f.severity), f.rule,
                       github_escape(f.message));
  if (r.findings.empty()) out += "::notice title=topoplan check::all rules pass\n";
  return out;
}

std::string check_junit(const CheckResult& r) {
  int failures = 0;
  std::string cases;
  for (const auto& rule : kRules) {
    cases += fmt::format("    <testcase classname=\"topoplan.check\" name=\"{}\">", rule.id);
    std::string body;
    for (const auto& f : r.findings) {
      if (f.rule != rule.id) continue;
      if (f.severity == Severity::error) {
        ++failures;
        body += fmt::format("\n      <failure type=\"{}\" message=\"{}\"/>", f.rule,
                            xml_escape(f.message));
      } else {
        body += fmt::format("\n      <system-out>warning: {}</system-out>", xml_escape(f.message));
      }
    }
    cases += body.empty() ? "</testcase>\n" : body + "\n    </testcase>\n";
  }
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n  <testsuite name=\"topoplan "
      "check\" tests=\"{}\" failures=\"{}\" errors=\"0\">\n{}  </testsuite>\n</testsuites>\n",
      std::size(kRules), failures, cases);
}

}  // namespace topoplan
