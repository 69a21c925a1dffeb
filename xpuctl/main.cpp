// xpuctl: the operator's view of xpud over D-Bus: list, show INDEX, metrics, processes,
// instances, vfio list, each with --json; and, as root, configure-vfs INDEX COUNT, vfio
// bind|unbind TARGET, create-instance INDEX ID BYTES, destroy-instance INDEX ID and reset INDEX,
// and the same two as OCI hooks (hook-create-instance INDEX BYTES [SHARE CLAIM],
// hook-destroy-instance INDEX: the container is the one whose state is on stdin).
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <string>

#include "common/command_line.h"
#include "common/names.h"
#include "common/xpud_client.h"
#include "xpuctl/container_process.h"
#include "xpuctl/json_writer.h"
#include "xpuctl/oci_state.h"
#include "xpuctl/table.h"
#include "xpuctl/vfio_commands.h"

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
      .key("health_warnings")
      .begin_object();
  for (const auto& [kind, text] : d.health_warnings) json.key(kind).value(text);
  json.end_object().key("resets").begin_object();
  for (const auto& [result, count] : d.resets)
    json.key(result).value(static_cast<std::uint64_t>(count));
  json.end_object().end_object();
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

// "16 GT/s x16", or "-" for what the kernel did not tell.
std::string pcie_link_text(const std::map<std::string, double>& values, std::string_view speed_key,
                           std::string_view width_key) {
  const auto speed = metric_value(values, speed_key);
  const auto width = metric_value(values, width_key);
  if (!speed && !width) return "-";
  std::string text = speed ? format_fixed(speed, 1e-9, " GT/s", 1) : "- GT/s";
  return text + " x" + (width ? format_fixed(width, 1, "") : "-");
}

// The kernel's view of the card's PCIe link (GetMetrics' pcie_* keys) and what xpud makes of it.
void add_pcie_rows(xpuctl::Table& table, const xpu::DeviceInfo& d,
                   const std::map<std::string, double>& values) {
  table.add({"PCIe link",
             pcie_link_text(values, metric::kPcieLinkSpeed, metric::kPcieLinkWidth) + " (can do " +
                 pcie_link_text(values, metric::kPcieLinkMaxSpeed, metric::kPcieLinkMaxWidth) +
                 ")"});
  table.add(
      {"PCIe errors (AER)",
       format_fixed(metric_value(values, metric::kPcieAerCorrectable), 1, "") + " correctable, " +
           format_fixed(metric_value(values, metric::kPcieAerNonfatal), 1, "") + " nonfatal, " +
           format_fixed(metric_value(values, metric::kPcieAerFatal), 1, "") + " fatal"});
  for (const auto& [kind, text] : d.health_warnings) {
    std::string row = text;
    row.append(" (").append(kind).append(")");
    table.add({"Warning", std::move(row)});
  }
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
  add_pcie_rows(table, d, values);
  if (!d.resets.empty()) {
    std::string resets;
    for (auto result : xpu::names::reset_result::kAll) {
      auto count = d.resets.find(std::string(result));
      resets += (resets.empty() ? "" : ", ") +
                std::to_string(count == d.resets.end() ? 0 : count->second) + " " +
                std::string(result);
    }
    table.add({"Resets", resets});
  }
  std::fputs(table.render().c_str(), stdout);
  return 0;
}

