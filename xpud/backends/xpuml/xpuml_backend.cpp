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
#include "xpud/backends/device_uuid.h"
#include "xpud/backends/pci_ids.h"
#include "xpud/backends/sriov_numvfs.h"
#include "xpud/backends/virtual_functions.h"
#include "xpud/backends/sysfs_attribute.h"
#include "xpud/backends/topology_links.h"
#include "xpud/backends/xpuml/discovery_warnings.h"
#include "xpud/backends/xpuml/xpuml_library.h"
#include "xpud/backends/xpuml/xpuml_metrics.h"

namespace xpud {
namespace {

using xpuml::Library;

// More devices than any host can hold: a count beyond it is garbage, not hardware.
constexpr unsigned kMaxDevices = 4096;
// /dev/xpuN minors the driver hands out stay far below this.
constexpr unsigned kMaxMinor = 65535;
// Buffers for strings the library writes (serial, name, UUID, versions).
constexpr std::size_t kTextBufferSize = 128;
// Serials travel where device ids do (D-Bus, exporter labels): the same limit.
constexpr std::size_t kMaxSerialLength = kMaxDeviceUuidLength;
// Process entries offered per query; a card with more reports the total as INSUFFICIENT_SIZE
// (the count is still published, the list is not).
constexpr unsigned kProcessSlots = 64;

constexpr std::string_view kDeviceLost = "device lost";

// What read() needs to reach a card found by the last discover().
struct Card {
  xpumlDevice_t handle;
  std::string uuid;
};

class XpumlBackend final : public Backend, public VirtualFunctionControl {
 public:
  XpumlBackend(std::unique_ptr<Library> library, std::filesystem::path sysfs_root,
               std::shared_ptr<const topology::LinkTable> links)
      : library_(std::move(library)),
        sysfs_root_(std::move(sysfs_root)),
        links_(std::move(links)) {}

  std::string_view name() const override { return "xpuml"; }
  // Called with every discovery (sampler.cpp): a failure is warned about once until a read works.
  std::string driver_version() override;
  xpu::Result<std::vector<DeviceIdentity>> discover() override;
  DeviceReading read(const DeviceIdentity& device) override;
  VirtualFunctionControl* virtual_functions() override { return this; }
  std::optional<VfChangeError> set_virtual_function_count(const DeviceIdentity& device,
                                                          unsigned count) override;

 private:
  struct Discovered {
    unsigned library_index = 0;
    xpumlDevice_t handle{};
    DeviceIdentity identity;  // uuid empty until discover() derives it, unless the library gave one
    std::string pci_model;    // the board name the PCI ids give, which derived ids use
    topology::CardKey topology_key;  // what finds the card's board in the link table
  };

