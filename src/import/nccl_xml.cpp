// NCCL topology dumps: the GPUs, their NVLinks (to switches or to peers) and the NICs.
#include "topoplan/import/nccl_xml.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <vector>

#include "topoplan/error.hpp"

namespace topoplan {
namespace {

struct Element {
  std::string name;
  std::map<std::string, std::string> attrs;
  int line = 0;
};

struct XmlGpu {
  std::string busid;
  int dev = 0, rank = -1, sm = 0, line = 0;
  std::vector<std::pair<std::string, int>> peer_links;  ///< GPU bus id, links
  int switch_links = 0;
};

/// Walks the tags of an XML text: calls `open(element, self_closing)` and `close(name, line)`.
/// Skips the prolog, comments and text; InputError on a malformed tag.
class XmlReader {
 public:
  XmlReader(const std::string& text, const std::string& source) : t_(text), source_(source) {}

  template <class Open, class Close>
  void run(Open open, Close close) {
    while ((pos_ = t_.find('<', pos_)) != std::string::npos) {
      if (t_.compare(pos_, 4, "<!--") == 0) {
        skip_past("-->");
      } else if (t_.compare(pos_, 2, "<?") == 0 || t_.compare(pos_, 2, "<!") == 0) {
        skip_past(">");
      } else if (t_.compare(pos_, 2, "</") == 0) {
        const std::size_t end = t_.find('>', pos_);
        if (end == std::string::npos) fail("an element's closing '>'");
        std::string name = t_.substr(pos_ + 2, end - pos_ - 2);
        name.erase(name.find_last_not_of(" \t\r\n") + 1);
        close(name, line());
        pos_ = end + 1;
      } else {
        bool self_closing = false;
        Element e = read_tag(self_closing);
        open(e, self_closing);
      }
    }
  }

  [[nodiscard]] int line() const {
    return 1 + static_cast<int>(std::count(
                   t_.begin(), t_.begin() + static_cast<long>(std::min(pos_, t_.size())), '\n'));
  }
  [[noreturn]] void fail(const std::string& expected) const {
    throw_input(source_, fmt::format("line {}", line()), "expected " + expected);
  }

 private:
  void skip_past(const char* end) {
    const std::size_t at = t_.find(end, pos_);
    if (at == std::string::npos) fail(fmt::format("'{}'", end));
    pos_ = at + std::char_traits<char>::length(end);
  }

  Element read_tag(bool& self_closing) {
    Element e;
    e.line = line();
    std::size_t i = pos_ + 1;
    auto name_char = [](char ch) {
      return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || ch == '.' ||
             ch == ':';
    };
    while (i < t_.size() && name_char(t_[i])) e.name += t_[i++];
    if (e.name.empty()) fail("an element name after '<'");
    for (;;) {
      while (i < t_.size() && std::isspace(static_cast<unsigned char>(t_[i]))) ++i;
      if (i >= t_.size()) fail(fmt::format("the end of <{}>", e.name));
      if (t_[i] == '>' || t_.compare(i, 2, "/>") == 0) {
        self_closing = t_[i] == '/';
        pos_ = i + (self_closing ? 2 : 1);
        return e;
      }
      std::string key;
      while (i < t_.size() && t_[i] != '=' && !std::isspace(static_cast<unsigned char>(t_[i])) &&
             t_[i] != '>')
        key += t_[i++];
      if (i >= t_.size() || t_[i] != '=' || i + 1 >= t_.size() ||
          (t_[i + 1] != '"' && t_[i + 1] != '\''))
        fail(fmt::format("attribute=\"value\" in <{}>", e.name));
      const char quote = t_[i + 1];
      const std::size_t end = t_.find(quote, i + 2);
      if (end == std::string::npos) fail(fmt::format("the closing quote of {}", key));
      e.attrs[key] = t_.substr(i + 2, end - i - 2);
      i = end + 1;
    }
  }

