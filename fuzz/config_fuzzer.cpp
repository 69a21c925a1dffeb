// xpud's configuration loader (xpud/config.cpp): the main file and its xpud.conf.d drop-ins, read
// from disk as xpud reads them. The input is the main file's text, then up to three drop-ins, cut
// at NUL bytes. A configuration that loads must hold only values the schema allows; one that does
// not must say which file is wrong.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "fuzz/fuzz_support.h"
#include "xpud/config.h"

namespace {

using xpu::fuzz::check;
namespace fs = std::filesystem;

void check_loaded(const xpud::Config& config) {
  check(config.backend == "auto" || config.backend == "xpuml" || config.backend == "sysfs" ||
            config.backend == "sim",
        "backend", config.backend);
  check(config.interval.count() >= 100 && config.interval.count() <= 3600000, "interval_ms");
  check(config.call_timeout.count() >= 10 && config.call_timeout.count() <= 60000,
        "call_timeout_ms");
  check(config.stall_grace.count() >= 0 && config.stall_grace.count() <= 3600000, "stall_grace_ms");
  check(config.rescan_interval.count() >= 1000 && config.rescan_interval.count() <= 86400000,
        "rescan_interval_ms");
  check(config.failure_threshold >= 1 && config.failure_threshold <= 1000, "failure_threshold");
  for (const fs::path* path : {&config.sysfs_root, &config.topology_quirks})
    check(path->is_absolute(), "a path key took a relative path", path->string());
  check(
      !config.xpuml_libraries.empty() && config.xpuml_libraries.size() <= xpud::kMaxXpumlLibraries,
      "library count");
  for (const auto& library : config.xpuml_libraries)
    check(library.is_absolute() || library.string().find('/') == std::string::npos,
          "a library that is neither absolute nor a bare name", library.string());
  check(config.sim_devices <= 1024, "sim devices");
  check(!config.sim_model.empty() && config.sim_model.size() <= 32, "sim model", config.sim_model);
  check(config.sim_memory_mib >= 1 && config.sim_memory_mib <= (1u << 24), "sim memory_mib");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  xpu::fuzz::quiet_logging();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // One directory for the whole run: xpud.conf and xpud.conf.d/ are rewritten for every input.
  static const xpu::fuzz::ScratchDirectory scratch("config");
  const fs::path main_file = scratch.path() / "xpud.conf";
  const fs::path dropin_dir = scratch.path() / "xpud.conf.d";
  fs::remove_all(dropin_dir);

  const auto files =
      xpu::fuzz::split_at_nul(std::string_view(reinterpret_cast<const char*>(data), size), 4);
  scratch.write("xpud.conf", files[0]);
  if (files.size() > 1) fs::create_directory(dropin_dir);
  for (std::size_t i = 1; i < files.size(); ++i)
    scratch.write(fs::path("xpud.conf.d") / (std::to_string(i) + "0-dropin.conf"), files[i]);

  auto config = xpud::load_config(main_file, true);
  if (config) {
    check_loaded(*config);
  } else {
    // "<file>:<line>: <reason>" or "<file>: <reason>", the file being one of those just written.
    check(config.error().starts_with(scratch.path().string() + "/"), "error does not name the file",
          config.error());
  }
  return 0;
}
