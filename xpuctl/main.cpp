// xpuctl: the operator's view of xpud over D-Bus: list, show INDEX, metrics, processes, each
// with --json; and, as root, configure-vfs INDEX COUNT.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <string>

#include "common/command_line.h"
#include "common/names.h"
#include "common/xpud_client.h"
#include "xpuctl/json_writer.h"
#include "xpuctl/table.h"

namespace {

constexpr const char* kProgram = "xpuctl";
namespace metric = xpu::names::metric;

std::optional<double> metric_value(const std::map<std::string, double>& values,
                                   std::string_view key) {
  auto it = values.find(std::string(key));
  if (it == values.end()) return std::nullopt;
  return it->second;
}

std::string format_mib(std::optional<double> bytes) {
  if (!bytes) return "-";
  return std::to_string(static_cast<unsigned long long>(std::llround(*bytes / (1024.0 * 1024.0)))) +
         "MiB";
}

std::string format_fixed(std::optional<double> value, double scale, const char* unit,
                         int decimals = 0) {
  if (!value) return "-";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f%s", decimals, *value * scale, unit);
  return buf;
}

std::string format_index_list(const std::vector<unsigned>& indices) {
  std::string out;
  for (unsigned index : indices) out += (out.empty() ? "" : ",") + std::to_string(index);
  return out.empty() ? "-" : out;
}

std::string health_text(const xpu::DeviceInfo& d) {
  return d.healthy ? "Healthy" : "Unhealthy (" + d.health_reason + ")";
}

void write_device_json(xpuctl::JsonWriter& json, const xpu::DeviceInfo& d) {
  json.begin_object()
      .key("index")
      .value(d.index)
      .key("name")
      .value(d.name)
      .key("uuid")
      .value(d.uuid)
      .key("serial")
      .value(d.serial)
      .key("model")
      .value(d.model)
      .key("pci_bus_id")
      .value(d.pci_bus_id)
      .key("pcie_root")
      .value(d.pcie_root)
      .key("numa_node")
      .value(d.numa_node)
      .key("memory_total_bytes")
      .value(static_cast<std::uint64_t>(d.memory_total_bytes))
      .key("device_nodes")
      .begin_array();
  for (const auto& node : d.device_nodes) json.value(node);
  json.end_array().key("linked_devices").begin_array();
  for (unsigned index : d.linked_devices) json.value(index);
  json.end_array()
      .key("is_virtual_function")
      .value(d.is_virtual_function)
      .key("sriov_enabled")
      .value(d.sriov_enabled)
      .key("health")
      .value(d.healthy ? "Healthy" : "Unhealthy")
      .key("health_reason")
      .value(d.health_reason)
      .end_object();
}

void write_metrics_json(xpuctl::JsonWriter& json, const std::map<std::string, double>& values) {
  json.begin_object();
  for (const auto& [key, value] : values) json.key(key).value(value);
  json.end_object();
}

// Prints {"timestamp_usec": T, "devices": [{"index": I, ...}, ...]}: `write_members` writes the
// members of each device's object after its index.
template <typename Device, typename WriteMembers>
void print_snapshot_json(std::uint64_t timestamp_usec, const std::vector<Device>& devices,
                         WriteMembers write_members) {
  xpuctl::JsonWriter json;
  json.begin_object().key("timestamp_usec").value(timestamp_usec).key("devices").begin_array();
  for (const auto& device : devices) {
    json.begin_object().key("index").value(device.index);
    write_members(json, device);
    json.end_object();
  }
  json.end_array().end_object();
  std::printf("%s\n", json.str().c_str());
}

int fail(const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", kProgram, message.c_str());
  return 1;
}

int cmd_list(xpu::XpudClient& client, bool json_output) {
  auto manager = client.manager_info();
  if (!manager) return fail(manager.error());
  auto devices = client.list_devices();
  if (!devices) return fail(devices.error());
  if (json_output) {
    xpuctl::JsonWriter json;
    json.begin_object()
        .key("version")
        .value(manager->version)
        .key("backend")
        .value(manager->backend)
        .key("library_path")
        .value(manager->library_path)
        .key("driver_version")
        .value(manager->driver_version)
        .key("device_count")
        .value(manager->device_count)
        .key("healthy_device_count")
        .value(manager->healthy_device_count)
        .key("devices")
        .begin_array();
    for (const auto& d : *devices) write_device_json(json, d);
    json.end_array().end_object();
    std::printf("%s\n", json.str().c_str());
    return 0;
  }
  const auto sriov_pfs = std::count_if(devices->begin(), devices->end(),
                                       [](const xpu::DeviceInfo& d) { return d.sriov_enabled; });
  // A PF with SR-IOV on is listed but no pod gets it: say so where the counts are read.
  const std::string not_offered = sriov_pfs == 0 ? ""
                                                 : ", " + std::to_string(sriov_pfs) +
                                                       (sriov_pfs == 1 ? " PF" : " PFs") +
                                                       " with SR-IOV on (not offered)";
  // The library file beside the backend: which of [xpuml] library's candidates is in use.
  const std::string backend = manager->library_path.empty()
                                  ? manager->backend
                                  : manager->backend + " (" + manager->library_path + ")";
  std::printf("xpud %s  backend %s  driver %s  %u devices, %u healthy%s\n\n",
              manager->version.c_str(), backend.c_str(),
              manager->driver_version.empty() ? "unknown" : manager->driver_version.c_str(),
              manager->device_count, manager->healthy_device_count, not_offered.c_str());
  xpuctl::Table table(
      {"XPU", "MODEL", "UUID", "PCI BUS ID", "PCIE ROOT", "NUMA", "MEMORY", "LINKS", "HEALTH"});
  for (const auto& d : *devices) {
    const char* kind = d.is_virtual_function ? " (VF)" : d.sriov_enabled ? " (PF, SR-IOV on)" : "";
    table.add({std::to_string(d.index), d.model + kind, d.uuid, d.pci_bus_id,
               d.pcie_root.empty() ? "-" : d.pcie_root,
               d.numa_node < 0 ? "-" : std::to_string(d.numa_node),
               d.memory_total_bytes ? format_mib(static_cast<double>(d.memory_total_bytes)) : "-",
               format_index_list(d.linked_devices), health_text(d)});
  }
  std::fputs(table.render().c_str(), stdout);
  return 0;
}

int cmd_show(xpu::XpudClient& client, unsigned index, bool json_output) {
  auto devices = client.list_devices();
  if (!devices) return fail(devices.error());
  const xpu::DeviceInfo* device = nullptr;
  for (const auto& d : *devices)
    if (d.index == index) device = &d;
  if (device == nullptr) return fail("no device with index " + std::to_string(index));
  auto snapshot = client.get_metrics();
  if (!snapshot) return fail(snapshot.error());
  std::map<std::string, double> values;
  for (const auto& m : snapshot->devices)
    if (m.index == index) values = m.values;

  if (json_output) {
    xpuctl::JsonWriter json;
    json.begin_object().key("device");
    write_device_json(json, *device);
    json.key("timestamp_usec")
        .value(static_cast<std::uint64_t>(snapshot->timestamp_usec))
        .key("metrics");
    write_metrics_json(json, values);
    json.end_object();
    std::printf("%s\n", json.str().c_str());
    return 0;
  }
  const auto& d = *device;
  std::string nodes;
  for (const auto& node : d.device_nodes) nodes += (nodes.empty() ? "" : " ") + node;
  xpuctl::Table table({"Name", d.name});
  table.add({"Model", d.model});
  table.add({"UUID", d.uuid});
  table.add({"Serial", d.serial.empty() ? "-" : d.serial});
  table.add({"PCI bus id", d.pci_bus_id});
  table.add({"PCIe root", d.pcie_root.empty() ? "unknown" : d.pcie_root});
  table.add({"NUMA node", d.numa_node < 0 ? "unknown" : std::to_string(d.numa_node)});
  table.add({"Virtual function", d.is_virtual_function ? "yes" : "no"});
  if (d.sriov_enabled) table.add({"SR-IOV", "on (not offered to pods; its virtual functions are)"});
  table.add({"Device nodes", nodes});
  table.add({"Linked devices", format_index_list(d.linked_devices)});
  table.add({"Health", health_text(d)});
  table.add({"Memory",
             format_mib(metric_value(values, metric::kMemoryUsed)) + " / " +
                 format_mib(d.memory_total_bytes
                                ? std::optional<double>(static_cast<double>(d.memory_total_bytes))
                                : std::nullopt)});
  table.add({"L3 memory", format_mib(metric_value(values, metric::kL3MemoryUsed)) + " / " +
                              format_mib(metric_value(values, metric::kL3MemoryTotal))});
  table.add({"Utilization", format_fixed(metric_value(values, metric::kUtilization), 100, "%")});
  table.add({"Memory utilization",
             format_fixed(metric_value(values, metric::kMemoryUtilization), 100, "%")});
  table.add({"Temperature", format_fixed(metric_value(values, metric::kTemperature), 1, "C")});
  table.add({"Power", format_fixed(metric_value(values, metric::kPower), 1, "W", 1)});
  table.add({"Clock", format_fixed(metric_value(values, metric::kClock), 1e-6, "MHz")});
  table.add({"Processes", format_fixed(metric_value(values, metric::kProcessCount), 1, "")});
  std::fputs(table.render().c_str(), stdout);
  return 0;
}

int cmd_metrics(xpu::XpudClient& client, bool json_output) {
  auto snapshot = client.get_metrics();
  if (!snapshot) return fail(snapshot.error());
  if (json_output) {
    print_snapshot_json(snapshot->timestamp_usec, snapshot->devices,
                        [](xpuctl::JsonWriter& json, const auto& m) {
                          json.key("metrics");
                          write_metrics_json(json, m.values);
                        });
    return 0;
  }
  xpuctl::Table table(
      {"XPU", "UTIL", "MEM-UTIL", "MEMORY-USAGE", "L3-USAGE", "TEMP", "POWER", "CLOCK", "PROCS"});
  for (const auto& m : snapshot->devices) {
    const auto& v = m.values;
    table.add({std::to_string(m.index),
               format_fixed(metric_value(v, metric::kUtilization), 100, "%"),
               format_fixed(metric_value(v, metric::kMemoryUtilization), 100, "%"),
               format_mib(metric_value(v, metric::kMemoryUsed)) + " / " +
                   format_mib(metric_value(v, metric::kMemoryTotal)),
               format_mib(metric_value(v, metric::kL3MemoryUsed)) + " / " +
                   format_mib(metric_value(v, metric::kL3MemoryTotal)),
               format_fixed(metric_value(v, metric::kTemperature), 1, "C"),
               format_fixed(metric_value(v, metric::kPower), 1, "W", 1),
               format_fixed(metric_value(v, metric::kClock), 1e-6, "MHz"),
               format_fixed(metric_value(v, metric::kProcessCount), 1, "")});
  }
  std::fputs(table.render().c_str(), stdout);
  return 0;
}

int cmd_processes(xpu::XpudClient& client, bool json_output) {
  auto snapshot = client.get_processes();
  if (!snapshot) return fail(snapshot.error());
  if (json_output) {
    print_snapshot_json(snapshot->timestamp_usec, snapshot->devices,
                        [](xpuctl::JsonWriter& json, const auto& d) {
                          json.key("processes").begin_array();
                          for (const auto& p : d.processes)
                            json.begin_object()
                                .key("pid")
                                .value(p.pid)
                                .key("memory_used_bytes")
                                .value(static_cast<std::uint64_t>(p.memory_used_bytes))
                                .key("pod_uid")
                                .value(p.pod_uid)
                                .key("container_id")
                                .value(p.container_id)
                                .end_object();
                          json.end_array();
                        });
    return 0;
  }
  if (snapshot->devices.empty()) {
    std::puts("The backend cannot list the processes using the cards.");
    return 0;
  }
  xpuctl::Table table({"XPU", "PID", "MEMORY", "POD-UID", "CONTAINER"});
  for (const auto& d : snapshot->devices)
    for (const auto& p : d.processes)
      table.add({std::to_string(d.index), std::to_string(p.pid),
                 format_mib(static_cast<double>(p.memory_used_bytes)),
                 p.pod_uid.empty() ? "-" : p.pod_uid,
                 p.container_id.empty() ? "-" : p.container_id.substr(0, 12)});
  std::fputs(table.render().c_str(), stdout);
  return 0;
}

// Root only (xpud refuses others). Waits for xpud's answer, which comes after the change and
// the discovery that shows the new virtual functions.
int cmd_configure_vfs(xpu::XpudClient& client, unsigned index, unsigned count) {
  auto done = client.configure_virtual_functions(index, count, std::chrono::seconds(60));
  if (!done) return fail(done.error());
  std::printf("%s: %u virtual functions\n", xpu::names::device_name(index).c_str(), count);
  return 0;
}

int run(const std::vector<std::string>& args) {
  xpu::ClientOptions options;
  xpu::HelpAndVersion flags;
  bool json_output = false;
  xpu::CommandLine cli(kProgram,
                       "[--bus-address ADDR] list | show INDEX | metrics | processes [--json] | "
                       "configure-vfs INDEX COUNT");
  xpu::add_bus_address_option(cli, options.bus_address,
                              "talk to xpud on the bus at ADDR instead of the system bus");
  cli.add_flag("json", &json_output, "print JSON instead of a table");
  xpu::add_version_flag(cli, flags);
  xpu::add_help_flag(cli, flags);
  const auto rest = xpu::parse_program_command_line(
      cli, args, flags, xpu::Positionals::kCollected,
      "\nCommands:\n  list          devices, identity and health\n"
      "  show INDEX    everything about one device\n"
      "  metrics       current metrics of every device\n"
      "  processes     the processes using each device, with their pod and container\n"
      "  configure-vfs INDEX COUNT\n"
      "                set the SR-IOV virtual functions of physical card INDEX (root)\n");
  if (rest.empty())
    xpu::exit_usage_error(
        kProgram,
        "missing command: list, show INDEX, metrics, processes or configure-vfs INDEX COUNT");
  const std::string& command = rest.front();
  const size_t expected_args = command == "show" ? 2 : command == "configure-vfs" ? 3 : 1;
  if (command != "list" && command != "show" && command != "metrics" && command != "processes" &&
      command != "configure-vfs")
    xpu::exit_usage_error(kProgram, "unknown command '" + command + "'");
  if (rest.size() != expected_args)
    xpu::exit_usage_error(kProgram, command == "show" ? "show needs exactly one INDEX"
                                    : command == "configure-vfs"
                                        ? "configure-vfs needs INDEX and COUNT"
                                        : "'" + command + "' takes no arguments");
  options.call_timeout = std::chrono::milliseconds(5000);
  xpu::XpudClient client(options);
  if (command == "list") return cmd_list(client, json_output);
  if (command == "metrics") return cmd_metrics(client, json_output);
  if (command == "processes") return cmd_processes(client, json_output);
  auto index = xpu::parse_uint(rest[1], 0, 1u << 20);
  if (!index) xpu::exit_usage_error(kProgram, "INDEX: " + index.error());
  if (command == "configure-vfs") {
    auto count = xpu::parse_uint(rest[2], 0, 65535);
    if (!count) xpu::exit_usage_error(kProgram, "COUNT: " + count.error());
    return cmd_configure_vfs(client, static_cast<unsigned>(*index), static_cast<unsigned>(*count));
  }
  return cmd_show(client, static_cast<unsigned>(*index), json_output);
}

}  // namespace

int main(int argc, char** argv) {
  return xpu::run_main(kProgram, argc, argv, run);
}
