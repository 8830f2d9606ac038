#include "topoplan/error.hpp"

namespace topoplan {
namespace {
std::string hex_byte(unsigned char ch) {
  const char* digits = "0123456789ABCDEF";
  return {digits[ch >> 4], digits[ch & 15]};
}
}  // namespace

std::string input_message(const std::string& source, const std::string& path,
                          const std::string& what) {
  std::string out;
  if (!source.empty()) out += source + ": ";
  if (!path.empty()) out += path + ": ";
  return out + what;
}

void throw_input(const std::string& source, const std::string& path, const std::string& what) {
  throw InputError(input_message(source, path, what));
}

void require_printable_ascii(const std::string& text, const std::string& source,
                             const std::string& path) {
  for (unsigned char ch : text)
    if (ch < 0x21 || ch > 0x7e)
      throw_input(source, path, "expected printable ASCII, got byte 0x" + hex_byte(ch));
}

namespace {
WarningSink& sink() {
  static WarningSink s;
  return s;
}
}  // namespace

void set_warning_sink(WarningSink s) { sink() = std::move(s); }

void warn_input(const std::string& source, const std::string& path, const std::string& what) {
  if (sink()) sink()(input_message(source, path, what));
}

}  // namespace topoplan
