#pragma once
/// The one error type user input raises: it carries a complete one-line message
/// ("cluster.json: tiers[1].bandwidth_GBps: expected a positive number, got -3"); the CLI prints
/// it and exits 2.
#include <functional>
#include <stdexcept>
#include <string>

namespace topoplan {

class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& message) : std::runtime_error(message) {}
};

/// Builds the standard message: "<source>: <path>: <what>" (parts left out when empty).
[[nodiscard]] std::string input_message(const std::string& source, const std::string& path,
                                        const std::string& what);

[[noreturn]] void throw_input(const std::string& source, const std::string& path,
                              const std::string& what);

/// Host names and the like, which outputs write into JSON and launcher scripts: InputError
/// naming `source` and `path` unless every byte of `text` is printable ASCII (no spaces).
void require_printable_ascii(const std::string& text, const std::string& source,
                             const std::string& path);

/// Where warnings about input go (a key that is not used, a guess made): the library never
/// prints; the CLI installs a sink that writes them to stderr. Without a sink they are dropped.
using WarningSink = std::function<void(const std::string& message)>;
void set_warning_sink(WarningSink sink);
/// Sends "<source>: <path>: <what>" to the sink.
void warn_input(const std::string& source, const std::string& path, const std::string& what);

}  // namespace topoplan
