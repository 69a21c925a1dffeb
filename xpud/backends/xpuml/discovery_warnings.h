// Warnings raised while discovering cards. Discovery runs periodically, so a lasting problem
// (a bad numa_node file, a card without a PCI address) would repeat on every pass and flood the
// journal: each warning is logged at warn level in the pass where it appears and at debug level
// while it persists; one that goes away and comes back is warned about again.
#pragma once

#include <set>
#include <string>
#include <utility>

#include <spdlog/spdlog.h>

namespace xpud::xpuml {

class DiscoveryWarnings {
 public:
  template <typename... Args>
  void warn(spdlog::format_string_t<Args...> format, Args&&... args) {
    add(fmt::format(format, std::forward<Args>(args)...));
  }

  void add(std::string message) {
    auto level = previous_.contains(message) ? spdlog::level::debug : spdlog::level::warn;
    spdlog::log(level, "{}", message);
    current_.insert(std::move(message));
  }

  // Ends one discovery pass: what it warned about is what the next pass keeps quiet about.
  void end_pass() { previous_ = std::exchange(current_, {}); }

 private:
  std::set<std::string> previous_;
  std::set<std::string> current_;
};

}  // namespace xpud::xpuml
