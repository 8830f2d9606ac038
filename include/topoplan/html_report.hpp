#pragma once
/// Self-contained HTML reports (inline SVG and CSS, a few lines of JavaScript to show one
/// dimension's links at a time; nothing fetched): the placement drawn, the step-time breakdown as
/// a stacked bar, each dimension's communication, memory, and for plan the top plans side by
/// side, for check the findings with the failing groups marked. Same inputs, same bytes.
#include <string>

#include "topoplan/check.hpp"
#include "topoplan/context.hpp"
#include "topoplan/cost_model.hpp"
#include "topoplan/mapping.hpp"
#include "topoplan/search.hpp"

namespace topoplan {

[[nodiscard]] std::string evaluation_html(const RunContext& ctx, const Plan& p,
                                          const Mapping& mapping, const Evaluation& e);
/// The search's first plan drawn (its order's mapping), the top plans compared.
[[nodiscard]] std::string plan_report_html(const RunContext& ctx, const SearchResult& r);
[[nodiscard]] std::string check_html(const RunContext& ctx, const CheckResult& r,
                                     const Mapping& mapping);

}  // namespace topoplan
