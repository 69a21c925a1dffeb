#include "xpud/config.h"

#include <ini.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string_view>
#include <system_error>
#include <vector>

#include "common/command_line.h"
#include "common/logging.h"
#include "xpud/cdi/cdi_spec_file.h"

namespace xpud {
namespace {

namespace fs = std::filesystem;

// Applies one key to the config; an error message rejects the value.
using KeyHandler = std::function<xpu::Status(Config&, std::string_view)>;

xpu::Status set_milliseconds(std::chrono::milliseconds& target, std::string_view value,
                             std::uint64_t min, std::uint64_t max) {
  auto ms = xpu::parse_uint(value, min, max);
  if (!ms) return xpu::Error{ms.error()};
  target = std::chrono::milliseconds(*ms);
  return xpu::ok_status();
}

xpu::Status set_bool(bool& target, std::string_view value) {
  if (value != "true" && value != "false")
    return xpu::Error{"'" + std::string(value) + "' is not true or false"};
  target = value == "true";
  return xpu::ok_status();
}

xpu::Status set_absolute_path(fs::path& target, std::string_view value) {
  if (value.empty() || value.front() != '/')
    return xpu::Error{"'" + std::string(value) + "' is not an absolute path"};
  target = fs::path(value).lexically_normal();
  return xpu::ok_status();
}

// A bare library name the loader may search for: a file name, no directory, nothing odd.
bool is_library_file_name(std::string_view name) {
  if (name.empty() || name.size() > 255 || name == "." || name == "..") return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-' || c == '+';
  });
}

// [xpuml] library: blank-separated entries, each an absolute path or a bare file name.
xpu::Status set_xpuml_libraries(std::vector<fs::path>& target, std::string_view value) {
  std::vector<fs::path> libraries;
  std::size_t at = 0;
  while (at < value.size()) {
    if (value[at] == ' ' || value[at] == '\t') {
      ++at;
      continue;
    }
    std::size_t end = at;
    while (end < value.size() && value[end] != ' ' && value[end] != '\t') ++end;
    const std::string_view entry = value.substr(at, end - at);
    at = end;
    if (entry.front() == '/') {
      libraries.push_back(fs::path(entry).lexically_normal());
    } else if (is_library_file_name(entry)) {
      libraries.emplace_back(entry);
    } else {
      return xpu::Error{"'" + std::string(entry) +
                        "' is neither an absolute path nor a bare file name for the loader to "
                        "search (entries are separated by blanks)"};
    }
    if (libraries.size() > kMaxXpumlLibraries)
      return xpu::Error{"more than " + std::to_string(kMaxXpumlLibraries) + " libraries listed"};
  }
  if (libraries.empty()) return xpu::Error{"no library listed"};
  target = std::move(libraries);
  return xpu::ok_status();
}

// [pcie] downtrain / nonfatal: warn | unhealthy.
xpu::Status set_pcie_action(PcieAction& target, std::string_view value) {
  if (value == "warn")
    target = PcieAction::kWarn;
  else if (value == "unhealthy")
    target = PcieAction::kUnhealthy;
  else
    return xpu::Error{"'" + std::string(value) + "' is not warn or unhealthy"};
  return xpu::ok_status();
}

