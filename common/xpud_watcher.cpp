#include "common/xpud_watcher.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <stdexcept>

#include <sdbus-c++/sdbus-c++.h>
#include <spdlog/spdlog.h>

#include "common/names.h"
#include "common/xpud_connection.h"
#include "common/xpud_properties.h"

namespace xpu {

XpudWatcher::~XpudWatcher() {
  if (!thread_.joinable()) return;
  stop_ = true;
  const std::uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(wakeup_.get(), &one, sizeof one);
  thread_.join();
}

void XpudWatcher::start(Listener listener) {
  std::lock_guard lock(view_mutex_);
  if (thread_.joinable()) return;
  wakeup_.reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wakeup_.valid()) throw std::runtime_error("eventfd failed");
  listener_ = std::move(listener);
  thread_ = std::thread([this] { watch_loop(); });
}

DeviceView XpudWatcher::current_view() const {
  std::lock_guard lock(view_mutex_);
  return view_;
}

void XpudWatcher::watch_loop() {
  auto backoff = std::chrono::milliseconds(250);
  bool first = true;
  while (!stop_) {
    try {
      auto connection = open_connection(options_);
      std::atomic<bool> dirty = true;
      const std::string bus_name(names::kBusName);
      auto owner_slot = connection->addMatch(
          "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',"
          "member='NameOwnerChanged',arg0='" + bus_name + "'",
          [&](sdbus::Message&) { dirty = true; });
      // Metrics never come as signals: any signal from xpud means a state change.
      auto xpud_slot = connection->addMatch("type='signal',sender='" + bus_name + "'",
                                            [&](sdbus::Message&) { dirty = true; });
      backoff = std::chrono::milliseconds(250);
      auto next_resync = std::chrono::steady_clock::now();
      while (!stop_) {
        while (connection->processPendingRequest()) {
        }
        auto now = std::chrono::steady_clock::now();
        if (dirty || first || now >= next_resync) {
          dirty = false;
          refresh(*connection, first);
          first = false;
          next_resync = now + std::chrono::seconds(30);
        }
        auto poll_data = connection->getEventLoopPollData();
        int timeout = poll_data.getPollTimeout();
        int until_resync = static_cast<int>(
            std::chrono::duration_cast<std::chrono::milliseconds>(next_resync - now).count());
        timeout = timeout < 0 ? until_resync : std::min(timeout, until_resync);
        pollfd fds[2] = {{poll_data.fd, poll_data.events, 0}, {wakeup_.get(), POLLIN, 0}};
        if (::poll(fds, 2, std::max(timeout, 0)) < 0 && errno != EINTR) break;
        if (fds[0].revents & (POLLHUP | POLLERR))
          throw sdbus::Error("org.freedesktop.DBus.Error.Disconnected", "bus connection closed");
      }
    } catch (const sdbus::Error& e) {
      spdlog::warn("D-Bus connection to {} lost or unavailable: {}; retrying in {} ms",
                   bus_description(options_), e.getMessage(), backoff.count());
      set_absent(first);
      first = false;
      wait_wakeup(backoff);
      backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
    }
  }
}

void XpudWatcher::refresh(sdbus::IConnection& connection, bool force_notify) {
  DeviceView fresh;
  try {
    auto manager = fetch_manager(connection, options_.call_timeout);
    auto devices = fetch_devices(connection, options_.call_timeout);
    if (manager && devices) {
      fresh.xpud_present = true;
      fresh.manager = std::move(*manager);
      fresh.devices = std::move(*devices);
    } else {
      spdlog::warn("xpud answered with malformed data: {}",
                   manager ? devices.error() : manager.error());
    }
  } catch (const sdbus::Error& e) {
    // An error the bus or xpud answered means xpud is absent or unusable for now; anything
    // else means the connection itself failed, which the loop handles by reconnecting.
    const std::string& name = e.getName();
    if (name != "org.freedesktop.DBus.Error.ServiceUnknown" &&
        name != "org.freedesktop.DBus.Error.NameHasNoOwner" &&
        name.rfind("org.freedesktop.DBus.Error.", 0) != 0)
      throw;
    spdlog::debug("xpud not available: {}", describe_call_failure(e, options_));
  }
  if (!fresh.xpud_present) {
    set_absent(force_notify);
    return;
  }
  publish(std::move(fresh), force_notify);
}

void XpudWatcher::set_absent(bool force_notify) {
  DeviceView absent;
  {
    std::lock_guard lock(view_mutex_);
    absent.devices = view_.devices;  // the last known cards, so consumers can mark them
  }
  publish(std::move(absent), force_notify);
}

void XpudWatcher::publish(DeviceView fresh, bool force_notify) {
  bool changed;
  {
    std::lock_guard lock(view_mutex_);
    changed = force_notify || fresh.xpud_present != view_.xpud_present ||
              fresh.devices != view_.devices ||
              fresh.manager.driver_version != view_.manager.driver_version ||
              fresh.manager.backend != view_.manager.backend;
    view_ = fresh;
  }
  if (changed && listener_) listener_(fresh);
}

void XpudWatcher::wait_wakeup(std::chrono::milliseconds timeout) {
  pollfd pfd{wakeup_.get(), POLLIN, 0};
  ::poll(&pfd, 1, static_cast<int>(timeout.count()));
}

}  // namespace xpu
