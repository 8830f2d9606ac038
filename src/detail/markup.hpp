#pragma once
/// Escaping for the markup topoplan writes (JUnit XML, HTML, SVG): one rule for all of them.
#include <string>
#include <string_view>

namespace topoplan::detail {

/// Text safe in XML/HTML content and in double- or single-quoted attributes.
inline std::string xml_escape(std::string_view s) {
  std::string out;
  for (char ch : s) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += ch;
    }
  }
  return out;
}

}  // namespace topoplan::detail