const std::map<std::string, std::map<std::string, KeyHandler>, std::less<>>& schema() {
  static const std::map<std::string, std::map<std::string, KeyHandler>, std::less<>> table = {
      {"daemon",
       {{"backend",
         [](Config& c, std::string_view v) -> xpu::Status {
           if (v != "auto" && v != "xpuml" && v != "sysfs" && v != "sim")
             return xpu::Error{"'" + std::string(v) + "' is not one of auto, xpuml, sysfs, sim"};
           c.backend = std::string(v);
           return xpu::ok_status();
         }},
        {"log_level",
         [](Config& c, std::string_view v) -> xpu::Status {
           auto level = xpu::parse_log_level(v);
           if (!level)
             return xpu::Error{"'" + std::string(v) +
                               "' is not one of error, warn, info, debug, trace"};
           c.log_level = *level;
           return xpu::ok_status();
         }}}},
      {"sampling",
       {{"interval_ms",
         [](Config& c, std::string_view v) {
           return set_milliseconds(c.interval, v, 100, 3600000);
         }},
        {"call_timeout_ms",
         [](Config& c, std::string_view v) {
           return set_milliseconds(c.call_timeout, v, 10, 60000);
         }},
        {"stall_grace_ms",
         [](Config& c, std::string_view v) {
           return set_milliseconds(c.stall_grace, v, 0, 3600000);
         }},
        {"rescan_interval_ms",
         [](Config& c, std::string_view v) {
           return set_milliseconds(c.rescan_interval, v, 1000, 86400000);
         }},
        {"failure_threshold",
         [](Config& c, std::string_view v) -> xpu::Status {
           auto n = xpu::parse_uint(v, 1, 1000);
           if (!n) return xpu::Error{n.error()};
           c.failure_threshold = static_cast<unsigned>(*n);
           return xpu::ok_status();
         }}}},
      {"release_check",
       {{"enabled", [](Config& c, std::string_view v) { return set_bool(c.release_check, v); }},
        {"timeout_ms",
         [](Config& c, std::string_view v) {
           return set_milliseconds(c.release_timeout, v, 0, 86400000);
         }},
        {"idle_memory_mib",
         [](Config& c, std::string_view v) -> xpu::Status {
           // Up to 16 TiB, the largest card [sim] memory_mib may describe.
           auto n = xpu::parse_uint(v, 0, 1u << 24);
           if (!n) return xpu::Error{n.error()};
           c.release_idle_memory_mib = *n;
           return xpu::ok_status();
         }}}},
      {"xpuml",
       {{"library",
         [](Config& c, std::string_view v) { return set_xpuml_libraries(c.xpuml_libraries, v); }}}},
      {"sysfs",
       {{"root",
         [](Config& c, std::string_view v) { return set_absolute_path(c.sysfs_root, v); }}}},
      {"cxpu",
       {{"hook_program",
         [](Config& c, std::string_view v) {
           return set_absolute_path(c.instance_hook_program, v);
         }}}},
      {"topology",
       {{"quirks",
         [](Config& c, std::string_view v) { return set_absolute_path(c.topology_quirks, v); }}}},
      {"sim",
       {{"devices",
         [](Config& c, std::string_view v) -> xpu::Status {
           auto n = xpu::parse_uint(v, 0, 1024);
           if (!n) return xpu::Error{n.error()};
           c.sim_devices = static_cast<unsigned>(*n);
           return xpu::ok_status();
         }},
        {"model",
         [](Config& c, std::string_view v) -> xpu::Status {
           bool valid =
               !v.empty() && v.size() <= 32 && std::all_of(v.begin(), v.end(), [](char ch) {
                 return std::isalnum(static_cast<unsigned char>(ch)) || ch == '-';
               });
           if (!valid)
             return xpu::Error{"'" + std::string(v) +
                               "' is not a model name (letters, digits and '-', at most 32)"};
           c.sim_model = std::string(v);
           return xpu::ok_status();
         }},
        {"memory_mib",
         [](Config& c, std::string_view v) -> xpu::Status {
           auto n = xpu::parse_uint(v, 1, 1u << 24);
           if (!n) return xpu::Error{n.error()};
           c.sim_memory_mib = *n;
           return xpu::ok_status();
         }}}},
      {"sriov",
       {{"allow_cluster_reconfigure",
         [](Config& c, std::string_view v) { return set_bool(c.allow_cluster_reconfigure, v); }}}},
      {"pcie",
       {{"downtrain",
         [](Config& c, std::string_view v) { return set_pcie_action(c.pcie.downtrain, v); }},
        {"nonfatal",
         [](Config& c, std::string_view v) { return set_pcie_action(c.pcie.nonfatal, v); }},
        {"error_hold_ms",
         [](Config& c, std::string_view v) {
           return set_milliseconds(c.pcie.error_hold, v, 1000, 86400000);
         }}}},
      {"recovery",
       {{"enabled", [](Config& c, std::string_view v) { return set_bool(c.recovery.enabled, v); }},
        {"auto", [](Config& c, std::string_view v) { return set_bool(c.recovery.automatic, v); }},
        {"max_resets_per_hour",
         [](Config& c, std::string_view v) -> xpu::Status {
           // At least one (0 would be enabled = false under another name), at most one a minute.
           auto n = xpu::parse_uint(v, 1, 60);
           if (!n) return xpu::Error{n.error()};
           c.recovery.max_resets_per_hour = static_cast<unsigned>(*n);
           return xpu::ok_status();
         }},
        {"unhealthy_for_ms",
         [](Config& c, std::string_view v) {
           return set_milliseconds(c.recovery.unhealthy_for, v, 1000, 86400000);
         }},
        {"check_timeout_ms",
         [](Config& c, std::string_view v) {
           return set_milliseconds(c.recovery.check_timeout, v, 1000, 600000);
         }}}},
      {"cdi",
       {{"enabled",
         [](Config& c, std::string_view v) -> xpu::Status {
           if (v == "auto")
             c.cdi_mode = CdiMode::kAuto;
           else if (v == "true")
             c.cdi_mode = CdiMode::kOn;
           else if (v == "false")
             c.cdi_mode = CdiMode::kOff;
           else
             return xpu::Error{"'" + std::string(v) + "' is not one of auto, true, false"};
           return xpu::ok_status();
         }},
        {"directory",
         [](Config& c, std::string_view v) { return set_absolute_path(c.cdi_directory, v); }},
        {"file",
         [](Config& c, std::string_view v) -> xpu::Status {
           if (xpu::Status status = validate_cdi_spec_file_name(v); !status) return status;
           c.cdi_file = std::string(v);
           return xpu::ok_status();
         }}}},
  };
  return table;
}

