// Client side of the xpud D-Bus API, shared by xpuctl and xpu-k8s-shim.
//
// Two ways to use it:
//  - one-shot calls (xpuctl, the exporter's GetMetrics per scrape): list_devices(), get_metrics(),
//    manager_info(); each opens nothing new, is bounded by the call timeout and may be called from
//    any thread;
//  - watch(): a background thread follows xpud's name owner (NameOwnerChanged), the bus itself
//    (reconnects with back-off when the bus restarts), ObjectManager and DeviceHealthChanged
//    signals, and hands the listener a fresh DeviceView after every change.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/xpud_types.h"

namespace xpu {

class XpudClient {
 public:
  explicit XpudClient(ClientOptions options);
  ~XpudClient();
  XpudClient(const XpudClient&) = delete;
  XpudClient& operator=(const XpudClient&) = delete;

  Result<ManagerInfo> manager_info();
  Result<std::vector<DeviceInfo>> list_devices();
  Result<MetricsSnapshot> get_metrics();
  // An xpud older than the method answers UnknownMethod (an error here).
  Result<ProcessSnapshot> get_processes();
  // Manager.ConfigureVirtualFunctions: sets card `index`'s SR-IOV virtual-function count. Root
  // may; the cluster (through xpud-api-proxy) only where the host allows it. The error carries
  // xpud's message and error name. Waits up to `timeout`: xpud answers after the change and the
  // discovery that follows it, longer than a read.
  Status configure_virtual_functions(unsigned index, unsigned count,
                                     std::chrono::milliseconds timeout);
  // Manager.CreateInstance and DestroyInstance: root on the host only. Wait up to `timeout`, as
  // above: xpud answers once the library has made (or destroyed) the instance.
  // `owner`: empty, or who the instance is for (xpu::names::is_instance_owner).
  Status create_instance(unsigned index, const std::string& id, std::uint64_t memory_limit_bytes,
                         const std::string& owner, std::chrono::milliseconds timeout);
  // Manager.CreateShareInstance: create_instance for a container that uses memory share `share`
  // ("<claim uid>/<share id>"); `container_pidfd` is a pidfd of its first process, which the
  // call duplicates (the caller keeps its own).
  Status create_share_instance(unsigned index, const std::string& id,
                               std::uint64_t memory_limit_bytes, const std::string& owner,
                               const std::string& share, int container_pidfd,
                               std::chrono::milliseconds timeout);
  Status destroy_instance(unsigned index, const std::string& id, std::chrono::milliseconds timeout);
  // Manager.ResetDevice: resets card `index` ([recovery] in xpud.conf; root on the host only).
  // Waits up to `timeout`: xpud answers once the card is reset and read again.
  Status reset_device(unsigned index, std::chrono::milliseconds timeout);
  // Manager.ListInstances: the instances xpud made, by card index and id.
  Result<std::vector<CxpuInstanceInfo>> list_instances();

  using Listener = std::function<void(const DeviceView&)>;
  // Starts the watcher thread (once). The listener runs on that thread, first with the initial
  // view, then after every change; it must not block for long.
  void watch(Listener listener);
  // Latest view of the watcher (empty view before the first refresh).
  DeviceView current_view() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace xpu
