#include "xpud/bus/vfio_object.h"

#include <sdbus-c++/sdbus-c++.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "common/names.h"
#include "xpud/backends/pci_ids.h"
#include "xpud/backends/vfio/kernel_files.h"
#include "xpud/backends/vfio/vfio_binding.h"
#include "xpud/bus/bus_errors.h"
#include "xpud/requests/driver_requests.h"
#include "xpud/requests/instance_registry.h"
#include "xpud1/vfio_adaptor.h"

namespace xpud {

namespace names = xpu::names;

class VfioObject::Adaptor final
    : public sdbus::AdaptorInterfaces<com::kunlunxin::xpud1::Vfio_adaptor> {
 public:
  Adaptor(sdbus::IConnection& connection, const DeviceTable& table, std::filesystem::path root,
          DriverRequests& driver_requests, const InstanceRegistry& instances,
          std::function<void(const std::vector<vfio::VfioFunction>&)> on_change)
      : AdaptorInterfaces(connection, std::string(names::kManagerPath)),
        table_(table),
        root_(std::move(root)),
        driver_requests_(driver_requests),
        instances_(instances),
        on_change_(std::move(on_change)) {
    registerAdaptor();
  }
  ~Adaptor() { unregisterAdaptor(); }
  Adaptor(const Adaptor&) = delete;
  Adaptor& operator=(const Adaptor&) = delete;

  void refresh() {
    auto scanned = vfio::scan_vfio_functions(root_);
    if (!scanned.ok()) {
      // The last list stands: a transient sysfs error must not make functions vanish.
      spdlog::warn("vfio: cannot list the functions on vfio-pci: {}", scanned.error());
      return;
    }
    if (*scanned == functions_) return;
    functions_ = std::move(*scanned);
    spdlog::info("vfio: {} Kunlunxin function(s) on vfio-pci", functions_.size());
    try {
      getObject().emitPropertiesChangedSignal(std::string(names::vfio::kInterface),
                                              {std::string(names::vfio::kDevices)});
    } catch (const sdbus::Error& e) {
      spdlog::warn("vfio: PropertiesChanged not sent: {}", e.getMessage());
    }
    if (on_change_) on_change_(functions_);
  }

  const std::vector<vfio::VfioFunction>& functions() const { return functions_; }

 private:
  using Entry =
      sdbus::Struct<std::string, std::string, std::string, std::string, bool, std::string, int32_t>;

  std::vector<Entry> Devices() override {
    std::vector<Entry> entries;
    entries.reserve(functions_.size());
    for (const auto& f : functions_)
      entries.emplace_back(f.pci_bus_id, f.pci_id, f.iommu_group, f.model, f.is_virtual_function,
                           f.physical_function, f.numa_node);
    return entries;
  }

  void Bind(sdbus::Result<>&& result, std::string pci_bus_id) override {
    const uid_t caller = caller_uid();
    authorize_root(caller, names::vfio::kBind);
    const std::string bus_id = normalized(pci_bus_id);
    refuse_if_in_use(bus_id);
    move(std::move(result), bus_id, "Bind", caller, [root = root_, bus_id, kernel = kernel_]() {
      return vfio::bind_to_vfio(root, bus_id, *kernel);
    });
  }

  void Unbind(sdbus::Result<>&& result, std::string pci_bus_id) override {
    const uid_t caller = caller_uid();
    authorize_root(caller, names::vfio::kUnbind);
    const std::string bus_id = normalized(pci_bus_id);
    move(std::move(result), bus_id, "Unbind", caller, [root = root_, bus_id, kernel = kernel_]() {
      return vfio::return_to_host_driver(root, bus_id, *kernel);
    });
  }

  uid_t caller_uid() const { return getObject().getCurrentlyProcessedMessage()->getCredsUid(); }

  // The address as sysfs names it; refused here so that nothing unchecked reaches the log.
  static std::string normalized(const std::string& text) {
    auto bus_id = pci::normalize_bus_id(text);
    if (!bus_id)
      throw sdbus::Error(std::string(names::kErrorInvalidArgument),
                         "not a PCI address (dddd:bb:dd.f): a card's PciBusId");
    return *bus_id;
  }

  // A card still computing is not taken from its tenants: processes xpud saw on it in the last
  // sample, or cXPU instances xpud made on it.
  void refuse_if_in_use(const std::string& bus_id) const {
    for (const auto& [index, device] : table_.devices()) {
      if (device.identity.pci_bus_id != bus_id) continue;
      const std::string name = names::device_name(index) + " (" + bus_id + ")";
      if (const auto& snapshot = table_.snapshot())
        for (const auto& state : snapshot->devices)
          if (state.identity.index == index && state.processes && !state.processes->empty())
            throw sdbus::Error(std::string(names::kErrorInUse),
                               name + " has " + std::to_string(state.processes->size()) +
                                   " process(es) on it (xpuctl processes); stop them first");
      for (const auto& instance : instances_.list())
        if (instance.index == index)
          throw sdbus::Error(std::string(names::kErrorInUse),
                             name + " has the cXPU instance " + instance.id +
                                 " (xpuctl instances); destroy it first");
    }
  }

  void move(sdbus::Result<>&& result, const std::string& bus_id, const std::string& what,
            uid_t caller, std::function<std::optional<DriverChangeError>()> change) {
    spdlog::info("vfio: {} {} asked by uid {}", what, bus_id, caller);
    auto reply = std::make_shared<sdbus::Result<>>(std::move(result));
    driver_requests_.start(
        what + " " + bus_id, [change = std::move(change)](Backend&) { return change(); },
        [this, reply, what, bus_id](const std::optional<DriverChangeError>& error) {
          // Whatever happened, the list is read again: a roll-back that failed changed it too.
          refresh();
          try {
            if (!error) {
              reply->returnResults();
              return;
            }
            spdlog::warn("vfio: {} {} failed: {}", what, bus_id, error->message);
            reply->returnError(sdbus::Error(error_name(error->kind), error->message));
          } catch (const sdbus::Error& e) {
            spdlog::warn("vfio: {} {}: reply not sent: {}", what, bus_id, e.getMessage());
          }
        });
  }

  const DeviceTable& table_;
  const std::filesystem::path root_;
  DriverRequests& driver_requests_;
  const InstanceRegistry& instances_;
  std::function<void(const std::vector<vfio::VfioFunction>&)> on_change_;
  // Shared with the jobs, which may outlive a call's reply on the driver thread.
  std::shared_ptr<vfio::KernelFiles> kernel_ = vfio::KernelFiles::real();
  std::vector<vfio::VfioFunction> functions_;
};

VfioObject::VfioObject(sdbus::IConnection& connection, const DeviceTable& table,
                       std::filesystem::path root, DriverRequests& driver_requests,
                       const InstanceRegistry& instances,
                       std::function<void(const std::vector<vfio::VfioFunction>&)> on_change)
    : adaptor_(std::make_unique<Adaptor>(connection, table, std::move(root), driver_requests,
                                         instances, std::move(on_change))) {}

VfioObject::~VfioObject() = default;

void VfioObject::refresh() {
  adaptor_->refresh();
}

const std::vector<vfio::VfioFunction>& VfioObject::functions() const {
  return adaptor_->functions();
}

}  // namespace xpud