// After ResetDevice: the card as xpud read it after the reset. xpud goes on checking a card that
// is not Healthy yet for [recovery] check_timeout_ms; `xpuctl show` tells the outcome.
int cmd_reset(xpu::XpudClient& client, unsigned index, std::chrono::milliseconds timeout) {
  const std::string name = xpu::names::device_name(index);
  auto done = client.reset_device(index, timeout);
  if (!done) return fail(done.error());
  auto devices = client.list_devices();
  if (!devices) return fail("reset, but reading it again failed: " + devices.error());
  for (const auto& d : *devices) {
    if (d.index != index) continue;
    if (d.healthy)
      std::printf("%s: reset; Healthy\n", name.c_str());
    else
      std::printf(
          "%s: reset; still Unhealthy: %s (xpud checks it for [recovery] "
          "check_timeout_ms; xpuctl show %u tells the outcome)\n",
          name.c_str(), d.health_reason.c_str(), index);
    return 0;
  }
  return fail(name + " was reset and is gone");
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

int cmd_instances(xpu::XpudClient& client, bool json_output) {
  auto instances = client.list_instances();
  if (!instances) return fail(instances.error());
  if (json_output) {
    xpuctl::JsonWriter json;
    json.begin_array();
    for (const auto& instance : *instances)
      json.begin_object()
          .key("index")
          .value(instance.index)
          .key("id")
          .value(instance.id)
          .key("memory_limit_bytes")
          .value(instance.memory_limit_bytes)
          .key("owner")
          .value(instance.owner)
          .end_object();
    json.end_array();
    std::puts(json.str().c_str());
    return 0;
  }
  xpuctl::Table table({"XPU", "INSTANCE", "MEMORY-LIMIT", "OWNER"});
  for (const auto& instance : *instances)
    table.add({std::to_string(instance.index), instance.id,
               format_mib(static_cast<double>(instance.memory_limit_bytes)),
               instance.owner.empty() ? "-" : instance.owner});
  std::fputs(table.render().c_str(), stdout);
  return 0;
}

// The commands: their names, the operands each takes, and what `--help` says of them.
struct Command {
  std::string_view name;
  std::string_view operands;  // as in the usage line
  std::size_t operand_count;
  std::string_view help;
  std::size_t optional_operands = 0;  // all or none of them, after the others
};
constexpr std::array kCommands = {
    Command{"list", "", 0, "devices, identity and health"},
    Command{"show", "INDEX", 1, "everything about one device"},
    Command{"metrics", "", 0, "current metrics of every device"},
    Command{"processes", "", 0, "the processes using each device, with their pod and container"},
    Command{"instances", "", 0, "the cXPU instances xpud made, with their memory limits"},
    Command{"configure-vfs", "INDEX COUNT", 2,
            "set the SR-IOV virtual functions of physical card INDEX (root)"},
    Command{"create-instance", "INDEX ID BYTES", 3,
            "make cXPU instance ID on card INDEX, its memory bounded to BYTES (root)"},
    Command{"destroy-instance", "INDEX ID", 2, "destroy cXPU instance ID on card INDEX (root)"},
    Command{"reset", "INDEX", 1,
            "reset card INDEX, when xpud.conf's [recovery] allows it and nothing uses the card "
            "(root)"},
    Command{"hook-create-instance", "INDEX BYTES [SHARE CLAIM]", 2,
            "as an OCI createContainer hook: create-instance for the container whose state is on "
            "standard input, bounding memory share SHARE (<claim uid>/<share id>) of claim CLAIM "
            "(<namespace>/<name>) when given (root)",
            2},
    Command{"hook-destroy-instance", "INDEX", 1,
            "as an OCI poststop hook: destroy that container's instance, if it has one (root)"},
    Command{"vfio", "list | bind TARGET | unbind TARGET", 1,
            "the cards and virtual functions on vfio-pci for virtual machines; move card TARGET "
            "(a PCI address, an index or xpuN) there, or back to its driver (root)",
            1},
};

std::string usage_of(const Command& command) {
  return std::string(command.name) + (command.operands.empty() ? "" : " ") +
         std::string(command.operands);
}

// Root only (xpud refuses others). Waits for xpud's answer, which comes after the change (and
// for virtual functions, the discovery that shows them).
constexpr std::chrono::seconds kChangeTimeout{60};

// The container whose OCI state is on standard input.
xpu::Result<xpuctl::OciState> container_from_stdin() {
  std::string state;
  std::array<char, 4096> buffer{};
  std::size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), stdin)) > 0) {
    state.append(buffer.data(), n);
    if (state.size() > xpuctl::kMaxOciStateBytes) break;
  }
  return xpuctl::parse_oci_state(state);
}

// hook-create-instance of a share: "<claim uid>/<share id>" and the claim's "<namespace>/<name>".
int create_share_instance(xpu::XpudClient& client, const xpuctl::OciState& container, unsigned card,
                          std::uint64_t bytes, const std::string& share, const std::string& claim) {
  const std::string name = xpu::names::device_name(card);
  const auto slash = claim.find('/');
  if (slash == std::string::npos || slash == 0)
    xpu::exit_usage_error(kProgram, "CLAIM: <namespace>/<name>, got '" + claim + "'");
  auto process = xpuctl::open_container_process(container.pid);
  if (!process) return fail(name + ": " + process.error());
  const std::string owner = xpuctl::owner_of_container(container, claim.substr(0, slash));
  auto done = client.create_share_instance(card, xpuctl::instance_id_of_container(container.id),
                                           bytes, owner, share, process->get(), kChangeTimeout);
  // The runtime puts this into the container's failed start, which the kubelet's event shows;
  // xpud's message names the card and the share.
  if (!done) return fail("claim " + claim + ": " + done.error());
  return 0;
}

// The hooks an OCI runtime runs for a container with a share of a card (the CDI spec of the
// share names them): they fail the container's creation rather than let it run unbounded, and
// a poststop for a container without an instance is not an error.
int run_hook(xpu::XpudClient& client, const std::vector<std::string>& rest, unsigned card) {
  auto container = container_from_stdin();
  if (!container) return fail(container.error());
  const std::string id = xpuctl::instance_id_of_container(container->id);
  const std::string name = xpu::names::device_name(card);
  if (rest.front() == "hook-create-instance") {
    auto bytes = xpu::parse_uint(rest[2], 1, ~std::uint64_t{0} - 1);
    if (!bytes) xpu::exit_usage_error(kProgram, "BYTES: " + bytes.error());
    if (rest.size() == 5)
      return create_share_instance(client, *container, card, *bytes, rest[3], rest[4]);
    // A spec written by a driver from before shares were named: the card's memory still bounds
    // all its instances together.
    auto done = client.create_instance(card, id, *bytes, xpuctl::owner_of_container(*container),
                                       kChangeTimeout);
    if (!done) return fail(name + ": " + done.error());
    return 0;
  }
  auto done = client.destroy_instance(card, id, kChangeTimeout);
  if (!done && done.error().find(xpu::names::kErrorNoSuchInstance) == std::string::npos)
    return fail(name + ": " + done.error());
  return 0;
}

