#include "xpud/events/device_event_watcher.h"

#include <poll.h>
#include <sys/eventfd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <spdlog/spdlog.h>

#include "xpud/events/injected_device_events.h"
#include "xpud/events/uevent_monitor.h"

namespace xpud {

DeviceEventSink make_filtered_sink(std::function<void(const DeviceEvent&)> on_xpu_event) {
  return [on_xpu_event = std::move(on_xpu_event)](const DeviceEvent& event) {
    const bool ours = concerns_xpu(event);
    spdlog::debug("device event: {}{}", describe(event), ours ? "" : " (not an XPU)");
    if (ours) on_xpu_event(event);
  };
}

std::unique_ptr<DeviceEventWatcher> DeviceEventWatcher::start(
    std::function<void(const DeviceEvent&)> on_xpu_event, const std::string& fallback) {
  auto sink = make_filtered_sink(std::move(on_xpu_event));
  const char* injected = std::getenv(kInjectedEventsVariable);
  auto source = injected != nullptr && *injected != '\0'
                    ? make_injected_device_events(injected, std::move(sink))
                    : make_uevent_monitor(std::move(sink));
  if (!source) {
    spdlog::warn("no device events ({}); {}", source.error(), fallback);
    return nullptr;
  }
  spdlog::info("watching {}", (*source)->description());
  return std::make_unique<DeviceEventWatcher>(std::move(*source));
}

DeviceEventWatcher::DeviceEventWatcher(std::unique_ptr<DeviceEventSource> source)
    : source_(std::move(source)), stop_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  if (!stop_.valid()) {
    // Without a way to stop the thread there is no thread: the rescan still finds the cards.
    spdlog::warn("no device events (eventfd: {}); relying on the rescan", std::strerror(errno));
    return;
  }
  thread_ = std::thread([this] { run(); });
}

DeviceEventWatcher::~DeviceEventWatcher() {
  if (thread_.joinable()) {
    const std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(stop_.get(), &one, sizeof one);
    thread_.join();
  }
}

void DeviceEventWatcher::run() {
  while (true) {
    pollfd fds[2] = {{source_->fd(), POLLIN, 0}, {stop_.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      spdlog::warn("device events stopped (poll: {}); relying on the rescan", std::strerror(errno));
      return;
    }
    if (fds[1].revents & POLLIN) return;
    if (fds[0].revents & POLLIN) {
      if (auto status = source_->dispatch(); !status) {
        spdlog::warn("device events stopped ({}); relying on the rescan", status.error());
        return;
      }
    } else if (fds[0].revents & (POLLERR | POLLHUP | POLLNVAL)) {
      spdlog::warn("device events stopped (the source's descriptor failed); relying on the rescan");
      return;
    }
  }
}

}  // namespace xpud
