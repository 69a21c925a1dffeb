#include "xpud/events/injected_device_events.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <array>
#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "common/unique_fd.h"

namespace xpud {
namespace {

// A uevent's buffer in the kernel is 2 KiB; anything much larger is not one.
constexpr std::size_t kMaxDatagram = 8192;

bool is_printable(std::string_view text) {
  for (char c : text)
    if (c < 0x20 || c > 0x7e) return false;
  return true;
}

class InjectedDeviceEvents final : public DeviceEventSource {
 public:
  InjectedDeviceEvents(std::filesystem::path path, xpu::UniqueFd socket, DeviceEventSink sink)
      : path_(std::move(path)), socket_(std::move(socket)), sink_(std::move(sink)) {}
  ~InjectedDeviceEvents() override {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }

  std::string description() const override {
    return "test events from " + path_.string() + " (" + kInjectedEventsVariable + ")";
  }
  int fd() const override { return socket_.get(); }

  xpu::Status dispatch() override {
    std::array<char, kMaxDatagram + 1> buffer;
    while (true) {
      ssize_t n = ::recv(socket_.get(), buffer.data(), buffer.size(), MSG_DONTWAIT | MSG_TRUNC);
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) return xpu::ok_status();
        if (errno == EINTR) continue;
        return xpu::Error{"receiving on " + path_.string() + ": " + std::strerror(errno)};
      }
      if (static_cast<std::size_t>(n) > kMaxDatagram) {
        spdlog::warn("{}: ignoring a datagram of {} bytes (at most {})", path_.string(), n,
                     kMaxDatagram);
        continue;
      }
      auto event =
          parse_uevent_properties(std::string_view(buffer.data(), static_cast<std::size_t>(n)));
      if (!event) {
        spdlog::warn("{}: ignoring an event: {}", path_.string(), event.error());
        continue;
      }
      sink_(*event);
    }
  }

 private:
  std::filesystem::path path_;
  xpu::UniqueFd socket_;
  DeviceEventSink sink_;
};

}  // namespace

xpu::Result<DeviceEvent> parse_uevent_properties(std::string_view datagram) {
  DeviceEvent event;
  std::string devpath;
  while (!datagram.empty()) {
    std::size_t end = datagram.find_first_of(std::string_view("\n\0", 2));
    std::string_view line = datagram.substr(0, end);
    datagram.remove_prefix(end == std::string_view::npos ? datagram.size() : end + 1);
    if (line.empty()) continue;
    std::size_t eq = line.find('=');
    if (eq == std::string_view::npos || eq == 0)
      return xpu::Error{"'" + std::string(line.substr(0, 64)) + "' is not KEY=VALUE"};
    std::string_view key = line.substr(0, eq), value = line.substr(eq + 1);
    if (!is_printable(value) || value.size() > 1024)
      return xpu::Error{"the value of " + std::string(key.substr(0, 64)) +
                        " is not printable text of at most 1024 bytes"};
    if (key == "ACTION")
      event.action = value;
    else if (key == "SUBSYSTEM")
      event.subsystem = value;
    else if (key == "DEVPATH")
      devpath = value;
    else if (key == "PCI_ID")
      event.pci_id = value;
  }
  if (event.action.empty()) return xpu::Error{"no ACTION"};
  if (event.subsystem.empty()) return xpu::Error{"no SUBSYSTEM"};
  // The sysname is the device path's last component, as sd-device derives it.
  std::size_t slash = devpath.find_last_of('/');
  event.sysname = slash == std::string::npos ? devpath : devpath.substr(slash + 1);
  if (event.sysname.empty()) return xpu::Error{"no DEVPATH (or one ending in '/')"};
  return event;
}

xpu::Result<std::unique_ptr<DeviceEventSource>> make_injected_device_events(
    const std::filesystem::path& socket_path, DeviceEventSink sink) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string path = socket_path.string();
  if (path.empty() || path.size() >= sizeof address.sun_path)
    return xpu::Error{"'" + path + "' is not a usable socket path (at most " +
                      std::to_string(sizeof address.sun_path - 1) + " bytes)"};
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  xpu::UniqueFd socket(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!socket.valid()) return xpu::Error{std::string("socket: ") + std::strerror(errno)};
  if (::bind(socket.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) < 0)
    return xpu::Error{"cannot bind " + path + ": " + std::strerror(errno)};
  // Only our own user may inject (umask() would be process-wide, and other threads run).
  if (::chmod(path.c_str(), 0600) < 0) {
    const int error = errno;
    ::unlink(path.c_str());
    return xpu::Error{"cannot chmod " + path + ": " + std::strerror(error)};
  }
  return std::unique_ptr<DeviceEventSource>(
      std::make_unique<InjectedDeviceEvents>(socket_path, std::move(socket), std::move(sink)));
}

}  // namespace xpud
