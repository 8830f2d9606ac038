// HTML reports: one self-contained page per evaluate, plan or check run.
#include "topoplan/html_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <vector>

#include "detail/markup.hpp"
#include "detail/report_json.hpp"
#include "topoplan/cluster_svg.hpp"
#include "topoplan/collectives.hpp"
#include "topoplan/report.hpp"
#include "topoplan/units.hpp"

namespace topoplan {
namespace {

std::string esc(std::string_view s) { return detail::xml_escape(s); }

constexpr const char* kStyle =
    "body{font-family:sans-serif;margin:24px;color:#222;max-width:1200px}"
    "h1{font-size:20px}h2{font-size:16px;margin-top:28px}"
    "table{border-collapse:collapse;font-size:13px}"
    "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
    "th{background:#f0f0f0}td.l,th.l{text-align:left}"
    ".summary{font-size:15px}.pass{color:#1a7f37;font-weight:bold}"
    ".fail{color:#d62728;font-weight:bold}.note{color:#555;font-size:13px}"
    ".swatch{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-2px}";

// Shows the chosen dimension's links in the placement picture, hides the others.
constexpr const char* kScript =
    "document.querySelectorAll('input.dim').forEach(function(b){b.addEventListener('change',"
    "function(){document.querySelectorAll('g.dim').forEach(function(g){g.style.display="
    "(b.value==='all'||g.classList.contains('dim-'+b.value))?'':'none';});});});";

std::string page(const std::string& title, const std::string& body) {
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<title>{0}</title>\n<style>{1}</style>\n</head>\n<body>\n<h1>{0}</h1>\n{2}"
      "<script>{3}</script>\n</body>\n</html>\n",
      esc(title), kStyle, body, kScript);
}

std::string plan_line(const Plan& p, std::int64_t layers) {
  return fmt::format("{}, micro-batch {}, vpp {}, order {}{}, ZeRO-{}, recompute {}, {}",
                     degrees_string(p), p.micro_batch, p.vpp, order_string(p.order),
                     split_clause(p, layers), p.zero, recompute_string(p),
                     p.sequence_parallel ? "sequence parallel" : "no sequence parallelism");
}

std::string summary(const RunContext& ctx, const Plan& p, const Evaluation& e) {
  std::string out = fmt::format(
      "<p>{}</p>\n<p>plan: {}</p>\n<p class=\"summary\">step time <b>{:.3f} s</b>, {:.0f} "
      "tokens/s, {:.1f} model TFLOP/s per GPU, MFU <b>{:.1f}%</b>; memory {:.1f} of {:.1f} GiB "
      "per GPU: <span class=\"{}\">{}</span></p>\n",
      esc(context_line(ctx)), esc(plan_line(p, ctx.model.spec.layers)), e.step_time, e.tokens_per_s,
      units::to_TFLOPs(e.model_flops_per_gpu), 100 * e.mfu, units::to_GiB(e.memory.total()),
      units::to_GiB(ctx.cluster.gpu().memory_bytes), e.fits ? "pass" : "fail",
      e.fits ? "fits" : "does not fit");
  out +=
      fmt::format("<p class=\"note\">{}</p>\n", esc(detail::accuracy_line(detail::band_for(ctx))));
  return out;
}

/// The step's parts as one stacked bar and a table; the parts add up to the step time.
std::string breakdown(const Evaluation& e) {
  const TimeBreakdown& t = e.time;
  const std::array<std::tuple<const char*, double, const char*>, 11> parts{{
      {"compute", t.compute, "#4e79a7"},
      {"tp communication", t.tp, "#f28e2b"},
      {"cp communication", t.cp, "#edc948"},
      {"ep communication", t.ep, "#b07aa1"},
      {"pp sends", t.pp, "#76b7b2"},
      {"pipeline bubble", t.bubble, "#e15759"},
      {"dp communication", t.dp, "#59a14f"},
      {"optimizer step", t.optimizer, "#9c755f"},
      {"activation offload", t.offload, "#bab0ac"},
      {"per-step host work", t.host, "#d4a6c8"},
      {"moe host-bound wait", t.moe_host, "#ff9da7"},
  }};
  constexpr double kWidth = 900;
  std::string bar = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"breakdown\" width=\"{0:.0f}\" "
      "height=\"34\" viewBox=\"0 0 {0:.0f} 34\">\n",
      kWidth);
  std::string rows;
  double x = 0;
  for (const auto& [name, s, colour] : parts) {
    if (s <= 0) continue;
    const double w = kWidth * s / e.step_time;
    bar += fmt::format(
        "<rect x=\"{:.1f}\" y=\"2\" width=\"{:.1f}\" height=\"30\" fill=\"{}\"><title>{}: {:.3f} "
        "s</title></rect>\n",
        x, w, colour, name, s);
    x += w;
    rows += fmt::format(
        "<tr><td class=\"l\"><span class=\"swatch\" style=\"background:{}\"></span>{}</td>"
        "<td>{:.3f}</td><td>{:.1f}%</td></tr>\n",
        colour, name, s, 100 * s / e.step_time);
  }
  bar += "</svg>\n";
  return fmt::format(
      "<h2>Where the time goes</h2>\n{}<table>\n<tr><th class=\"l\">part</th><th>s per "
      "step</th><th>share</th></tr>\n{}<tr><th class=\"l\">step time</th><th>{:.3f}</th>"
      "<th>100.0%</th></tr>\n</table>\n",
      bar, rows, e.step_time);
}

