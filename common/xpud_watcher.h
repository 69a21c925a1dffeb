// The watcher behind XpudClient::watch(): one background thread that follows xpud's name owner
// (NameOwnerChanged), the bus itself (reconnects with back-off when the bus restarts), and every
// signal xpud sends, and after each change hands the listener a fresh DeviceView.
//
// A change triggers a full refresh (GetAll on the Manager, GetManagedObjects): two calls that
// cannot drift from xpud's state the way incremental updates could. A refresh every 30 s is the
// safety net for a signal that was ever missed.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <thread>

#include <sdbus-c++/IConnection.h>

#include "common/unique_fd.h"
#include "common/xpud_client.h"

namespace xpu {

class XpudWatcher {
 public:
  using Listener = std::function<void(const DeviceView&)>;

  explicit XpudWatcher(ClientOptions options) : options_(std::move(options)) {}
  // Stops and joins the thread.
  ~XpudWatcher();
  XpudWatcher(const XpudWatcher&) = delete;
  XpudWatcher& operator=(const XpudWatcher&) = delete;

  // Starts the thread (once; later calls do nothing). The listener runs on that thread, first
  // with the initial view, then after every change.
  void start(Listener listener);
  DeviceView current_view() const;

 private:
  void watch_loop();
  void refresh(sdbus::IConnection& connection, bool force_notify);
  void set_absent(bool force_notify);
  void publish(DeviceView fresh, bool force_notify);
  void wait_wakeup(std::chrono::milliseconds timeout);

  const ClientOptions options_;
  mutable std::mutex view_mutex_;
  DeviceView view_;
  Listener listener_;
  UniqueFd wakeup_;  // written to stop the thread
  std::atomic<bool> stop_ = false;
  std::thread thread_;
};

}  // namespace xpu
