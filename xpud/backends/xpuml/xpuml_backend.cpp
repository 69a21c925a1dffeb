#include "xpud/backends/xpuml/xpuml_backend.h"

#include <array>
#include <cstring>
#include <map>
#include <set>
#include <span>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "common/names.h"
#include "xpud/backends/cxpu_instances.h"
#include "xpud/backends/device_uuid.h"
#include "xpud/backends/pci_ids.h"
#include "xpud/backends/pcie_link.h"
#include "xpud/backends/pcie_root.h"
#include "xpud/backends/sriov_numvfs.h"
#include "xpud/backends/sysfs/pci_function_scan.h"
#include "xpud/backends/sysfs_attribute.h"
#include "xpud/backends/topology_links.h"
#include "xpud/backends/virtual_functions.h"
#include "xpud/backends/xpuml/cxpu_calls.h"
#include "xpud/backends/xpuml/discovery_warnings.h"
#include "xpud/backends/xpuml/identity_rules.h"
#include "xpud/backends/xpuml/process_query.h"
#include "xpud/backends/xpuml/xpuml_library.h"
#include "xpud/backends/xpuml/xpuml_metrics.h"

namespace xpud {
namespace {

using xpuml::Library;

// More devices than any host can hold: a count beyond it is garbage, not hardware.
constexpr unsigned kMaxDevices = 4096;
// Buffers for strings the library writes (serial, name, UUID, versions).
constexpr std::size_t kTextBufferSize = 128;
// Serials travel where device ids do (D-Bus, exporter labels): the same limit.
constexpr std::size_t kMaxSerialLength = kMaxDeviceUuidLength;
constexpr std::string_view kDeviceLost = "device lost";

// What read() needs to reach a card found by the last discover().
struct Card {
  xpumlDevice_t handle;
  std::string uuid;
  unsigned last_process_count = 0;  // where the next process query starts
};

// How a change's messages name the card: "xpu0 (0000:3b:00.0)".
std::string subject_of(const DeviceIdentity& device) {
  return xpu::names::device_name(device.index) + " (" + device.pci_bus_id + ")";
}

DriverChangeError card_gone(const DeviceIdentity& device) {
  return {DriverChangeError::Kind::NoSuchDevice,
          subject_of(device) + " was not found by the last discovery"};
}

class XpumlBackend final : public Backend,
                           public VirtualFunctionControl,
                           public CxpuInstanceControl {
 public:
  XpumlBackend(std::unique_ptr<Library> library, std::filesystem::path sysfs_root,
               std::shared_ptr<const topology::LinkTable> links)
      : library_(std::move(library)),
        sysfs_root_(std::move(sysfs_root)),
        links_(std::move(links)) {}

  std::string_view name() const override { return "xpuml"; }
  // Fixed for the backend's life (the file the loader opened), so any thread may ask.
  std::string library_path() const override { return library_->path().string(); }
  // Called with every discovery (sampler.cpp): a failure is warned about once until a read works.
  std::string driver_version() override;
  xpu::Result<std::vector<DeviceIdentity>> discover() override;
  DeviceReading read(const DeviceIdentity& device) override;
  VirtualFunctionControl* virtual_functions() override { return this; }
  std::optional<DriverChangeError> set_virtual_function_count(const DeviceIdentity& device,
                                                              unsigned count) override;
  // Only with a library that has all three cXPU calls; the symbols never change, so any thread
  // may ask.
  CxpuInstanceControl* cxpu_instances() override {
    return library_->symbols().has_cxpu_instances() ? this : nullptr;
  }
  std::optional<DriverChangeError> create_instance(const DeviceIdentity& device,
                                                   const std::string& id,
                                                   std::uint64_t memory_limit_bytes) override;
  std::optional<DriverChangeError> set_instance_memory_limit(
      const DeviceIdentity& device, const std::string& id,
      std::uint64_t memory_limit_bytes) override;
  std::optional<DriverChangeError> destroy_instance(const DeviceIdentity& device,
                                                    const std::string& id) override;

 private:
  struct Discovered {
    unsigned library_index = 0;
    xpumlDevice_t handle{};
    DeviceIdentity identity;  // uuid empty until discover() derives it, unless the library gave one
    std::string pci_model;    // the board name the PCI ids give, which derived ids use
    topology::CardKey topology_key;  // what finds the card's board in the link table
  };

  // The handle of `device` as the last discover() found it; nullopt when it is gone (or another
  // card has its index now).
  std::optional<xpumlDevice_t> handle_of(const DeviceIdentity& device) const;

  // The card at `library_index`: its handle and identity.
  // `chips_at_address` counts the library's devices per PCI address so far (a K200's two chips
  // share one); identify adds this one.
  xpu::Result<Discovered> identify(unsigned library_index,
                                   std::map<std::string, unsigned>& chips_at_address);
  xpu::Result<Discovered> read_identity(unsigned library_index, xpumlDevice_t handle,
                                        std::map<std::string, unsigned>& chips_at_address);
  // The answer of an optional text call (name, UUID).
  xpuml::Answer<std::string> ask_text(
      const xpuml::Function<xpumlReturn_t (*)(xpumlDevice_t, char*, unsigned)>& function,
      xpumlDevice_t handle, const std::string& subject, xpumlReturn_t* code);
  std::optional<std::string> read_text(
      const xpuml::Function<xpumlReturn_t (*)(xpumlDevice_t, char*, unsigned)>& function,
      xpumlDevice_t handle, const std::string& subject);

  std::unique_ptr<Library> library_;
  const std::filesystem::path sysfs_root_;
  // Owned by the sampler's driver thread, the only caller of discover() and read().
  std::map<unsigned, Card> cards_;                  // by host index, from the last discover()
  std::map<unsigned, Discovered> last_discovered_;  // by library index
  unsigned last_count_ = 0;
  xpuml::DiscoveryWarnings warnings_;
  topology::LinkAssigner links_;
  bool version_failure_warned_ = false;
  // Cards whose name differs from their library position, already logged (info, once each).
  std::set<std::string> order_notes_logged_;
};

std::string XpumlBackend::driver_version() {
  std::array<char, kTextBufferSize> buffer{};
  const auto& function = library_->symbols().system_get_driver_version;
  xpumlReturn_t rc = library_->call(function, buffer.data(), static_cast<unsigned>(buffer.size()));
  auto text =
      rc == XPUML_SUCCESS ? xpuml::text_from_library(buffer.data(), buffer.size()) : std::nullopt;
  if (!text) {
    const std::string problem = rc != XPUML_SUCCESS
                                    ? library_->error_message(function.name, "system", rc)
                                    : std::string(function.name) + " returned no printable version";
    spdlog::log(version_failure_warned_ ? spdlog::level::debug : spdlog::level::warn, "{}",
                problem);
    version_failure_warned_ = true;
    return {};
  }
  version_failure_warned_ = false;
  return *text;
}

std::optional<std::string> XpumlBackend::read_text(
    const xpuml::Function<xpumlReturn_t (*)(xpumlDevice_t, char*, unsigned)>& function,
    xpumlDevice_t handle, const std::string& subject) {
  std::array<char, kTextBufferSize> buffer{};
  xpumlReturn_t rc =
      library_->call(function, handle, buffer.data(), static_cast<unsigned>(buffer.size()));
  if (rc != XPUML_SUCCESS) {
    spdlog::debug("{}", library_->error_message(function.name, subject, rc));
    return std::nullopt;
  }
  auto text = xpuml::text_from_library(buffer.data(), buffer.size());
  if (!text)
    warnings_.warn("{}({}): returned no printable text; ignoring it", function.name, subject);
  return text;
}

xpuml::Answer<std::string> XpumlBackend::ask_text(
    const xpuml::Function<xpumlReturn_t (*)(xpumlDevice_t, char*, unsigned)>& function,
    xpumlDevice_t handle, const std::string& subject, xpumlReturn_t* code) {
  *code = XPUML_SUCCESS;
  xpuml::Answer<std::string> answer;
  answer.available = function.available();
  if (!answer.available) return answer;
  std::array<char, kTextBufferSize> buffer{};
  xpumlReturn_t rc =
      library_->call(function, handle, buffer.data(), static_cast<unsigned>(buffer.size()));
  *code = rc;
  if (rc != XPUML_SUCCESS)
    answer.failure = library_->error_message(function.name, subject, rc);
  else
    answer.value = xpuml::text_from_library(buffer.data(), buffer.size());
  return answer;
}

xpu::Result<XpumlBackend::Discovered> XpumlBackend::identify(
    unsigned library_index, std::map<std::string, unsigned>& chips_at_address) {
  const auto& function = library_->symbols().device_get_handle_by_index;
  xpumlDevice_t handle{};
  xpumlReturn_t rc = library_->call(function, library_index, &handle);
  if (rc != XPUML_SUCCESS)
    return xpu::Error{
        library_->error_message(function.name, "index " + std::to_string(library_index), rc)};
  return read_identity(library_index, handle, chips_at_address);
}

// Gathers what the library and sysfs say about the card, then applies identity_rules.h.
xpu::Result<XpumlBackend::Discovered> XpumlBackend::read_identity(
    unsigned library_index, xpumlDevice_t handle,
    std::map<std::string, unsigned>& chips_at_address) {
  const auto& sym = library_->symbols();
  const std::string subject = "index " + std::to_string(library_index);
  Discovered found;
  found.library_index = library_index;
  found.handle = handle;
  DeviceIdentity& id = found.identity;

  // The PCI address is what ties the card to sysfs, the exporter's labels and the operator's
  // lspci; a card without one cannot be identified.
  xpumlPciInfo_t pci{};
  xpumlReturn_t rc = library_->call(sym.device_get_pci_info, handle, &pci);
  if (rc != XPUML_SUCCESS)
    return xpu::Error{library_->error_message(sym.device_get_pci_info.name, subject, rc)};
  const std::string reported_bus_id(pci.busId, ::strnlen(pci.busId, sizeof pci.busId));
  const auto bus_id = pci::normalize_bus_id(reported_bus_id);
  if (!bus_id) {
    std::string shown = reported_bus_id;
    for (char& c : shown)
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
    return xpu::Error{std::string(sym.device_get_pci_info.name) + "(" + subject +
                      "): malformed PCI bus id \"" + shown + "\""};
  }
  id.pci_bus_id = *bus_id;
  const unsigned chip = chips_at_address[id.pci_bus_id]++;
  const topology::PciMatch pci_ids{static_cast<std::uint16_t>(pci.pciDeviceId & 0xffff),
                                   static_cast<std::uint16_t>(pci.pciDeviceId >> 16),
                                   static_cast<std::uint16_t>(pci.pciSubSystemId & 0xffff),
                                   static_cast<std::uint16_t>(pci.pciSubSystemId >> 16)};
  const auto pci_model = pci::model_from_pci_ids(
      pci_ids.vendor, pci_ids.device, pci_ids.subsystem_vendor, pci_ids.subsystem_device);
  found.topology_key.pci = pci_ids;

  // XPU_IS_LOST on any identity call means the card is gone: skip it like an unreadable one.
  auto lost = [&](xpumlReturn_t code, std::string_view function) -> std::optional<xpu::Error> {
    if (code != XPUML_ERROR_XPU_IS_LOST) return std::nullopt;
    return xpu::Error{library_->error_message(function, subject, code)};
  };

  // bus_id is normalised, so it cannot lead out of the devices directory.
  const auto function_dir = sysfs_root_ / "sys/bus/pci/devices" / id.pci_bus_id;
  xpuml::NamingInputs naming;
  naming.subject = subject + " (" + id.pci_bus_id + ")";
  naming.library_index = library_index;
  naming.chip = chip;
  naming.physical_id.available = sym.device_get_id.available();
  if (naming.physical_id.available) {
    int physical_id = -1;
    rc = library_->call(sym.device_get_id, handle, &physical_id);
    if (auto e = lost(rc, sym.device_get_id.name)) return *e;
    if (rc == XPUML_SUCCESS)
      naming.physical_id.value = physical_id;
    else
      naming.physical_id.failure = library_->error_message(sym.device_get_id.name, subject, rc);
  }
  naming.class_nodes = sysfs::published_device_nodes(function_dir);
  const auto name = xpuml::choose_name(naming);
  if (name.warning) warnings_.add(*name.warning);
  if (name.differs_from_library_order &&
      order_notes_logged_.insert(*name.differs_from_library_order).second)
    spdlog::info("{}", *name.differs_from_library_order);
  id.index = name.index;

  std::optional<xpumlDeviceAttributes_t> attributes{xpumlDeviceAttributes_t{}};
  rc = library_->call(sym.device_get_attributes, handle, &*attributes);
  if (auto e = lost(rc, sym.device_get_attributes.name)) return *e;
  if (rc != XPUML_SUCCESS) {
    spdlog::debug("{}", library_->error_message(sym.device_get_attributes.name, subject, rc));
    attributes.reset();
  }
  if (attributes) {
    found.topology_key.board_id = attributes->boardId;
    found.topology_key.model_id = attributes->modelId;
  }

  if (auto serial = read_text(sym.device_get_serial, handle, subject)) {
    if (serial->size() <= kMaxSerialLength)
      id.serial = *serial;
    else
      warnings_.warn("{}({}): serial longer than {} characters; ignoring it",
                     sym.device_get_serial.name, subject, kMaxSerialLength);
  }

  std::optional<int> mode{XPUML_HOST_VXPU_NON_SRIOV};
  rc = library_->call(sym.device_get_host_vxpu_mode, handle, &*mode);
  if (auto e = lost(rc, sym.device_get_host_vxpu_mode.name)) return *e;
  if (rc != XPUML_SUCCESS) {
    spdlog::debug("{}", library_->error_message(sym.device_get_host_vxpu_mode.name, subject, rc));
    mode.reset();
  }

  xpuml::ModelInputs model_inputs;
  model_inputs.pci_model = pci_model;
  if (attributes) {
    model_inputs.board_id = attributes->boardId;
    model_inputs.model_id = attributes->modelId;
  }
  if (sym.device_get_name.available())
    model_inputs.library_name = read_text(sym.device_get_name, handle, subject);
  id.model = xpuml::choose_model(model_inputs);
  // The sysfs backend sees only the PCI ids (a K100 is a "K200" there): derived ids use that
  // name, so the card keeps its id under either backend. Without Kunlunxin PCI ids from the
  // library there is nothing better than our own name.
  found.pci_model = pci_model ? pci_model->model : id.model;

  const auto role = xpuml::choose_sriov_role({pci_model, model_inputs.model_id, mode});
  id.is_virtual_function = role.is_virtual_function;
  id.sriov_enabled = role.sriov_enabled;

  std::optional<xpumlMemory_t> memory{xpumlMemory_t{}};
  rc = library_->call(sym.device_get_memory_info, handle, &*memory);
  if (auto e = lost(rc, sym.device_get_memory_info.name)) return *e;
  if (rc != XPUML_SUCCESS) memory.reset();
  if (auto total = xpuml::choose_memory_total(memory, attributes)) id.memory_total_bytes = *total;

  // UUID: the library's when it gives a usable one; discover() derives the others.
  xpumlReturn_t uuid_rc = XPUML_SUCCESS;
  const auto uuid_answer = ask_text(sym.device_get_uuid, handle, subject, &uuid_rc);
  if (auto e = lost(uuid_rc, sym.device_get_uuid.name)) return *e;
  const auto uuid = xpuml::choose_uuid(uuid_answer, subject);
  if (uuid.warning) warnings_.add(*uuid.warning);
  id.uuid = uuid.uuid;

  const auto numa = xpuml::choose_numa_node(
      sysfs::parse_attribute(function_dir / "numa_node", sysfs::parse_numa_node), id.pci_bus_id);
  if (numa.warning) warnings_.add(*numa.warning);
  id.numa_node = numa.node;
  id.pcie_root = sysfs::read_pcie_root(function_dir, id.pci_bus_id);
  if (id.is_virtual_function)
    if (auto pf = sysfs::symlink_target_name(function_dir / "physfn"))
      if (auto bus_id = pci::normalize_bus_id(*pf)) id.physical_function = *bus_id;

  id.device_nodes = {xpu::names::device_node(id.index), std::string(xpu::names::kControlNode)};
  // linked_devices: set by discover() from the topology quirk table, once every card is known.
  return found;
}

xpu::Result<std::vector<DeviceIdentity>> XpumlBackend::discover() {
  const auto& sym = library_->symbols();
  unsigned count = 0;
  xpumlReturn_t rc = library_->call(sym.device_get_count, &count);
  if (rc != XPUML_SUCCESS)
    return xpu::Error{library_->error_message(sym.device_get_count.name, "system", rc)};
  if (count > kMaxDevices)
    return xpu::Error{std::string(sym.device_get_count.name) + " reports " + std::to_string(count) +
                      " devices; more than " + std::to_string(kMaxDevices) + " is not a real host"};

  std::map<unsigned, Discovered> by_index;
  std::map<std::string, unsigned> library_chips_at_address;
  for (unsigned i = 0; i < count; ++i) {
    auto found = identify(i, library_chips_at_address);
    if (!found) {
      // A card already published keeps its last identity, so that read() reports it as lost
      // or failing (Unhealthy) rather than the card silently vanishing; a card leaves only
      // when the library stops counting it. Library indices are only comparable while the
      // count stays the same.
      auto last = last_discovered_.find(i);
      if (count != last_count_ || last == last_discovered_.end()) {
        warnings_.warn("skipping device: {}", found.error());
        continue;
      }
      warnings_.warn("{} ({}): {}; keeping its last known identity",
                     xpu::names::device_name(last->second.identity.index),
                     last->second.identity.pci_bus_id, found.error());
      found = last->second;
    }
    const unsigned index = found->identity.index;
    if (auto taken = by_index.find(index); taken != by_index.end()) {
      warnings_.warn("skipping device {} at library index {}: xpu{} is already {}",
                     found->identity.pci_bus_id, i, index, taken->second.identity.pci_bus_id);
      continue;
    }
    by_index.emplace(index, std::move(*found));
  }

  // The two chips of a K200 share one PCI address, so derived ids count the chip: in index
  // order, as the sysfs backend counts them (the first chip backs the lower /dev/xpuN).
  std::map<std::string, unsigned> chips_at_address;
  std::set<std::string> uuids;
  std::map<unsigned, Discovered> by_library_index;
  std::map<unsigned, Card> cards;
  std::vector<DeviceIdentity> devices;
  std::vector<topology::Card> physical_cards;
  devices.reserve(by_index.size());
  for (auto& [index, found] : by_index) {
    DeviceIdentity& id = found.identity;
    const unsigned chip = chips_at_address[id.pci_bus_id]++;
    if (id.uuid.empty()) id.uuid = derived_device_uuid(id.pci_bus_id, found.pci_model, chip);
    if (!uuids.insert(id.uuid).second) {
      warnings_.warn("skipping device {}: UUID {} reported twice", id.pci_bus_id, id.uuid);
      continue;
    }
    Card card{found.handle, id.uuid};
    // The process query starts from the count the card had last time.
    if (auto last = cards_.find(index); last != cards_.end() && last->second.uuid == id.uuid)
      card.last_process_count = last->second.last_process_count;
    cards[index] = card;
    if (!id.is_virtual_function)
      physical_cards.push_back(topology::Card{index, id.pci_bus_id, id.model, found.topology_key});
    devices.push_back(id);
    by_library_index.emplace(found.library_index, std::move(found));
  }
  warnings_.end_pass();

  // Links come from the topology quirk table. A library call that reports them would win over
  // the table, but the public libxpuml header has none (no link or topology query of any kind),
  // so the table is the only source; resolve such a call as an optional symbol if one appears.
  auto linked = links_.assign(physical_cards);
  for (auto& device : devices)
    if (auto found = linked.find(device.index); found != linked.end())
      device.linked_devices = found->second;

  cards_ = std::move(cards);
  last_discovered_ = std::move(by_library_index);
  last_count_ = count;
  return devices;
}

DeviceReading XpumlBackend::read(const DeviceIdentity& device) {
  DeviceReading reading;
  const std::string subject = xpu::names::device_name(device.index);
  auto card = cards_.find(device.index);
  if (card == cards_.end() || card->second.uuid != device.uuid) {
    reading.read_error = subject + " (" + device.uuid + ") was not found by the last discovery";
    return reading;
  }
  const xpumlDevice_t handle = card->second.handle;
  const auto& sym = library_->symbols();

  bool any_succeeded = false;
  bool lost = false;
  // Checks one call's code: true on success; remembers the first failure for read_error.
  auto succeeded = [&](xpumlReturn_t code, std::string_view function) {
    if (code == XPUML_SUCCESS) {
      any_succeeded = true;
      return true;
    }
    std::string message = library_->error_message(function, subject, code);
    spdlog::debug("{}", message);
    if (code == XPUML_ERROR_XPU_IS_LOST) lost = true;
    if (!reading.read_error) reading.read_error = std::move(message);
    return false;
  };
  auto lost_reading = [&] {
    DeviceReading gone;
    gone.fault = std::string(kDeviceLost);
    gone.gone = true;
    return gone;
  };

  int state = 0;
  if (succeeded(library_->call(sym.device_get_state, handle, &state), sym.device_get_state.name)) {
    reading.fault = xpuml::fault_from_state(state);
    if (!reading.fault && state != XPUML_DEVICE_STATE_RUNNING && state != XPUML_DEVICE_STATE_UNUSED)
      spdlog::debug("{}: unknown device state {}", subject, state);
  }
  if (lost) return lost_reading();

  xpumlMemory_t memory{};
  if (succeeded(library_->call(sym.device_get_memory_info, handle, &memory),
                sym.device_get_memory_info.name))
    xpuml::add_memory_metrics(memory, subject, reading.metrics);
  if (lost) return lost_reading();

  xpumlUtilization_t utilization{};
  if (succeeded(library_->call(sym.device_get_utilization_rates, handle, &utilization),
                sym.device_get_utilization_rates.name))
    xpuml::add_utilization_metrics(utilization, subject, reading.metrics);
  if (lost) return lost_reading();

  unsigned celsius = 0;
  if (succeeded(library_->call(sym.device_get_temperature, handle, XPUML_TEMPERATURE_SENSOR_DIE,
                               &celsius),
                sym.device_get_temperature.name))
    xpuml::add_temperature_metric(celsius, subject, reading.metrics);
  if (lost) return lost_reading();

  unsigned milliwatts = 0;
  if (succeeded(library_->call(sym.device_get_power_usage, handle, &milliwatts),
                sym.device_get_power_usage.name))
    xpuml::add_power_metric(milliwatts, subject, reading.metrics);
  if (lost) return lost_reading();

  unsigned mhz = 0;
  if (succeeded(library_->call(sym.device_get_clock_info, handle, XPUML_CLOCK_XPU, &mhz),
                sym.device_get_clock_info.name))
    xpuml::add_clock_metric(mhz, subject, reading.metrics);
  if (lost) return lost_reading();

  // NVML's sizing protocol (process_query.h), starting from the count seen last time.
  const auto& processes_fn = sym.device_get_compute_running_processes;
  const auto processes = xpuml::query_processes(
      [&](unsigned* count, xpumlProcessInfo_t* records) {
        return library_->call(processes_fn, handle, count, records);
      },
      card->second.last_process_count);
  if (!processes.implausible.empty()) {
    any_succeeded = true;
    spdlog::debug("{}: dropping {}: {} {}", subject, xpu::names::metric::kProcessCount,
                  processes_fn.name, processes.implausible);
  } else if (processes.count) {
    any_succeeded = true;
    card->second.last_process_count = *processes.count;
    xpuml::add_process_count_metric(*processes.count, subject, reading.metrics);
    if (processes.records)
      reading.processes = xpuml::process_list(*processes.records, subject);
    else
      spdlog::debug("{}: {} kept growing past the room offered; publishing the count only", subject,
                    processes_fn.name);
  } else {
    succeeded(processes.code, processes_fn.name);
  }
  if (lost) return lost_reading();

  // Some call answered: whatever failed is simply missing from the map.
  if (any_succeeded) reading.read_error.reset();
  // The kernel's view of the link, which the library does not give: the same files the sysfs
  // backend reads (pcie_link.h).
  reading.pcie =
      sysfs::read_pcie_link_state(sysfs_root_ / "sys/bus/pci/devices" / device.pci_bus_id);
  return reading;
}

std::optional<DriverChangeError> XpumlBackend::set_virtual_function_count(
    const DeviceIdentity& device, unsigned count) {
  using Kind = DriverChangeError::Kind;
  const std::string subject = subject_of(device);
  const auto handle = handle_of(device);
  if (!handle) return card_gone(device);
  if (device.is_virtual_function)
    return DriverChangeError{Kind::NotSupported,
                             subject + " is a virtual function; configure its physical function"};
  const auto& sym = library_->symbols();
  if (!sym.device_set_sriov_vf_num.available()) {
    // An older library: the kernel's interface does the same. bus_id is normalised, so it
    // cannot lead out of the devices directory.
    return sysfs::write_sriov_numvfs(sysfs_root_ / "sys/bus/pci/devices" / device.pci_bus_id,
                                     subject, count);
  }
  xpumlDeviceAttributes_t attributes{};
  xpumlReturn_t rc = library_->call(sym.device_get_attributes, *handle, &attributes);
  if (rc != XPUML_SUCCESS)
    return DriverChangeError{
        Kind::Failed, "cannot read the SR-IOV limit: " +
                          library_->error_message(sym.device_get_attributes.name, subject, rc)};
  // maxVFCount 0 or "not available" (all ones): no SR-IOV, never a limit of four billion.
  const auto limit = xpuml::virtual_function_limit(attributes.maxVFCount);
  if (!limit)
    return DriverChangeError{
        Kind::NotSupported,
        subject + " has no SR-IOV capability (maxVFCount " +
            (attributes.maxVFCount == 0 ? std::string("0") : std::string("not available")) + ")"};
  if (count > *limit)
    return DriverChangeError{Kind::InvalidArgument,
                             subject + " supports at most " + std::to_string(*limit) +
                                 " virtual functions (maxVFCount), not " + std::to_string(count)};
  rc = library_->call(sym.device_set_sriov_vf_num, *handle, static_cast<int>(count));
  if (rc == XPUML_SUCCESS) {
    spdlog::info("{}: virtual functions set to {} (libxpuml)", subject, count);
    return std::nullopt;
  }
  const std::string message =
      library_->error_message(sym.device_set_sriov_vf_num.name, subject, rc);
  switch (rc) {
    case XPUML_ERROR_NOT_SUPPORTED:
      return DriverChangeError{Kind::NotSupported, message};
    case XPUML_ERROR_INVALID_ARGUMENT:
      return DriverChangeError{Kind::InvalidArgument, message};
    default:
      return DriverChangeError{Kind::Failed, message};
  }
}

std::optional<xpumlDevice_t> XpumlBackend::handle_of(const DeviceIdentity& device) const {
  auto card = cards_.find(device.index);
  if (card == cards_.end() || card->second.uuid != device.uuid) return std::nullopt;
  return card->second.handle;
}

std::optional<DriverChangeError> XpumlBackend::create_instance(const DeviceIdentity& device,
                                                               const std::string& id,
                                                               std::uint64_t memory_limit_bytes) {
  const auto handle = handle_of(device);
  if (!handle) return card_gone(device);
  auto error =
      xpuml::create_cxpu_instance(*library_, *handle, subject_of(device), id, memory_limit_bytes);
  if (!error)
    spdlog::info("{}: cXPU instance {} created, global memory bounded to {} bytes",
                 subject_of(device), id, memory_limit_bytes);
  return error;
}

std::optional<DriverChangeError> XpumlBackend::set_instance_memory_limit(
    const DeviceIdentity& device, const std::string& id, std::uint64_t memory_limit_bytes) {
  const auto handle = handle_of(device);
  if (!handle) return card_gone(device);
  return xpuml::set_cxpu_memory_limit(*library_, *handle, subject_of(device), id,
                                      memory_limit_bytes);
}

std::optional<DriverChangeError> XpumlBackend::destroy_instance(const DeviceIdentity& device,
                                                                const std::string& id) {
  const auto handle = handle_of(device);
  if (!handle) return card_gone(device);
  return xpuml::destroy_cxpu_instance(*library_, *handle, subject_of(device), id);
}

}  // namespace

xpu::Result<std::unique_ptr<Backend>> make_xpuml_backend(
    const std::filesystem::path& library, const std::filesystem::path& sysfs_root,
    bool* init_failed, std::shared_ptr<const topology::LinkTable> links) {
  auto loaded = Library::open(library, init_failed);
  if (!loaded) return xpu::Error{loaded.error()};
  return make_xpuml_backend(std::move(*loaded), sysfs_root, std::move(links));
}

xpu::Result<std::unique_ptr<Backend>> open_xpuml_backend(
    const std::vector<std::filesystem::path>& libraries, const std::filesystem::path& sysfs_root,
    bool* init_failed, std::shared_ptr<const topology::LinkTable> links) {
  auto library = xpuml::Library::open_first(libraries, init_failed);
  if (!library) return xpu::Error{library.error()};
  return make_xpuml_backend(std::move(*library), sysfs_root, std::move(links));
}

std::unique_ptr<Backend> make_xpuml_backend(std::unique_ptr<xpuml::Library> library,
                                            const std::filesystem::path& sysfs_root,
                                            std::shared_ptr<const topology::LinkTable> links) {
  return std::make_unique<XpumlBackend>(std::move(library), sysfs_root, std::move(links));
}

}  // namespace xpud