std::string communication(const RunContext& ctx, const Plan& p, const Evaluation& e) {
  std::string rows;
  for (Dim d : {Dim::tp, Dim::cp, Dim::ep, Dim::pp, Dim::dp}) {
    if (p[d] <= 1) continue;
    rows += fmt::format(
        "<tr><td class=\"l\">{}</td><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td>"
        "<td>{:.3f}</td><td>{:.3f}</td></tr>\n",
        to_string(d), p[d], esc(span_name(ctx.cluster, e.shapes[d])),
        collective_name(e.algorithms[d], e.protocols[d]), total_comm(e, d), exposed_comm(e, d));
  }
  if (rows.empty()) return "";
  return "<h2>Communication per dimension</h2>\n<table>\n<tr><th class=\"l\">dim</th>"
         "<th>degree</th><th class=\"l\">spans</th><th class=\"l\">algorithm</th><th>total "
         "s</th><th>exposed s</th></tr>\n" +
         rows + "</table>\n";
}

std::string memory(const RunContext& ctx, const Evaluation& e) {
  const MemoryBreakdown& m = e.memory;
  return fmt::format(
      "<h2>Memory per GPU, most loaded pipeline stage (GiB)</h2>\n<table>\n<tr><th>weights</th>"
      "<th>gradients</th><th>optimizer</th><th>activations</th><th>other</th><th>total</th>"
      "<th>capacity</th></tr>\n<tr><td>{:.1f}</td><td>{:.1f}</td><td>{:.1f}</td><td>{:.1f}</td>"
      "<td>{:.1f}</td><td>{:.1f}</td><td>{:.1f}</td></tr>\n</table>\n",
      units::to_GiB(m.weights), units::to_GiB(m.gradients), units::to_GiB(m.optimizer),
      units::to_GiB(m.activations), units::to_GiB(m.other), units::to_GiB(m.total()),
      units::to_GiB(ctx.cluster.gpu().memory_bytes));
}

std::string placement(const RunContext& ctx, const Plan& p, const Mapping& map, const Evaluation& e,
                      std::span<const Dim> failing) {
  const std::optional<Dim> shown = dim_to_show(p, e, failing);
  const ClusterPicture pic = draw_cluster(ctx.cluster, p, map, shown, failing);
  std::string choices;
  for (Dim d : {Dim::tp, Dim::cp, Dim::ep, Dim::pp, Dim::dp})
    if (p[d] > 1)
      choices += fmt::format(
          "<label><input type=\"radio\" name=\"dim\" class=\"dim\" value=\"{0}\"{1}> <b>{0}"
          "</b> {2} groups of {3} on {4}: {5:.3f} s, {6:.3f} s exposed</label><br>\n",
          to_string(d), shown == d ? " checked" : "", map.world() / p[d], p[d],
          esc(span_name(ctx.cluster, e.shapes[d])), total_comm(e, d), exposed_comm(e, d));
  if (!choices.empty())
    choices +=
        "<label><input type=\"radio\" name=\"dim\" class=\"dim\" value=\"all\"> "
        "all</label>\n";
  std::string legend;
  for (int s = 0; s < p[Dim::pp] && s < 16; ++s)
    legend += fmt::format("<span class=\"swatch\" style=\"background:{}\"></span>stage {} ",
                          stage_colour(s, p[Dim::pp]), s);
  std::string tiers;
  for (int k = 0; k < ctx.cluster.tier_count(); ++k)
    tiers += fmt::format("<span class=\"swatch\" style=\"background:{}\"></span>via {}{} ",
                         tier_colour(k), esc(ctx.cluster.tier_name(k)),
                         k == 0 ? " (inside a server)" : "");
  return fmt::format(
      "<h2>Placement</h2>\n<p class=\"note\">Each cell is a GPU: rank r, pipeline stage s, "
      "tensor (t), data (d), context (c) and expert (e) coordinates; hover for all. Lines join "
      "each group's members in ring order (pipelines in stage order), coloured by the tier they "
      "cross{}.</p>\n<p>{}</p>\n<p class=\"note\">{}</p>\n<p class=\"note\">links: {}</p>\n{}{}",
      failing.empty() ? "" : "; red cells: groups of the failing rules", choices, legend, tiers,
      pic.note.empty() ? "" : fmt::format("<p class=\"note\">{}</p>\n", esc(pic.note)), pic.svg);
}

