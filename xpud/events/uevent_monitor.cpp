#include "xpud/events/uevent_monitor.h"

#include <systemd/sd-device.h>
#include <systemd/sd-event.h>

#include <unistd.h>

#include <cstring>
#include <string>

namespace xpud {
namespace {

struct EventUnref {
  void operator()(sd_event* event) const { sd_event_unref(event); }
};
struct MonitorUnref {
  void operator()(sd_device_monitor* monitor) const { sd_device_monitor_unref(monitor); }
};
using EventPtr = std::unique_ptr<sd_event, EventUnref>;
using MonitorPtr = std::unique_ptr<sd_device_monitor, MonitorUnref>;

std::string failure(std::string_view what, int r) {
  return std::string(what) + ": " + std::strerror(-r);
}

std::string_view action_name(sd_device* device) {
  sd_device_action_t action;
  if (sd_device_get_action(device, &action) < 0) return "";
  switch (action) {
    case SD_DEVICE_ADD:
      return "add";
    case SD_DEVICE_REMOVE:
      return "remove";
    case SD_DEVICE_CHANGE:
      return "change";
    case SD_DEVICE_MOVE:
      return "move";
    case SD_DEVICE_ONLINE:
      return "online";
    case SD_DEVICE_OFFLINE:
      return "offline";
    case SD_DEVICE_BIND:
      return "bind";
    case SD_DEVICE_UNBIND:
      return "unbind";
    default:
      return "";
  }
}

std::string text(int (*get)(sd_device*, const char**), sd_device* device) {
  const char* value = nullptr;
  return get(device, &value) >= 0 && value != nullptr ? value : "";
}

class UeventMonitor final : public DeviceEventSource {
 public:
  explicit UeventMonitor(DeviceEventSink sink) : sink_(std::move(sink)) {}

  xpu::Status open() {
    sd_event* event = nullptr;
    if (int r = sd_event_new(&event); r < 0) return xpu::Error{failure("sd_event_new", r)};
    event_.reset(event);
    if (auto status = add_monitor(pci_, "pci", nullptr); !status) return status;
    if (auto status = add_monitor(nodes_, nullptr, kUdevTag); !status) return status;
    return xpu::ok_status();
  }

  std::string description() const override {
    std::string text =
        std::string("udev events of PCI functions of vendor 0x1d22 and of devices tagged \"") +
        kUdevTag + "\"";
    // sd-device quietly subscribes to nothing where udev does not run (a container): say so.
    if (::access("/run/udev/control", F_OK) != 0)
      text += ", but udev is not running here (no /run/udev/control), so none will come";
    return text;
  }

  int fd() const override { return sd_event_get_fd(event_.get()); }

  xpu::Status dispatch() override {
    // Each run dispatches at most one source; 0 means nothing is left to do.
    for (int r; (r = sd_event_run(event_.get(), 0)) != 0;)
      if (r < 0) return xpu::Error{failure("sd_event_run", r)};
    return xpu::ok_status();
  }

 private:
  // One monitor per filter: sd-device ANDs a subsystem match with a tag match, and we want
  // either.
  xpu::Status add_monitor(MonitorPtr& slot, const char* subsystem, const char* tag) {
    sd_device_monitor* monitor = nullptr;
    if (int r = sd_device_monitor_new(&monitor); r < 0)
      return xpu::Error{failure("sd_device_monitor_new", r)};
    slot.reset(monitor);
    // Best effort: a burst of events at driver load must not overflow the default buffer
    // (without CAP_NET_ADMIN the kernel caps it at net.core.rmem_max; the rescan covers a loss).
    (void)sd_device_monitor_set_receive_buffer_size(monitor, 4 * 1024 * 1024);
    int r = subsystem
                ? sd_device_monitor_filter_add_match_subsystem_devtype(monitor, subsystem, nullptr)
                : sd_device_monitor_filter_add_match_tag(monitor, tag);
    if (r < 0) return xpu::Error{failure("sd_device_monitor_filter_add_match", r)};
    if (r = sd_device_monitor_attach_event(monitor, event_.get()); r < 0)
      return xpu::Error{failure("sd_device_monitor_attach_event", r)};
    if (r = sd_device_monitor_start(monitor, &UeventMonitor::on_device, this); r < 0)
      return xpu::Error{failure("sd_device_monitor_start", r)};
    return xpu::ok_status();
  }

  static int on_device(sd_device_monitor*, sd_device* device, void* userdata) {
    auto* self = static_cast<UeventMonitor*>(userdata);
    DeviceEvent event;
    event.action = action_name(device);
    event.subsystem = text(sd_device_get_subsystem, device);
    event.sysname = text(sd_device_get_sysname, device);
    const char* pci_id = nullptr;
    if (sd_device_get_property_value(device, "PCI_ID", &pci_id) >= 0 && pci_id != nullptr)
      event.pci_id = pci_id;
    self->sink_(event);
    return 0;
  }

  DeviceEventSink sink_;
  // Declared first, destroyed last: the monitors detach from it when they go.
  EventPtr event_;
  MonitorPtr pci_;
  MonitorPtr nodes_;
};

}  // namespace

xpu::Result<std::unique_ptr<DeviceEventSource>> make_uevent_monitor(DeviceEventSink sink) {
  auto monitor = std::make_unique<UeventMonitor>(std::move(sink));
  if (auto status = monitor->open(); !status) return xpu::Error{status.error()};
  return std::unique_ptr<DeviceEventSource>(std::move(monitor));
}

}  // namespace xpud
