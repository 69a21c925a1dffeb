// A host as the xpuml backend sees it, for tests: the fake libxpuml's scenario file (named by
// $XPUML_FAKE_SCRIPT) beside a fake sysfs tree (tests/fakes/sysfs), whose root is what the
// backend gets as its sysfs root, and scratch space for the test.
#pragma once

#include <dlfcn.h>
#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

#include "tests/fakes/sysfs/fake_sysfs_tree.h"
#include "xpud/backends/xpuml/xpuml_library.h"

namespace xpud::test {

// Paths of the fake library variants, from the build (see CMakeLists.txt).
inline std::filesystem::path fake_xpuml_library() {
  return XPUML_FAKE_LIBRARY;
}
// The current library plus xpumlDeviceGetUUID, which no real one is known to export.
inline std::filesystem::path fake_xpuml_uuid_library() {
  return XPUML_FAKE_UUID_LIBRARY;
}
inline std::filesystem::path fake_xpuml_old_library() {
  return XPUML_FAKE_OLD_LIBRARY;
}
inline std::filesystem::path fake_xpuml_incomplete_library() {
  return XPUML_FAKE_INCOMPLETE_LIBRARY;
}

class FakeXpumlHost {
 public:
  FakeXpumlHost() { ::setenv("XPUML_FAKE_SCRIPT", script_path().c_str(), 1); }
  ~FakeXpumlHost() { ::unsetenv("XPUML_FAKE_SCRIPT"); }
  FakeXpumlHost(const FakeXpumlHost&) = delete;
  FakeXpumlHost& operator=(const FakeXpumlHost&) = delete;

  // The host's sysfs: PCI functions the sysfs backend would find, numa_node files.
  xpu::fakes::FakeSysfsTree& tree() { return tree_; }
  const std::filesystem::path& sysfs_root() const { return tree_.root(); }
  // Scratch space, removed with the host.
  const std::filesystem::path& dir() const { return tree_.root(); }
  std::filesystem::path script_path() const { return tree_.root() / kScript; }

  // Replaces the scenario atomically (write, then rename), as a running library would need.
  void write_scenario(std::string_view text) {
    const std::string temp = std::string(kScript) + ".new";
    tree_.write_file(temp, text);
    std::filesystem::rename(tree_.root() / temp, script_path());
  }

  // <root>/sys/bus/pci/devices/<bus_id>/numa_node with exactly `contents`.
  void write_numa_node(const std::string& bus_id, std::string_view contents) {
    tree_.write_file(std::filesystem::path("sys/bus/pci/devices") / bus_id / "numa_node", contents);
  }

 private:
  static constexpr std::string_view kScript = "xpuml-scenario.txt";
  xpu::fakes::FakeSysfsTree tree_;
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
