#include "xpud/bus/device_object.h"

#include <sdbus-c++/sdbus-c++.h>
#include <spdlog/spdlog.h>

#include "common/names.h"
#include "xpud1/device_adaptor.h"

namespace xpud {

namespace names = xpu::names;

class DeviceObject::Adaptor final
    : public sdbus::AdaptorInterfaces<com::kunlunxin::xpud1::Device_adaptor,
                                      sdbus::ManagedObject_adaptor, sdbus::Properties_adaptor> {
 public:
  Adaptor(sdbus::IConnection& connection, const DeviceTable& table, unsigned index)
      : AdaptorInterfaces(connection, names::device_path(index)), table_(table), index_(index) {
    registerAdaptor();
    emitInterfacesAddedSignal({std::string(names::kDeviceInterface)});
  }
  ~Adaptor() {
    try {
      emitInterfacesRemovedSignal({std::string(names::kDeviceInterface)});
    } catch (const sdbus::Error& e) {
      // The bus may be gone (this runs on shutdown after losing it); there is no one to tell.
      spdlog::debug("InterfacesRemoved for {} not sent: {}", names::device_name(index_),
                    e.getMessage());
    }
    unregisterAdaptor();
  }
  Adaptor(const Adaptor&) = delete;
  Adaptor& operator=(const Adaptor&) = delete;

 private:
  // The table and the objects change together on the main thread, which is also the one that
  // answers calls: while this object exists, the table holds its card.
  const PublishedDevice& device() const {
    const PublishedDevice* device = table_.find(index_);
    if (device == nullptr)
      throw sdbus::Error(std::string(names::kErrorNoSuchDevice),
                         "no device " + names::device_name(index_));
    return *device;
  }
  const DeviceIdentity& identity() const { return device().identity; }

  uint32_t Index() override { return index_; }
  std::string Name() override { return names::device_name(index_); }
  std::string Uuid() override { return identity().uuid; }
  std::string Serial() override { return identity().serial; }
  std::string Model() override { return identity().model; }
  std::string PciBusId() override { return identity().pci_bus_id; }
  std::string PcieRoot() override { return identity().pcie_root; }
  int32_t NumaNode() override { return identity().numa_node; }
  uint64_t MemoryTotalBytes() override { return identity().memory_total_bytes; }
  std::vector<std::string> DeviceNodes() override { return identity().device_nodes; }
  std::vector<uint32_t> LinkedDevices() override {
    const auto& linked = identity().linked_devices;
    return {linked.begin(), linked.end()};
  }
  bool IsVirtualFunction() override { return identity().is_virtual_function; }
  bool SriovEnabled() override { return identity().sriov_enabled; }
  std::string PhysicalFunction() override { return identity().physical_function; }
  std::string Health() override {
    return std::string(device().healthy ? names::kHealthy : names::kUnhealthy);
  }
  std::string HealthReason() override { return device().health_reason; }
  std::string HealthReasonKind() override { return device().health_reason_kind; }
  std::map<std::string, uint64_t> HealthTransitions() override {
    const PublishedDevice& card = device();
    return {{std::string(names::kHealthy), card.became_healthy},
            {std::string(names::kUnhealthy), card.became_unhealthy}};
  }

  uint64_t PcieLinkSpeed() override { return device().pcie.speed.value_or(0); }
  uint64_t PcieLinkMaxSpeed() override { return device().pcie.max_speed.value_or(0); }
  uint32_t PcieLinkWidth() override { return device().pcie.width.value_or(0); }
  uint32_t PcieLinkMaxWidth() override { return device().pcie.max_width.value_or(0); }
  std::map<std::string, uint64_t> PcieAerErrors() override {
    const PcieLinkState& pcie = device().pcie;
    std::map<std::string, uint64_t> errors;
    if (pcie.aer_correctable)
      errors.emplace(names::aer_severity::kCorrectable, *pcie.aer_correctable);
    if (pcie.aer_nonfatal) errors.emplace(names::aer_severity::kNonfatal, *pcie.aer_nonfatal);
    if (pcie.aer_fatal) errors.emplace(names::aer_severity::kFatal, *pcie.aer_fatal);
    return errors;
  }
  std::map<std::string, std::string> HealthWarnings() override { return device().health_warnings; }
  // Every result, 0 when none: a client sees the full set (and a rate of 0) from the start.
  std::map<std::string, uint64_t> Resets() override {
    std::map<std::string, uint64_t> resets;
    for (auto result : names::reset_result::kAll) resets.emplace(result, 0);
    for (const auto& [result, count] : device().resets) resets[result] = count;
    return resets;
  }

  const DeviceTable& table_;
  unsigned index_;
};

DeviceObject::DeviceObject(sdbus::IConnection& connection, const DeviceTable& table, unsigned index)
    : adaptor_(std::make_unique<Adaptor>(connection, table, index)) {}

DeviceObject::~DeviceObject() = default;

void DeviceObject::health_changed(bool flipped) {
  std::vector<std::string> changed = {std::string(names::property::kHealthReason),
                                      std::string(names::property::kHealthReasonKind)};
  if (flipped)
    changed.insert(changed.end(), {std::string(names::property::kHealth),
                                   std::string(names::property::kHealthTransitions)});
  adaptor_->emitPropertiesChangedSignal(std::string(names::kDeviceInterface), changed);
}

void DeviceObject::resets_changed() {
  adaptor_->emitPropertiesChangedSignal(
      std::string(names::kDeviceInterface),
      std::vector<std::string>{std::string(names::property::kResets)});
}

void DeviceObject::pcie_changed() {
  adaptor_->emitPropertiesChangedSignal(std::string(names::kDeviceInterface),
                                        std::vector<std::string>{
                                            std::string(names::property::kPcieLinkSpeed),
                                            std::string(names::property::kPcieLinkMaxSpeed),
                                            std::string(names::property::kPcieLinkWidth),
                                            std::string(names::property::kPcieLinkMaxWidth),
                                            std::string(names::property::kPcieAerErrors),
                                            std::string(names::property::kHealthWarnings),
                                        });
}

}  // namespace xpud
