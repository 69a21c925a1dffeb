#include "xpud/backends/xpuml/xpuml_metrics.h"

#include <spdlog/spdlog.h>

#include "common/names.h"

namespace xpud::xpuml {
namespace {

namespace metric = xpu::names::metric;

void put(Metrics& out, std::string_view key, double value) {
  out[std::string(key)] = value;
}

// One pool (global or L3): the total must be a real size, the used part must fit in it.
void add_pool(std::uint64_t used, std::uint64_t total, std::string_view used_key,
              std::string_view total_key, std::string_view device, Metrics& out) {
  if (total == 0 || total > kMaxMemoryBytes) {
    spdlog::debug("{}: dropping {} and {}: implausible total {} bytes", device, total_key, used_key,
                  total);
    return;
  }
  put(out, total_key, static_cast<double>(total));
  if (used > total) {
    spdlog::debug("{}: dropping {}: {} bytes used of {} total", device, used_key, used, total);
    return;
  }
  put(out, used_key, static_cast<double>(used));
}

}  // namespace

void add_memory_metrics(const xpumlMemory_t& memory, std::string_view device, Metrics& out) {
  add_pool(memory.usedGlobalMemory, memory.totalGlobalMemory, metric::kMemoryUsed,
           metric::kMemoryTotal, device, out);
  add_pool(memory.usedL3Memory, memory.totalL3Memory, metric::kL3MemoryUsed, metric::kL3MemoryTotal,
           device, out);
}

void add_utilization_metrics(const xpumlUtilization_t& utilization, std::string_view device,
                             Metrics& out) {
  if (utilization.xpu <= kMaxPercent)
    put(out, metric::kUtilization, utilization.xpu / 100.0);
  else
    spdlog::debug("{}: dropping {}: {}%", device, metric::kUtilization, utilization.xpu);
  if (utilization.memory <= kMaxPercent)
    put(out, metric::kMemoryUtilization, utilization.memory / 100.0);
  else
    spdlog::debug("{}: dropping {}: {}%", device, metric::kMemoryUtilization, utilization.memory);
}

void add_temperature_metric(unsigned celsius, std::string_view device, Metrics& out) {
  if (celsius <= kMaxCelsius)
    put(out, metric::kTemperature, celsius);
  else
    spdlog::debug("{}: dropping {}: {} C", device, metric::kTemperature, celsius);
}

void add_power_metric(unsigned milliwatts, std::string_view device, Metrics& out) {
  if (milliwatts <= kMaxMilliwatts)
    put(out, metric::kPower, milliwatts / 1000.0);
  else
    spdlog::debug("{}: dropping {}: {} mW", device, metric::kPower, milliwatts);
}

void add_clock_metric(unsigned mhz, std::string_view device, Metrics& out) {
  // A running card never clocks at 0; 0 is how drivers say "no reading".
  if (mhz > 0 && mhz <= kMaxClockMhz)
    put(out, metric::kClock, mhz * 1e6);
  else
    spdlog::debug("{}: dropping {}: {} MHz", device, metric::kClock, mhz);
}

void add_process_count_metric(unsigned count, std::string_view device, Metrics& out) {
  if (count <= kMaxProcesses)
    put(out, metric::kProcessCount, count);
  else
    spdlog::debug("{}: dropping {}: {}", device, metric::kProcessCount, count);
}

std::vector<ProcessUsage> process_list(std::span<const xpumlProcessInfo_t> entries,
                                       std::string_view device) {
  std::vector<ProcessUsage> processes;
  processes.reserve(entries.size());
  for (const auto& entry : entries) {
    const unsigned pid = entry.root_ns_pid != 0 ? entry.root_ns_pid : entry.pid;
    if (pid == 0 || entry.usedGlobalMemory > kMaxMemoryBytes) {
      spdlog::debug("{}: dropping process entry pid {} (host pid {}) with {} bytes", device,
                    entry.pid, entry.root_ns_pid, entry.usedGlobalMemory);
      continue;
    }
    processes.push_back(ProcessUsage{pid, entry.usedGlobalMemory});
  }
  return processes;
}

std::optional<std::string> fault_from_state(int state) {
  switch (state) {
    case XPUML_DEVICE_STATE_ERROR:
      return "driver reports state ERROR (" + std::to_string(state) + ")";
    case XPUML_DEVICE_STATE_IN_EXCEPTION:
      return "driver reports state IN_EXCEPTION (" + std::to_string(state) + ")";
    case XPUML_DEVICE_STATE_IN_RESET:
      return "driver reports state IN_RESET (" + std::to_string(state) + ")";
    default:
      return std::nullopt;
  }
}

}  // namespace xpud::xpuml
