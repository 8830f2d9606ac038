#pragma once
/// check's findings as text, JSON (topoplan.check/v1), GitHub workflow commands and JUnit XML.
#include <string>

#include "topoplan/check.hpp"

namespace topoplan {

[[nodiscard]] std::string check_text(const RunContext& ctx, const CheckResult& r);
[[nodiscard]] std::string check_json(const RunContext& ctx, const CheckResult& r);
[[nodiscard]] std::string check_text(const InferenceContext& ctx, const CheckResult& r);
[[nodiscard]] std::string check_json(const InferenceContext& ctx, const CheckResult& r);
/// GitHub Actions workflow commands: one ::error / ::warning line per finding.
[[nodiscard]] std::string check_github(const CheckResult& r);
/// JUnit XML: one test case per rule, failed ones carry the finding.
[[nodiscard]] std::string check_junit(const CheckResult& r);

}  // namespace topoplan