int run_command(xpu::XpudClient& client, const std::vector<std::string>& rest, bool json_output) {
  const std::string& command = rest.front();
  if (command == "list") return cmd_list(client, json_output);
  if (command == "metrics") return cmd_metrics(client, json_output);
  if (command == "processes") return cmd_processes(client, json_output);
  if (command == "instances") return cmd_instances(client, json_output);
  auto index = xpu::parse_uint(rest[1], 0, 1u << 20);
  if (!index) xpu::exit_usage_error(kProgram, "INDEX: " + index.error());
  const auto card = static_cast<unsigned>(*index);
  const std::string name = xpu::names::device_name(card);
  if (command == "show") return cmd_show(client, card, json_output);
  if (command.rfind("hook-", 0) == 0) return run_hook(client, rest, card);
  if (command == "reset") return cmd_reset(client, card, kChangeTimeout);
  if (command == "configure-vfs") {
    auto count = xpu::parse_uint(rest[2], 0, 65535);
    if (!count) xpu::exit_usage_error(kProgram, "COUNT: " + count.error());
    auto done =
        client.configure_virtual_functions(card, static_cast<unsigned>(*count), kChangeTimeout);
    if (!done) return fail(done.error());
    std::printf("%s: %u virtual functions\n", name.c_str(), static_cast<unsigned>(*count));
    return 0;
  }
  if (command == "create-instance") {
    auto bytes = xpu::parse_uint(rest[3], 1, ~std::uint64_t{0} - 1);
    if (!bytes) xpu::exit_usage_error(kProgram, "BYTES: " + bytes.error());
    auto done = client.create_instance(card, rest[2], *bytes, "", kChangeTimeout);
    if (!done) return fail(done.error());
    std::printf("%s: cXPU instance %s, memory bounded to %llu bytes\n", name.c_str(),
                rest[2].c_str(), static_cast<unsigned long long>(*bytes));
    return 0;
  }
  auto done = client.destroy_instance(card, rest[2], kChangeTimeout);
  if (!done) return fail(done.error());
  std::printf("%s: cXPU instance %s destroyed\n", name.c_str(), rest[2].c_str());
  return 0;
}

int run(const std::vector<std::string>& args) {
  xpu::ClientOptions options;
  xpu::HelpAndVersion flags;
  bool json_output = false;
  std::string usage = "[--bus-address ADDR] [--json] ";
  std::string help = "\nCommands:\n";
  for (const auto& command : kCommands) {
    usage += (&command == kCommands.data() ? "" : " | ") + usage_of(command);
    help += "  " + usage_of(command) + "\n                " + std::string(command.help) + "\n";
  }
  xpu::CommandLine cli(kProgram, usage);
  xpu::add_bus_address_option(cli, options.bus_address,
                              "talk to xpud on the bus at ADDR instead of the system bus");
  cli.add_flag("json", &json_output, "print JSON instead of a table");
  xpu::add_version_flag(cli, flags);
  xpu::add_help_flag(cli, flags);
  const auto rest =
      xpu::parse_program_command_line(cli, args, flags, xpu::Positionals::kCollected, help);
  if (rest.empty()) {
    std::string names;
    for (const auto& command : kCommands)
      names += (names.empty() ? "" : ", ") + std::string(command.name);
    xpu::exit_usage_error(kProgram, "missing command: one of " + names);
  }
  const auto* command = std::find_if(kCommands.begin(), kCommands.end(),
                                     [&](const Command& c) { return c.name == rest.front(); });
  if (command == kCommands.end())
    xpu::exit_usage_error(kProgram, "unknown command '" + rest.front() + "'");
  if (rest.size() != command->operand_count + 1 &&
      rest.size() != command->operand_count + command->optional_operands + 1)
    xpu::exit_usage_error(kProgram, command->operand_count == 0
                                        ? "'" + rest.front() + "' takes no arguments"
                                        : "usage: " + usage_of(*command));
  options.call_timeout = std::chrono::milliseconds(5000);
  if (command->name == "vfio") return xpuctl::run_vfio_command(options, rest, json_output);
  xpu::XpudClient client(options);
  return run_command(client, rest, json_output);
}

}  // namespace

int main(int argc, char** argv) {
  return xpu::run_main(kProgram, argc, argv, run);
}