std::string evaluation_sections(const RunContext& ctx, const Plan& p, const Mapping& map,
                                const Evaluation& e, std::span<const Dim> failing) {
  return summary(ctx, p, e) + breakdown(e) + communication(ctx, p, e) + memory(ctx, e) +
         placement(ctx, p, map, e, failing);
}

std::string top_plans(const RunContext& ctx, const SearchResult& r) {
  // The text table's columns (report.cpp): a split column only when a listed plan sets one.
  const bool split_column = std::any_of(
      r.top.begin(), r.top.end(), [](const Candidate& c) { return sets_first_last_split(c.plan); });
  std::string rows;
  const double worst = r.top.empty() ? 1 : r.top.back().eval.step_time;
  for (std::size_t i = 0; i < r.top.size(); ++i) {
    const Candidate& c = r.top[i];
    rows += fmt::format(
        "<tr><td>{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td>{}<td class=\"l\">{}</td>"
        "<td>{}</td><td class=\"l\">{}</td><td>{}</td><td>{:.3f}</td>"
        "<td class=\"l\"><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"200\" height=\"12\">"
        "<rect width=\"{:.1f}\" height=\"12\" fill=\"#4e79a7\"/></svg></td><td>{:.1f}%</td>"
        "<td>{:.1f}</td></tr>\n",
        i + 1, esc(degrees_string(c.plan)), c.plan.micro_batch, c.plan.vpp,
        split_column ? fmt::format("<td>{}</td>", split_cell(c.plan, ctx.model.spec.layers)) : "",
        short_order_string(c.plan), c.plan.zero, recompute_string(c.plan),
        c.plan.sequence_parallel ? "on" : "-", c.eval.step_time, 200 * c.eval.step_time / worst,
        100 * c.eval.mfu, units::to_GiB(c.eval.memory.total()));
  }
  return fmt::format(
      "<h2>Top plans</h2>\n<p>{}</p>\n<table>\n<tr><th>#</th><th class=\"l\">degrees</th>"
      "<th>mb</th><th>vpp</th>{}<th class=\"l\">order</th><th>ZeRO</th>"
      "<th class=\"l\">recompute</th><th>sp</th><th>step s</th><th class=\"l\">step time</th>"
      "<th>MFU</th><th>GiB</th></tr>\n{}</table>\n",
      esc(context_line(ctx)), split_column ? "<th>split</th>" : "", rows);
}

}  // namespace

std::string evaluation_html(const RunContext& ctx, const Plan& p, const Mapping& mapping,
                            const Evaluation& e) {
  return page("topoplan evaluate: " + degrees_string(p),
              evaluation_sections(ctx, p, mapping, e, {}));
}

std::string plan_report_html(const RunContext& ctx, const SearchResult& r) {
  std::string body = top_plans(ctx, r);
  if (!r.top.empty()) {
    const Candidate& best = r.top.front();
    body += "<h2>Plan #1</h2>\n" +
            evaluation_sections(ctx, best.plan, Mapping::from_order(best.plan), best.eval, {});
  }
  return page("topoplan plan: " + ctx.model.spec.name, body);
}

std::string check_html(const RunContext& ctx, const CheckResult& r, const Mapping& mapping) {
  std::string items;
  for (const Finding& f : r.findings)
    items += fmt::format("<li><span class=\"{}\">{}</span> {}: {}</li>\n",
                         f.severity == Severity::error ? "fail" : "note",
                         f.severity == Severity::error ? "error" : "warning", esc(f.rule),
                         esc(f.message));
  const std::vector<Dim> failing = failing_tier_dims(r);
  std::string body =
      fmt::format("<p class=\"{}\">{}</p>\n<ul>\n{}</ul>\n", r.passed() ? "pass" : "fail",
                  r.passed() ? "check passed" : "check failed",
                  items.empty() ? "<li>no findings</li>\n" : items);
  if (r.eval) body += evaluation_sections(ctx, r.plan, mapping, *r.eval, failing);
  return page("topoplan check: " + degrees_string(r.plan), body);
}

}  // namespace topoplan