struct ParseState {
  Config* config;
  std::string error;  // first error, without the file:line prefix
  std::set<std::pair<std::string, std::string>> seen;
};

int on_key(void* user, const char* section, const char* name, const char* value) {
  auto* state = static_cast<ParseState*>(user);
  if (!state->error.empty()) return 0;
  auto fail = [&](std::string message) {
    state->error = std::move(message);
    return 0;
  };
  const auto& table = schema();
  auto sect = table.find(std::string_view(section));
  if (sect == table.end()) return fail("unknown section [" + std::string(section) + "]");
  auto key = sect->second.find(name);
  if (key == sect->second.end())
    return fail("unknown key '" + std::string(name) + "' in section [" + section + "]");
  if (!state->seen.emplace(section, name).second)
    return fail("duplicate key '" + std::string(name) + "' in section [" + section + "]");
  if (xpu::Status status = key->second(*state->config, value); !status) {
    std::string message =
        "bad value for " + std::string(section) + "." + name + ": " + status.error();
    // inih takes only ';' as the inline comment prefix; '#' starts a comment only at the start of a
    // line, so `backend = auto  # note` is the value "auto  # note".
    if (std::string_view(value).find('#') != std::string_view::npos)
      message += " (an inline comment starts with ';', not '#')";
    return fail(std::move(message));
  }
  return 1;
}

xpu::Status parse_file(const fs::path& path, Config& config) {
  ParseState state{&config, {}, {}};
  int rc = ini_parse(path.c_str(), on_key, &state);
  if (rc == -1) return xpu::Error{path.string() + ": cannot open: " + std::strerror(errno)};
  if (rc == -2) return xpu::Error{path.string() + ": out of memory while parsing"};
  if (rc > 0) {
    // inih reports the first bad line but keeps going, so a handler error may belong to a later
    // line. Re-parse up to the reported line to tell which kind of error that line had.
    std::string reason = "syntax error (expected [section] or key = value)";
    if (!state.error.empty()) {
      std::ifstream in(path);
      std::string prefix, line;
      for (int n = 0; n < rc && std::getline(in, line); ++n) prefix += line + "\n";
      Config scratch;
      ParseState again{&scratch, {}, {}};
      ini_parse_string(prefix.c_str(), on_key, &again);
      if (!again.error.empty()) reason = again.error;
    }
    return xpu::Error{path.string() + ":" + std::to_string(rc) + ": " + reason};
  }
  return xpu::ok_status();
}

}  // namespace

xpu::Result<Config> load_config(const fs::path& path, bool must_exist) {
  Config config;
  std::error_code ec;
  if (fs::exists(path, ec)) {
    if (xpu::Status status = parse_file(path, config); !status) return xpu::Error{status.error()};
  } else if (must_exist) {
    return xpu::Error{path.string() + ": no such file"};
  }

  auto dropins = config_dropins(path);
  if (!dropins) return xpu::Error{dropins.error()};
  for (const auto& dropin : *dropins)
    if (xpu::Status status = parse_file(dropin, config); !status) return xpu::Error{status.error()};
  return config;
}

xpu::Result<std::vector<fs::path>> config_dropins(const fs::path& path) {
  std::error_code ec;
  fs::path dropin_dir = path;
  dropin_dir += ".d";
  std::vector<fs::path> dropins;
  if (!fs::is_directory(dropin_dir, ec)) return dropins;
  for (const auto& entry : fs::directory_iterator(dropin_dir, ec)) {
    if (entry.path().extension() == ".conf" && entry.is_regular_file(ec))
      dropins.push_back(entry.path());
  }
  if (ec) return xpu::Error{dropin_dir.string() + ": cannot list: " + ec.message()};
  std::sort(dropins.begin(), dropins.end());
  return dropins;
}

}  // namespace xpud
