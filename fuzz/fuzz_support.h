// What the fuzzers share: a property check that stops the run with a message (libFuzzer keeps
// the input that got there), a scratch directory for parsers that read files, and splitting one
// input into several files.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <spdlog/spdlog.h>

namespace xpu::fuzz {

// A property of the code under test that the input broke: reported like a crash, so that
// libFuzzer saves the input.
[[noreturn]] inline void property_broken(const char* what, const std::string& detail) {
  std::fprintf(stderr, "property broken: %s: %s\n", what, detail.c_str());
  std::abort();
}

inline void check(bool holds, const char* what, const std::string& detail = {}) {
  if (!holds) property_broken(what, detail);
}

// The parsers log what they reject at debug level and some problems at warn; millions of
// inputs would drown the fuzzer's own report.
inline void quiet_logging() {
  spdlog::set_level(spdlog::level::off);
}

// A directory under $TMPDIR (or /tmp) for one fuzzer process, removed at exit. The file-reading
// parsers (the config loader, the service-account reader) get their input written here.
class ScratchDirectory {
 public:
  explicit ScratchDirectory(std::string_view name) {
    std::string pattern =
        (std::filesystem::temp_directory_path() / ("xpu-fuzz-" + std::string(name) + "-XXXXXX"))
            .string();
    if (::mkdtemp(pattern.data()) == nullptr) property_broken("scratch directory", pattern);
    path_ = pattern;
  }
  ~ScratchDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDirectory(const ScratchDirectory&) = delete;
  ScratchDirectory& operator=(const ScratchDirectory&) = delete;

  const std::filesystem::path& path() const { return path_; }

  void write(const std::filesystem::path& relative, std::string_view content) const {
    std::ofstream out(path_ / relative, std::ios::binary | std::ios::trunc);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    if (!out) property_broken("scratch file", (path_ / relative).string());
  }

 private:
  std::filesystem::path path_;
};

// The input cut at NUL bytes: seed files hold several files' contents separated by one NUL,
// which keeps them readable (none of these text formats accepts a NUL anyway).
inline std::vector<std::string_view> split_at_nul(std::string_view input, std::size_t max_parts) {
  std::vector<std::string_view> parts;
  while (parts.size() + 1 < max_parts) {
    const auto nul = input.find('\0');
    if (nul == std::string_view::npos) break;
    parts.push_back(input.substr(0, nul));
    input.remove_prefix(nul + 1);
  }
  parts.push_back(input);
  return parts;
}

}  // namespace xpu::fuzz
