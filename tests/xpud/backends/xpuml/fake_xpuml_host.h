// A host as the xpuml backend sees it, for tests: the fake libxpuml's scenario file (named by
// $XPUML_FAKE_SCRIPT) and a sysfs tree with numa_node files, both in a scratch directory.
#pragma once

#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>

#include "xpud/backends/xpuml/xpuml_library.h"

namespace xpud::test {

// Paths of the fake library variants, from the build (see CMakeLists.txt).
inline std::filesystem::path fake_xpuml_library() {
  return XPUML_FAKE_LIBRARY;
}
inline std::filesystem::path fake_xpuml_old_library() {
  return XPUML_FAKE_OLD_LIBRARY;
}
inline std::filesystem::path fake_xpuml_incomplete_library() {
  return XPUML_FAKE_INCOMPLETE_LIBRARY;
}

class FakeXpumlHost {
 public:
  FakeXpumlHost() {
    std::string pattern = (std::filesystem::temp_directory_path() / "xpuml-test-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = pattern;
    std::filesystem::create_directories(sysfs_root() / "sys/bus/pci/devices");
    ::setenv("XPUML_FAKE_SCRIPT", script_path().c_str(), 1);
  }
  ~FakeXpumlHost() {
    ::unsetenv("XPUML_FAKE_SCRIPT");
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  FakeXpumlHost(const FakeXpumlHost&) = delete;
  FakeXpumlHost& operator=(const FakeXpumlHost&) = delete;

  std::filesystem::path script_path() const { return dir_ / "scenario.txt"; }
  std::filesystem::path sysfs_root() const { return dir_ / "root"; }
  const std::filesystem::path& dir() const { return dir_; }

  // Replaces the scenario atomically (write, then rename), as a running library would need.
  void write_scenario(std::string_view text) const {
    auto temp = dir_ / "scenario.txt.new";
    write_file(temp, text);
    std::filesystem::rename(temp, script_path());
  }

  // <root>/sys/bus/pci/devices/<bus_id>/numa_node with exactly `contents`.
  void write_numa_node(const std::string& bus_id, std::string_view contents) const {
    auto device = sysfs_root() / "sys/bus/pci/devices" / bus_id;
    std::filesystem::create_directories(device);
    write_file(device / "numa_node", contents);
  }

  static void write_file(const std::filesystem::path& path, std::string_view text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.close();
    if (!out) throw std::runtime_error("cannot write " + path.string());
  }

 private:
  std::filesystem::path dir_;
};

// The fake's test hook, xpumlFakeCallCount, through a handle of our own, which also keeps the
// library (and its counters) loaded while a backend comes and goes.
class FakeXpumlCalls {
 public:
  explicit FakeXpumlCalls(const std::filesystem::path& library)
      : handle_(dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL)) {
    if (handle_.get() == nullptr) throw std::runtime_error("cannot load " + library.string());
    count_ =
        reinterpret_cast<unsigned (*)(const char*)>(dlsym(handle_.get(), "xpumlFakeCallCount"));
    if (count_ == nullptr) throw std::runtime_error("no xpumlFakeCallCount in " + library.string());
  }
  unsigned count(const char* function) const { return count_(function); }

 private:
  xpuml::DlHandle handle_;
  unsigned (*count_)(const char*) = nullptr;
};

}  // namespace xpud::test
