#include "topoplan/error.hpp"

namespace topoplan {

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