  const std::string& t_;
  const std::string& source_;
  std::size_t pos_ = 0;
};

int int_attr(const Element& e, const std::string& key, const std::string& source, int lo,
             long hi = 100000) {
  const auto it = e.attrs.find(key);
  const std::string v = it == e.attrs.end() ? "" : it->second;
  char* end = nullptr;
  const long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || n < lo || n > hi)
    throw_input(source, fmt::format("line {}", e.line),
                fmt::format("<{}> {}: expected an integer from {} to {}, got '{}'", e.name, key, lo,
                            hi, v));
  return static_cast<int>(n);
}

/// An NVLink target's class: the bridge class 0x0680xx is an NVSwitch, 0x03xxxx a GPU.
bool is_switch_class(const std::string& tclass) { return tclass.starts_with("0x0680"); }

NcclXmlTopology to_topology(std::vector<XmlGpu> gpus, int sm, int nics, double speed,
                            const std::string& source) {
  // Rank order when every GPU carries one, else document order.
  if (std::all_of(gpus.begin(), gpus.end(), [](const XmlGpu& g) { return g.rank >= 0; }))
    std::stable_sort(gpus.begin(), gpus.end(),
                     [](const XmlGpu& a, const XmlGpu& b) { return a.rank < b.rank; });
  NcclXmlTopology out;
  out.sm = sm;
  out.nic_speed_Mbps = speed;
  SmiTopology& m = out.matrix;
  m.gpus = static_cast<int>(gpus.size());
  for (int i = 0; i < nics; ++i) m.nics.push_back(fmt::format("NIC{}", i));
  m.nvlinks.assign(gpus.size(), std::vector<int>(gpus.size(), 0));
  m.path.assign(gpus.size(), std::vector<std::string>(gpus.size(), "SYS"));
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < gpus.size(); ++i) index[gpus[i].busid] = i;
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    m.path[i][i].assign(1, 'X');  // (not = "X": GCC 12 warns -Wrestrict on it)
    out.nvswitch = out.nvswitch || gpus[i].switch_links > 0;
    for (const auto& [target, links] : gpus[i].peer_links) {
      const auto j = index.find(target);
      if (j == index.end())
        throw_input(
            source, fmt::format("line {}", gpus[i].line),
            fmt::format("<nvlink> target {}: expected the bus id of a GPU in the dump", target));
      m.nvlinks[i][j->second] += links;
    }
  }
  // Through the switches every pair gets the smaller GPU's links.
  for (std::size_t i = 0; i < gpus.size(); ++i)
    for (std::size_t j = 0; j < gpus.size(); ++j)
      if (i != j) {
        m.nvlinks[i][j] += std::min(gpus[i].switch_links, gpus[j].switch_links);
        if (m.nvlinks[i][j] > 0) m.path[i][j] = fmt::format("NV{}", m.nvlinks[i][j]);
      }
  return out;
}

}  // namespace

std::string gpu_preset_for_sm(int sm) {
  if (sm == 80) return "a100-80gb";
  if (sm == 90) return "h100-sxm";
  if (sm == 100) return "b200";
  if (sm == 103) return "b300";  // Blackwell Ultra (compute capability 10.3)
  return "";
}

NcclXmlTopology parse_nccl_topo_xml(const std::string& text, const std::string& source) {
  XmlReader xml(text, source);
  std::vector<Element> stack;
  std::vector<XmlGpu> gpus;
  bool system = false;
  int sm = 0, nics = 0;
  double speed = 0;
  auto open = [&](const Element& e, bool self_closing) {
    if (e.name == "system") system = true;
    if (e.name == "gpu") {
      XmlGpu g;
      for (auto it = stack.rbegin(); it != stack.rend() && g.busid.empty(); ++it)
        if (it->name == "pci" && it->attrs.count("busid")) g.busid = it->attrs.at("busid");
      g.dev = int_attr(e, "dev", source, 0);
      g.sm = int_attr(e, "sm", source, 10);
      g.rank = e.attrs.count("rank") ? int_attr(e, "rank", source, 0) : -1;
      g.line = e.line;
      for (const auto& other : gpus)
        if ((!g.busid.empty() && other.busid == g.busid) || (g.rank >= 0 && other.rank == g.rank))
          throw_input(source, fmt::format("line {}", e.line),
                      fmt::format("GPU {} is listed twice", g.busid.empty() ? "rank" : g.busid));
      if (sm != 0 && g.sm != sm)
        throw_input(source, fmt::format("line {}", e.line),
                    fmt::format("<gpu> sm: expected every GPU alike ({}), got {}", sm, g.sm));
      sm = g.sm;
      gpus.push_back(g);
    }
    if (e.name == "nvlink") {
      if (stack.empty() || stack.back().name != "gpu")
        throw_input(source, fmt::format("line {}", e.line), "expected <nvlink> inside a <gpu>");
      const int count = int_attr(e, "count", source, 1);
      const std::string tclass = e.attrs.count("tclass") ? e.attrs.at("tclass") : "";
      if (is_switch_class(tclass))
        gpus.back().switch_links += count;
      else
        gpus.back().peer_links.emplace_back(e.attrs.count("target") ? e.attrs.at("target") : "",
                                            count);
    }
    if (e.name == "net") {
      ++nics;
      // Mb/s, as NCCL reports it (400000: 400 Gb/s).
      speed = std::max(speed, static_cast<double>(int_attr(e, "speed", source, 1, 100000000)));
    }
    if (!self_closing) stack.push_back(e);
  };
  auto close = [&](const std::string& name, int line) {
    if (stack.empty() || stack.back().name != name)
      throw_input(source, fmt::format("line {}", line),
                  fmt::format("expected </{}>, got </{}>",
                              stack.empty() ? "nothing" : stack.back().name, name));
    stack.pop_back();
  };
  xml.run(open, close);
  if (!stack.empty())
    throw_input(source, fmt::format("line {}", stack.back().line),
                fmt::format("<{}> is never closed", stack.back().name));
  if (!system) throw_input(source, "", "expected an NCCL topology dump: no <system> element");
  if (gpus.empty()) throw_input(source, "", "no <gpu> element in the dump");
  return to_topology(std::move(gpus), sm, nics, speed, source);
}

}  // namespace topoplan
