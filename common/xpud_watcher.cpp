#include "common/xpud_watcher.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include <sdbus-c++/sdbus-c++.h>
#include <spdlog/spdlog.h>

#include "common/names.h"
#include "common/xpud_connection.h"
#include "common/xpud_properties.h"
#include "common/xpud_signals.h"
#include "common/xpud_vfio_client.h"

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

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// A refresh every kResyncEvery is the safety net for a missed signal. A hung xpud (stopped,
// or its event loop stuck) keeps its name and sends nothing, so while it answers it is probed
// every kProbeEvery; while it owns its name without answering it is asked again every
// kNoAnswerRetry, so that it counts as present again within a second of answering.
constexpr auto kResyncEvery = 30s;
constexpr auto kProbeEvery = 5s;
constexpr auto kNoAnswerRetry = 1s;

// A read of the Manager's Version: answered from xpud's own event loop, so an answer means that
// loop runs. (Not Peer.Ping: the system bus policy lets only root send that to xpud, and a
// refused call would read as a hung xpud.)
void probe_call(sdbus::IConnection& connection, std::chrono::milliseconds timeout) {
  auto proxy = sdbus::createProxy(connection, std::string(names::kBusName),
                                  std::string(names::kManagerPath));
  sdbus::Variant version;
  proxy->callMethod("Get")
      .onInterface(std::string(names::bus::kPropertiesInterface))
      .withTimeout(timeout)
      .withArguments(std::string(names::kManagerInterface), std::string(names::property::kVersion))
      .storeResultsTo(version);
}

// An error the bus or xpud answered (as opposed to the connection failing, which the caller
// handles by reconnecting).
bool is_bus_answer(const sdbus::Error& e) {
  return e.getName().rfind(names::bus::kErrorPrefix, 0) == 0;
}

// xpud owns its name and let the call time out. Other refusals (a bus policy, a proxy) are
// answers, and say nothing about whether xpud runs.
bool is_no_answer(const sdbus::Error& e) {
  return e.getName() == names::bus::kErrorNoReply || e.getName() == names::bus::kErrorTimeout;
}

// The header of a received signal, held for the checks of common/xpud_signals.h; nullopt when
// sdbus-c++ cannot read it (a message without a sender, from no bus).
struct ReceivedSignal {
  std::string sender, destination, path, interface, member;
  SignalOrigin origin() const { return {sender, destination, path, interface, member}; }
};

std::optional<ReceivedSignal> header_of(sdbus::Message& message) {
  try {
    return ReceivedSignal{message.getSender(), message.getDestination(), message.getPath(),
                          message.getInterfaceName(), message.getMemberName()};
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// The unique name that owns xpud's bus name now, "" when none does (or the bus would not say:
// then xpud's signals are ignored until the next NameOwnerChanged, and the periodic refresh
// stands in for them). Throws sdbus::Error when the connection failed.
std::string xpud_owner(sdbus::IConnection& connection, std::chrono::milliseconds timeout) {
  const std::string driver(names::bus::kDriverName);
  auto proxy = sdbus::createProxy(connection, driver, std::string(names::bus::kDriverPath));
  std::string owner;
  try {
    proxy->callMethod(std::string(names::bus::kGetNameOwner))
        .onInterface(driver)
        .withTimeout(timeout)
        .withArguments(std::string(names::kBusName))
        .storeResultsTo(owner);
  } catch (const sdbus::Error& e) {
    if (!is_bus_answer(e)) throw;
    return "";
  }
  return owner;
}

int milliseconds_until(Clock::time_point when, Clock::time_point now) {
  return static_cast<int>(std::clamp<std::int64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(when - now).count(), 0,
      24 * 3600 * 1000));
}

}  // namespace

