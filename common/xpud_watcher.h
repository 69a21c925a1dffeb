// The watcher behind XpudClient::watch(): one background thread that follows xpud's name owner
// (NameOwnerChanged), the bus itself (reconnects with back-off when the bus restarts), and every
// signal xpud sends, and after each change hands the listener a fresh DeviceView.
//
// A change triggers a full refresh (GetAll on the Manager, GetManagedObjects): two calls that
// cannot drift from xpud's state the way incremental updates could. A refresh every 30 s is the
// safety net for a signal that was ever missed. A hung xpud keeps its name and sends nothing, so
// while it answers it is probed (Manager.Version) every 5 s; one that stops answering counts as
// absent (and is asked again every second) until it answers.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <thread>

#include <sdbus-c++/Error.h>
#include <sdbus-c++/IConnection.h>

#include "common/unique_fd.h"
#include "common/xpud_types.h"

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
  // How a refresh found xpud: answering; not on the bus or refused (NameOwnerChanged or the
  // safety refresh will tell when that changes); or owning its name without answering in time.
  enum class Reach { kAnswered, kUnavailable, kNoAnswer };

  void watch_loop();
  Reach refresh(sdbus::IConnection& connection, bool force_notify);
  std::vector<VfioFunctionInfo> vfio_functions(sdbus::IConnection& connection);
  // Reads a small property of xpud; false (and the view set absent) when it did not answer in time.
  bool probe(sdbus::IConnection& connection);
  void report_no_answer(const sdbus::Error& e);
  void set_absent(bool force_notify);
  void publish(const DeviceView& fresh, bool force_notify);
  void wait_wakeup(std::chrono::milliseconds timeout);

  const ClientOptions options_;
  mutable std::mutex view_mutex_;
  DeviceView view_;
  Listener listener_;
  UniqueFd wakeup_;  // written to stop the thread
  std::atomic<bool> stop_ = false;
  bool no_answer_reported_ = false;  // watcher thread only: one warning per episode
  std::thread thread_;
};

}  // namespace xpu
