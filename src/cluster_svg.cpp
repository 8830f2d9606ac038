// The cluster picture: servers in leaves, GPU cells by pipeline stage, group links by tier.
#include "topoplan/cluster_svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "detail/markup.hpp"

namespace topoplan {
namespace {

// Geometry (px): a GPU cell, the servers per row inside a leaf, margins.
constexpr int kCellW = 66, kCellH = 40, kCellGap = 4, kServerPad = 8, kServerLabel = 18;
constexpr int kServersPerRow = 4, kServerGap = 10, kLeafPad = 10, kLeafLabel = 22, kMargin = 10;

struct Point {
  double x = 0, y = 0;
};

/// The servers drawn: all of them, or (above kMaxServersDrawn) those holding data-parallel
/// replica 0, at most kMaxServersDrawn.
std::vector<int> servers_to_draw(const Cluster& c, const Mapping& map, std::string& note) {
  const int per = c.gpus_per_server(), servers = c.gpu_count() / per;
  std::vector<int> out;
  if (servers <= kMaxServersDrawn) {
    for (int s = 0; s < servers; ++s) out.push_back(s);
    return out;
  }
  std::set<int> held;
  for (std::int64_t r = 0; r < map.world(); ++r)
    if (map.coord(r, Dim::dp) == 0) held.insert(map.device(r) / per);
  for (int s : held)
    if (static_cast<int>(out.size()) < kMaxServersDrawn) out.push_back(s);
  const int dp = map.degree(Dim::dp);
  note = fmt::format(
      "{} of {} servers drawn: those holding data-parallel replica 0{}; {}", out.size(), servers,
      static_cast<int>(held.size()) > kMaxServersDrawn ? " (the first of them)" : "",
      dp > 1 ? fmt::format("replicas 1 to {} repeat its layout on the others", dp - 1)
             : "the others hold no rank of it");
  return out;
}

}  // namespace

std::string stage_colour(int stage, int pp) {
  const int hue = (210 + stage * 360 / std::max(pp, 1)) % 360;
  return fmt::format("hsl({},60%,80%)", hue);
}

const char* tier_colour(int tier) {
  return tier <= 0 ? "#2ca02c" : tier == 1 ? "#e08a00" : "#d62728";
}

namespace {

std::string coords_label(const Mapping& map, std::int64_t r) {
  std::string s = fmt::format("t{} d{}", map.coord(r, Dim::tp), map.coord(r, Dim::dp));
  if (map.degree(Dim::cp) > 1) s += fmt::format(" c{}", map.coord(r, Dim::cp));
  if (map.degree(Dim::ep) > 1) s += fmt::format(" e{}", map.coord(r, Dim::ep));
  return s;
}

/// Devices in groups of the failing dimensions that leave their server.
std::set<int> devices_to_flag(const Cluster& c, const Mapping& map, std::span<const Dim> failing) {
  std::set<int> out;
  for (Dim d : failing) {
    if (map.degree(d) <= 1) continue;
    for (const auto& g : map.groups(d)) {
      bool leaves = false;
      for (int r : g) leaves = leaves || c.meet_tier(map.device(g.front()), map.device(r)) > 0;
      if (leaves)
        for (int r : g) out.insert(map.device(r));
    }
  }
  return out;
}

struct Canvas {
  std::string body;
  std::map<int, Point> centre;  ///< device -> cell centre
  int width = 0, height = 0, gpus = 0;
};

void draw_server(const Cluster& c, const Plan& plan, const Mapping& map,
                 const std::vector<std::int64_t>& rank_of, const std::set<int>& flagged, int server,
                 int x, int y, Canvas& cv) {
  const int per = c.gpus_per_server(), cols = std::min(per, 4);
  const int rows = (per + cols - 1) / cols;
  const int w = cols * (kCellW + kCellGap) - kCellGap + 2 * kServerPad;
  const int h = rows * (kCellH + kCellGap) - kCellGap + 2 * kServerPad + kServerLabel;
  cv.body += fmt::format(
      "<g class=\"server\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"6\" "
      "fill=\"#f7f7f7\" stroke=\"#888\"/><text x=\"{}\" y=\"{}\" class=\"label\">node {}</text>\n",
      x, y, w, h, x + kServerPad, y + 13, server);
  for (int i = 0; i < per; ++i) {
    const int dev = server * per + i;
    const int cx = x + kServerPad + (i % cols) * (kCellW + kCellGap);
    const int cy = y + kServerLabel + kServerPad + (i / cols) * (kCellH + kCellGap);
    cv.centre[dev] = {cx + kCellW / 2.0, cy + kCellH / 2.0};
    const std::int64_t r = rank_of[static_cast<std::size_t>(dev)];
    const bool bad = flagged.count(dev) > 0;
    const std::string fill = r < 0 ? "#dddddd" : stage_colour(map.coord(r, Dim::pp), plan[Dim::pp]);
    const std::string title =
        r < 0 ? fmt::format("node {} GPU {}: idle", server, i)
              : fmt::format("rank {}: tp {}, cp {}, ep {}, dp {}, pp {}; node {} GPU {}", r,
                            map.coord(r, Dim::tp), map.coord(r, Dim::cp), map.coord(r, Dim::ep),
                            map.coord(r, Dim::dp), map.coord(r, Dim::pp), server, i);
    cv.body += fmt::format(
        "<g class=\"gpu{}\"><title>{}</title><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" "
        "rx=\"3\" fill=\"{}\" stroke=\"{}\" stroke-width=\"{}\"/>",
        bad ? " bad" : "", title, cx, cy, kCellW, kCellH, fill, bad ? "#d62728" : "#555",
        bad ? 3 : 1);
    if (r < 0)
      cv.body += fmt::format("<text x=\"{}\" y=\"{}\">idle</text></g>\n", cx + 5, cy + 16);
    else
      cv.body += fmt::format(
          "<text x=\"{}\" y=\"{}\">r{} s{}</text><text x=\"{}\" y=\"{}\">{}</text></g>\n", cx + 5,
          cy + 16, r, map.coord(r, Dim::pp), cx + 5, cy + 32, coords_label(map, r));
    ++cv.gpus;
  }
  cv.body += "</g>\n";
}

/// Leaves (tier-1 domains) stacked down the page, each holding its drawn servers in rows.
void draw_hierarchy(const Cluster& c, const Plan& plan, const Mapping& map,
                    const std::vector<int>& servers, const std::set<int>& flagged, Canvas& cv) {
  std::vector<std::int64_t> rank_of(static_cast<std::size_t>(c.gpu_count()), -1);
  for (std::int64_t r = 0; r < map.world(); ++r)
    rank_of[static_cast<std::size_t>(map.device(r))] = r;
  const int per = c.gpus_per_server(), cols = std::min(per, 4);
  const int rows = (per + cols - 1) / cols;
  const int sw = cols * (kCellW + kCellGap) - kCellGap + 2 * kServerPad;
  const int sh = rows * (kCellH + kCellGap) - kCellGap + 2 * kServerPad + kServerLabel;
  const bool leaves = c.tier_count() > 1;
  std::map<std::int64_t, std::vector<int>> by_leaf;
  for (int s : servers)
    by_leaf[leaves ? static_cast<std::int64_t>(s) * per / c.domain_size(1) : 0].push_back(s);
  int y = kMargin;
  const int leaf_w = kServersPerRow * (sw + kServerGap) - kServerGap + 2 * kLeafPad;
  for (const auto& [leaf, members] : by_leaf) {
    const int n_rows = (static_cast<int>(members.size()) + kServersPerRow - 1) / kServersPerRow;
    const int leaf_h = n_rows * (sh + kServerGap) - kServerGap + 2 * kLeafPad + kLeafLabel;
    std::string name =
        leaves ? fmt::format("{} {}", detail::xml_escape(c.tier_name(1)), leaf) : "servers";
    if (c.tier_count() > 2)
      name += fmt::format(" (in {} {})", detail::xml_escape(c.tier_name(2)),
                          static_cast<std::int64_t>(members.front()) * per / c.domain_size(2));
    cv.body += fmt::format(
        "<g class=\"leaf\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"8\" "
        "fill=\"none\" stroke=\"#aaa\" stroke-dasharray=\"4 3\"/><text x=\"{}\" y=\"{}\" "
        "class=\"label\">{}</text></g>\n",
        kMargin, y, leaf_w, leaf_h, kMargin + kLeafPad, y + 16, name);
    for (std::size_t i = 0; i < members.size(); ++i) {
      const int x = kMargin + kLeafPad + static_cast<int>(i % kServersPerRow) * (sw + kServerGap);
      const int sy =
          y + kLeafLabel + kLeafPad + static_cast<int>(i / kServersPerRow) * (sh + kServerGap);
      draw_server(c, plan, map, rank_of, flagged, members[i], x, sy, cv);
    }
    y += leaf_h + kServerGap;
  }
  cv.width = leaf_w + 2 * kMargin;
  cv.height = y + kMargin;
}

/// Each dimension's groups as links between consecutive members, coloured by the tier they
/// cross (thicker when they leave the server); one <g> per dimension, `shown`'s visible.
std::string draw_links(const Cluster& c, const Mapping& map, const Canvas& cv,
                       std::optional<Dim> shown) {
  std::string out;
  for (Dim d : {Dim::tp, Dim::cp, Dim::ep, Dim::pp, Dim::dp}) {
    if (map.degree(d) <= 1) continue;
    out += fmt::format("<g class=\"dim dim-{}\"{}>\n", to_string(d),
                       !shown || *shown == d ? "" : " style=\"display:none\"");
    for (const auto& g : map.groups(d)) {
      const std::size_t n = g.size();
      const std::size_t pairs = d == Dim::pp || n == 2 ? n - 1 : n;  // pipelines are chains
      for (std::size_t i = 0; i < pairs; ++i) {
        const int a = map.device(g[i]), b = map.device(g[(i + 1) % n]);
        const auto pa = cv.centre.find(a), pb = cv.centre.find(b);
        const int tier = c.meet_tier(a, b);
        if (pa == cv.centre.end() || pb == cv.centre.end()) continue;
        const Point p = pa->second, q = pb->second;
        const double bend = (q.y == p.y ? (tier > 0 ? 30.0 : 10.0) : 0.0);
        out += fmt::format(
            "<path class=\"link tier-{}\" d=\"M{:.0f} {:.0f} Q{:.0f} {:.0f} {:.0f} {:.0f}\" "
            "stroke=\"{}\" stroke-width=\"{}\"/>\n",
            tier, p.x, p.y, (p.x + q.x) / 2 + bend, (p.y + q.y) / 2 - bend, q.x, q.y,
            tier_colour(tier), tier > 0 ? 2.2 : 1.2);
      }
    }
    out += "</g>\n";
  }
  return out;
}

}  // namespace

std::optional<Dim> dim_to_show(const Plan& plan, const Evaluation& e,
                               std::span<const Dim> failing) {
  if (!failing.empty()) return failing.front();
  std::optional<Dim> best;
  for (Dim d : {Dim::tp, Dim::cp, Dim::ep, Dim::pp, Dim::dp})
    if (plan[d] > 1 && (!best || exposed_comm(e, d) > exposed_comm(e, *best))) best = d;
  return best;
}

ClusterPicture draw_cluster(const Cluster& c, const Plan& plan, const Mapping& mapping,
                            std::optional<Dim> shown, std::span<const Dim> failing) {
  ClusterPicture pic;
  const std::vector<int> servers = servers_to_draw(c, mapping, pic.note);
  Canvas cv;
  draw_hierarchy(c, plan, mapping, servers, devices_to_flag(c, mapping, failing), cv);
  const std::string links = draw_links(c, mapping, cv, shown);
  pic.svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"cluster\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" font-size=\"11\">\n"
      "<style>.label{{font-weight:bold;fill:#333}} .link{{fill:none;"
      "opacity:0.85}} .gpu text{{fill:#111}}</style>\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n{2}{3}</svg>\n",
      cv.width, cv.height, cv.body, links);
  pic.gpus_drawn = cv.gpus;
  pic.servers_drawn = static_cast<int>(servers.size());
  return pic;
}

}  // namespace topoplan
