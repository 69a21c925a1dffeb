// Library readings -> metrics in base units (xpu::names::metric keys). Values no working card
// can report are dropped with a debug log instead of being published.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "xpud/backends/xpuml/xpuml_api.h"
#include "xpud/device.h"

namespace xpud::xpuml {

using Metrics = std::map<std::string, double>;

// Bounds of plausible readings. Generous on purpose: they only catch garbage (all-ones words,
// uninitialised buffers), never a card that is merely hot or busy.
inline constexpr std::uint64_t kMaxMemoryBytes = std::uint64_t{1} << 50;  // 1 PiB
inline constexpr unsigned kMaxPercent = 100;
inline constexpr unsigned kMaxCelsius = 150;
inline constexpr unsigned kMaxMilliwatts = 2'000'000;  // 2 kW
inline constexpr unsigned kMaxClockMhz = 10'000;
inline constexpr unsigned kMaxProcesses = 65'536;

void add_memory_metrics(const xpumlMemory_t& memory, std::string_view device, Metrics& out);
void add_utilization_metrics(const xpumlUtilization_t& utilization, std::string_view device,
                             Metrics& out);
void add_temperature_metric(unsigned celsius, std::string_view device, Metrics& out);
void add_power_metric(unsigned milliwatts, std::string_view device, Metrics& out);
void add_clock_metric(unsigned mhz, std::string_view device, Metrics& out);
void add_process_count_metric(unsigned count, std::string_view device, Metrics& out);

// The library's process entries as xpud publishes them: the PID in the host's namespace
// (root_ns_pid; pid when a library leaves that 0), entries without a PID or with an implausible
// size dropped.
std::vector<ProcessUsage> process_list(std::span<const xpumlProcessInfo_t> entries,
                                       std::string_view device);

// The fault a device state means ("driver reports state ERROR (207)"); nullopt for a usable card.
std::optional<std::string> fault_from_state(int state);

}  // namespace xpud::xpuml