void XpudWatcher::watch_loop() {
  auto backoff = std::chrono::milliseconds(250);
  bool first = true;
  const std::string bus_name(names::kBusName);
  const std::string driver(names::bus::kDriverName);
  const std::string owner_rule = "type='signal',sender='" + driver + "',interface='" + driver +
                                 "',member='" + std::string(names::bus::kNameOwnerChanged) +
                                 "',arg0='" + bus_name + "'";
  // Metrics never come as signals: any signal from xpud means a state change.
  const std::string xpud_rule = "type='signal',sender='" + bus_name + "'";
  while (!stop_) {
    try {
      auto connection = open_connection(options_);
      std::atomic<bool> dirty = true;
      // The rules choose what the bus broadcasts to us; a signal another peer addresses to us
      // passes them too, so each is checked (common/xpud_signals.h). A forged one would only cost
      // a refresh (the view comes from calls to xpud's name, which only the bus routes), but a
      // peer that sends them without pause would keep the watcher asking xpud all the time.
      std::string owner;  // of xpud's name, as the bus driver said; this thread only
      auto owner_slot = connection->addMatch(owner_rule, [&](sdbus::Message& m) {
        const auto header = header_of(m);
        if (!header || why_not_driver_owner_change(header->origin())) return;
        std::string name, old_owner, new_owner;
        try {
          m >> name >> old_owner >> new_owner;
        } catch (const sdbus::Error&) {
          return;
        }
        if (name != bus_name) return;
        owner = new_owner;
        dirty = true;
      });
      auto xpud_slot = connection->addMatch(xpud_rule, [&](sdbus::Message& m) {
        const auto header = header_of(m);
        if (header && !why_not_xpud_signal(header->origin(), owner)) dirty = true;
      });
      // Asked after subscribing, so no change falls in between; a NameOwnerChanged that arrived
      // before the answer is dispatched after it, and wins, as it should.
      owner = xpud_owner(*connection, options_.call_timeout);
      backoff = std::chrono::milliseconds(250);
      auto next_resync = Clock::now();
      auto next_probe = Clock::time_point::max();
      while (!stop_) {
        while (connection->processPendingRequest()) {
        }
        auto now = Clock::now();
        if (dirty || first || now >= next_resync) {
          dirty = false;
          const Reach reach = refresh(*connection, first);
          first = false;
          now = Clock::now();
          next_resync = now + (reach == Reach::kNoAnswer ? kNoAnswerRetry : kResyncEvery);
          next_probe = reach == Reach::kAnswered ? now + kProbeEvery : Clock::time_point::max();
        } else if (now >= next_probe) {
          if (probe(*connection)) {
            next_probe = Clock::now() + kProbeEvery;
          } else {
            next_probe = Clock::time_point::max();
            next_resync = Clock::now() + kNoAnswerRetry;
          }
        }
        now = Clock::now();
        auto poll_data = connection->getEventLoopPollData();
        int timeout = poll_data.getPollTimeout();
        int until_next = milliseconds_until(std::min(next_resync, next_probe), now);
        timeout = timeout < 0 ? until_next : std::min(timeout, until_next);
        pollfd fds[2] = {{poll_data.fd, poll_data.events, 0}, {wakeup_.get(), POLLIN, 0}};
        if (::poll(fds, 2, std::max(timeout, 0)) < 0 && errno != EINTR) break;
        if (fds[0].revents & (POLLHUP | POLLERR))
          throw sdbus::Error(std::string(names::bus::kErrorDisconnected), "bus connection closed");
      }
    } catch (const sdbus::Error& e) {
      spdlog::warn("D-Bus connection to {} lost or unavailable: {}; retrying in {} ms",
                   bus_description(options_), e.getMessage(), backoff.count());
      no_answer_reported_ = false;
      set_absent(first);
      first = false;
      wait_wakeup(backoff);
      backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
    }
  }
}

bool XpudWatcher::probe(sdbus::IConnection& connection) {
  try {
    probe_call(connection, options_.call_timeout);
    return true;
  } catch (const sdbus::Error& e) {
    if (!is_bus_answer(e)) throw;
    // Gone from the bus: NameOwnerChanged says so too, and the refresh it causes reports it.
    if (!is_no_answer(e)) return true;
    report_no_answer(e);
    set_absent(false);
    return false;
  }
}

void XpudWatcher::report_no_answer(const sdbus::Error& e) {
  if (no_answer_reported_) return;
  no_answer_reported_ = true;
  spdlog::warn(
      "xpud is on the bus but does not answer ({}); counting it as absent until it does, asking "
      "every {} s",
      describe_call_failure(e, options_), kNoAnswerRetry.count());
}

// Vfio.Devices; none from an xpud without the interface (older than cards for virtual machines)
// or with a malformed answer (a warning). A failed connection throws, as every call here.
std::vector<VfioFunctionInfo> XpudWatcher::vfio_functions(sdbus::IConnection& connection) {
  try {
    auto functions = fetch_vfio_functions(connection, options_.call_timeout);
    if (functions) return std::move(*functions);
    spdlog::warn("xpud answered with malformed data: {}", functions.error());
  } catch (const sdbus::Error& e) {
    if (!is_bus_answer(e) || is_no_answer(e)) throw;
    spdlog::debug("xpud lists no functions on vfio-pci: {}", e.getMessage());
  }
  return {};
}

XpudWatcher::Reach XpudWatcher::refresh(sdbus::IConnection& connection, bool force_notify) {
  DeviceView fresh;
  Reach reach = Reach::kAnswered;
  try {
    auto manager = fetch_manager(connection, options_.call_timeout);
    auto devices = fetch_devices(connection, options_.call_timeout);
    if (manager && devices) {
      fresh.xpud_present = true;
      fresh.manager = std::move(*manager);
      fresh.devices = std::move(*devices);
      fresh.vfio_functions = vfio_functions(connection);
    } else {
      spdlog::warn("xpud answered with malformed data: {}",
                   manager ? devices.error() : manager.error());
    }
  } catch (const sdbus::Error& e) {
    // An error the bus or xpud answered means xpud is absent or unusable for now; anything
    // else means the connection itself failed, which the loop handles by reconnecting.
    if (!is_bus_answer(e)) throw;
    if (is_no_answer(e)) {
      reach = Reach::kNoAnswer;
      report_no_answer(e);
    } else {
      reach = Reach::kUnavailable;
      spdlog::debug("xpud not available: {}", describe_call_failure(e, options_));
    }
  }
  if (!fresh.xpud_present) {
    set_absent(force_notify);
    return reach;
  }
  if (no_answer_reported_) spdlog::info("xpud answers again");
  no_answer_reported_ = false;
  publish(fresh, force_notify);
  return reach;
}

void XpudWatcher::set_absent(bool force_notify) {
  DeviceView absent;
  {
    std::lock_guard lock(view_mutex_);
    absent.devices = view_.devices;  // the last known cards, so consumers can mark them
    absent.vfio_functions = view_.vfio_functions;
  }
  publish(absent, force_notify);
}

void XpudWatcher::publish(const DeviceView& fresh, bool force_notify) {
  bool changed;
  {
    std::lock_guard lock(view_mutex_);
    changed = force_notify || fresh.xpud_present != view_.xpud_present ||
              fresh.devices != view_.devices || fresh.vfio_functions != view_.vfio_functions ||
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