  // The card at `library_index`: its handle and identity.
  xpu::Result<Discovered> identify(unsigned library_index);
  xpu::Result<Discovered> read_identity(unsigned library_index, xpumlDevice_t handle);
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
};

std::string XpumlBackend::driver_version() {
  std::array<char, kTextBufferSize> buffer{};
  const auto& function = library_->symbols().system_get_driver_version;
  xpumlReturn_t rc = library_->call(function, buffer.data(), static_cast<unsigned>(buffer.size()));
  auto text = rc == XPUML_SUCCESS ? xpuml::text_from_library(buffer.data(), buffer.size())
                                  : std::nullopt;
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

xpu::Result<XpumlBackend::Discovered> XpumlBackend::identify(unsigned library_index) {
  const auto& function = library_->symbols().device_get_handle_by_index;
  xpumlDevice_t handle{};
  xpumlReturn_t rc = library_->call(function, library_index, &handle);
  if (rc != XPUML_SUCCESS)
    return xpu::Error{
        library_->error_message(function.name, "index " + std::to_string(library_index), rc)};
  return read_identity(library_index, handle);
}

xpu::Result<XpumlBackend::Discovered> XpumlBackend::read_identity(unsigned library_index,
                                                                  xpumlDevice_t handle) {
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

  id.index = library_index;
  if (sym.device_get_minor_number.available()) {
    unsigned minor = 0;
    rc = library_->call(sym.device_get_minor_number, handle, &minor);
    if (auto e = lost(rc, sym.device_get_minor_number.name)) return *e;
    if (rc == XPUML_SUCCESS && minor <= kMaxMinor)
      id.index = minor;
    else if (rc == XPUML_SUCCESS)
      warnings_.warn("{}({}): implausible minor number {}; using the library index",
                     sym.device_get_minor_number.name, subject, minor);
    else
      warnings_.warn("{}; using the library index",
                     library_->error_message(sym.device_get_minor_number.name, subject, rc));
  }

  xpumlDeviceAttributes_t attributes{};
  rc = library_->call(sym.device_get_attributes, handle, &attributes);
  if (auto e = lost(rc, sym.device_get_attributes.name)) return *e;
  const bool have_attributes = rc == XPUML_SUCCESS;
  if (!have_attributes)
    spdlog::debug("{}", library_->error_message(sym.device_get_attributes.name, subject, rc));
  if (have_attributes) {
    found.topology_key.board_id = attributes.boardId;
    found.topology_key.model_id = attributes.modelId;
  }

  if (auto serial = read_text(sym.device_get_serial, handle, subject)) {
    if (serial->size() <= kMaxSerialLength)
      id.serial = *serial;
    else
      warnings_.warn("{}({}): serial longer than {} characters; ignoring it",
                     sym.device_get_serial.name, subject, kMaxSerialLength);
  }

  // Model: the board id names the exact board. A virtual function is not the whole board, so
  // it keeps the PCI name ("KL2-VF"), as the sysfs backend reports it too.
  std::optional<std::string> model;
  if (pci_model && pci_model->is_virtual_function) model = pci_model->model;
  if (!model && have_attributes && attributes.boardId >= 0)
    model = pci::model_from_board_id(static_cast<unsigned>(attributes.boardId));
  if (!model && pci_model && pci_model->model != pci::kUnknownModel) model = pci_model->model;
  if (!model && sym.device_get_name.available())
    model = read_text(sym.device_get_name, handle, subject);
  id.model = model ? *model : pci::kUnknownModel;
  // The sysfs backend sees only the PCI ids (a K100 is a "K200" there): derived ids use that
  // name, so the card keeps its id under either backend. Without Kunlunxin PCI ids from the
  // library there is nothing better than our own name.
  found.pci_model = pci_model ? pci_model->model : id.model;

  if (pci_model) {
    id.is_virtual_function = pci_model->is_virtual_function;
  } else {
    // PCI ids the library left out or we do not know: fall back on the library's own view.
    int mode = 0;
    rc = library_->call(sym.device_get_host_vxpu_mode, handle, &mode);
    if (auto e = lost(rc, sym.device_get_host_vxpu_mode.name)) return *e;
    id.is_virtual_function = rc == XPUML_SUCCESS && mode == XPUML_HOST_VXPU_SRIOV_ON;
  }

  xpumlMemory_t memory{};
  rc = library_->call(sym.device_get_memory_info, handle, &memory);
  if (auto e = lost(rc, sym.device_get_memory_info.name)) return *e;
  if (rc == XPUML_SUCCESS && memory.totalGlobal > 0 && memory.totalGlobal <= xpuml::kMaxMemoryBytes)
    id.memory_total_bytes = memory.totalGlobal;
  else if (have_attributes && attributes.globalMemorySizeMB > 0 &&
           attributes.globalMemorySizeMB <= (xpuml::kMaxMemoryBytes >> 20))
    id.memory_total_bytes = attributes.globalMemorySizeMB << 20;

  // UUID: the library's when it gives a usable one; discover() derives the others.
  if (sym.device_get_uuid.available()) {
    std::array<char, kTextBufferSize> buffer{};
    rc = library_->call(sym.device_get_uuid, handle, buffer.data(),
                        static_cast<unsigned>(buffer.size()));
    if (auto e = lost(rc, sym.device_get_uuid.name)) return *e;
    auto uuid =
        rc == XPUML_SUCCESS ? xpuml::text_from_library(buffer.data(), buffer.size()) : std::nullopt;
    if (uuid && is_usable_device_uuid(*uuid))
      id.uuid = *uuid;
    else if (rc == XPUML_SUCCESS)
      warnings_.warn("{}({}): unusable UUID; deriving one", sym.device_get_uuid.name, subject);
    else
      warnings_.warn("{}; deriving a UUID",
                     library_->error_message(sym.device_get_uuid.name, subject, rc));
  }

  // bus_id is normalised, so it cannot lead out of the devices directory.
  auto numa = sysfs::parse_attribute(
      sysfs_root_ / "sys/bus/pci/devices" / id.pci_bus_id / "numa_node", sysfs::parse_numa_node);
  if (numa) {
    id.numa_node = numa->value_or(-1);
  } else {
    warnings_.warn("{}: {}; NUMA node unknown", id.pci_bus_id, numa.error());
    id.numa_node = -1;
  }

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
  for (unsigned i = 0; i < count; ++i) {
    auto found = identify(i);
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
    cards[index] = Card{found.handle, id.uuid};
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

  // The library fills at most `slots` entries; with more processes it reports the total and
  // INSUFFICIENT_SIZE, which answers our question just as well.
  std::array<xpumlProcessInfo_t, kProcessSlots> processes{};
  unsigned slots = kProcessSlots;
  xpumlReturn_t rc =
      library_->call(sym.device_get_compute_running_processes, handle, &slots, processes.data());
  if (rc == XPUML_SUCCESS && slots <= kProcessSlots) {
    any_succeeded = true;
    xpuml::add_process_count_metric(slots, subject, reading.metrics);
    reading.processes = xpuml::process_list(std::span(processes.data(), slots), subject);
  } else if (rc == XPUML_ERROR_INSUFFICIENT_SIZE && slots > kProcessSlots) {
    any_succeeded = true;
    xpuml::add_process_count_metric(slots, subject, reading.metrics);
  } else if (rc == XPUML_SUCCESS || rc == XPUML_ERROR_INSUFFICIENT_SIZE) {
    any_succeeded = true;
    spdlog::debug("{}: dropping {}: {} reported {} processes for {} slots", subject,
                  xpu::names::metric::kProcessCount, sym.device_get_compute_running_processes.name,
                  slots, kProcessSlots);
  } else {
    succeeded(rc, sym.device_get_compute_running_processes.name);
  }
  if (lost) return lost_reading();

  // Some call answered: whatever failed is simply missing from the map.
  if (any_succeeded) reading.read_error.reset();
  return reading;
}

std::optional<VfChangeError> XpumlBackend::set_virtual_function_count(const DeviceIdentity& device,
                                                                     unsigned count) {
  using Kind = VfChangeError::Kind;
  const std::string subject =
      xpu::names::device_name(device.index) + " (" + device.pci_bus_id + ")";
  auto card = cards_.find(device.index);
  if (card == cards_.end() || card->second.uuid != device.uuid)
    return VfChangeError{Kind::NoSuchDevice, subject + " was not found by the last discovery"};
  if (device.is_virtual_function)
    return VfChangeError{Kind::NotSupported,
                         subject + " is a virtual function; configure its physical function"};
  const auto& sym = library_->symbols();
  if (!sym.device_set_sriov_vf_num.available()) {
    // An older library: the kernel's interface does the same. bus_id is normalised, so it
    // cannot lead out of the devices directory.
    return sysfs::write_sriov_numvfs(sysfs_root_ / "sys/bus/pci/devices" / device.pci_bus_id,
                                     subject, count);
  }
  const xpumlDevice_t handle = card->second.handle;
  xpumlDeviceAttributes_t attributes{};
  xpumlReturn_t rc = library_->call(sym.device_get_attributes, handle, &attributes);
  if (rc != XPUML_SUCCESS)
    return VfChangeError{Kind::Failed, "cannot read the SR-IOV limit: " +
                                           library_->error_message(sym.device_get_attributes.name,
                                                                   subject, rc)};
  if (attributes.maxVFCount == 0)
    return VfChangeError{Kind::NotSupported,
                         subject + " has no SR-IOV capability (maxVFCount 0)"};
  if (count > attributes.maxVFCount)
    return VfChangeError{Kind::InvalidArgument,
                         subject + " supports at most " + std::to_string(attributes.maxVFCount) +
                             " virtual functions (maxVFCount), not " + std::to_string(count)};
  rc = library_->call(sym.device_set_sriov_vf_num, handle, static_cast<int>(count));
  if (rc == XPUML_SUCCESS) {
    spdlog::info("{}: virtual functions set to {} (libxpuml)", subject, count);
    return std::nullopt;
  }
  const std::string message = library_->error_message(sym.device_set_sriov_vf_num.name, subject, rc);
  switch (rc) {
    case XPUML_ERROR_NOT_SUPPORTED:
      return VfChangeError{Kind::NotSupported, message};
    case XPUML_ERROR_INVALID_ARGUMENT:
      return VfChangeError{Kind::InvalidArgument, message};
    default:
      return VfChangeError{Kind::Failed, message};
  }
}

}  // namespace

xpu::Result<std::unique_ptr<Backend>> make_xpuml_backend(
    const std::filesystem::path& library, const std::filesystem::path& sysfs_root,
    bool* init_failed, std::shared_ptr<const topology::LinkTable> links) {
  auto loaded = Library::open(library, init_failed);
  if (!loaded) return xpu::Error{loaded.error()};
  return make_xpuml_backend(std::move(*loaded), sysfs_root, std::move(links));
}

std::unique_ptr<Backend> make_xpuml_backend(std::unique_ptr<xpuml::Library> library,
                                            const std::filesystem::path& sysfs_root,
                                            std::shared_ptr<const topology::LinkTable> links) {
  return std::make_unique<XpumlBackend>(std::move(library), sysfs_root, std::move(links));
}

}  // namespace xpud
