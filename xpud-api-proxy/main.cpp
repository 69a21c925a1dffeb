// xpud-api-proxy: xpud's read-only D-Bus API on a socket of its own, for containers (see
// proxy_server.h for why). Run by xpud-api-proxy.service as the unprivileged user xpud-api,
// socket-activated on /run/xpud-api/bus.sock.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "common/command_line.h"
#include "common/logging.h"
#include "common/unique_fd.h"
#include "xpud-api-proxy/proxy_server.h"

namespace {

constexpr const char* kProgram = "xpud-api-proxy";
constexpr const char* kDefaultSocket = "/run/xpud-api/bus.sock";

// The socket systemd passed (xpud-api-proxy.socket), if any.
xpu::UniqueFd activated_socket() {
  const int count = sd_listen_fds(1);
  if (count < 0) throw std::runtime_error(std::string("sd_listen_fds: ") + std::strerror(-count));
  if (count == 0) return {};
  if (count > 1)
    throw std::runtime_error("expected one socket from systemd, got " + std::to_string(count));
  if (sd_is_socket_unix(SD_LISTEN_FDS_START, SOCK_STREAM, 1, nullptr, 0) <= 0)
    throw std::runtime_error("the socket from systemd is not a listening AF_UNIX stream socket");
  // systemd hands the socket over blocking; the accept loop drains it until EAGAIN, which a
  // blocking socket never returns (the loop would hang in accept and starve the watchdog).
  const int flags = ::fcntl(SD_LISTEN_FDS_START, F_GETFL);
  if (flags < 0 || ::fcntl(SD_LISTEN_FDS_START, F_SETFL, flags | O_NONBLOCK) < 0)
    throw std::runtime_error(std::string("the socket from systemd: cannot make it non-blocking: ") +
                             std::strerror(errno));
  return xpu::UniqueFd(SD_LISTEN_FDS_START);
}

// Binds `path` ourselves (tests, or running by hand). A stale socket from an earlier run is
// replaced; any other file at that path is left alone and reported.
xpu::UniqueFd bind_socket(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof address.sun_path)
    throw std::runtime_error("--listen " + path + ": path too long for a unix socket");
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode))
      throw std::runtime_error("--listen " + path + ": exists and is not a socket");
    ::unlink(path.c_str());
  }
  xpu::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) < 0)
    throw std::runtime_error("--listen " + path + ": " + std::strerror(errno));
  // Any local user may read xpud's API (the bus policy says so too); the filter, not the mode,
  // is what keeps clients to reads.
  if (::chmod(path.c_str(), 0666) < 0 || ::listen(fd.get(), SOMAXCONN) < 0)
    throw std::runtime_error("--listen " + path + ": " + std::strerror(errno));
  return fd;
}

int run(const std::vector<std::string>& args) {
  std::optional<std::string> bus_address;
  std::optional<spdlog::level::level_enum> log_level;
  std::string listen_path = kDefaultSocket;
  xpu::api_proxy::ProxyLimits limits;
  xpu::HelpAndVersion flags;
  xpu::CommandLine cli(kProgram, "[OPTIONS]");
  cli.add_option(
      "listen", "PATH",
      std::string("socket to serve when not socket-activated (default ") + kDefaultSocket + ")",
      [&](std::string_view value) -> xpu::Status {
        if (value.empty() || value.front() != '/') return xpu::Error{"must be an absolute path"};
        listen_path = std::string(value);
        return xpu::ok_status();
      });
  xpu::add_bus_address_option(cli, bus_address,
                              "reach xpud on the bus at ADDR instead of the system bus");
  cli.add_option("max-clients", "N", "clients served at once (default 64)",
                 [&](std::string_view value) -> xpu::Status {
                   auto n = xpu::parse_uint(value, 1, 4096);
                   if (!n) return xpu::Error{n.error()};
                   limits.max_clients = static_cast<unsigned>(*n);
                   return xpu::ok_status();
                 });
  xpu::add_log_level_option(cli, log_level, "error|warn|info|debug|trace (default info)");
  xpu::add_version_flag(cli, flags);
  xpu::add_help_flag(cli, flags);
  xpu::parse_program_command_line(cli, args, flags, xpu::Positionals::kRefused);
  xpu::setup_logging(kProgram, log_level.value_or(spdlog::level::info));
  auto socket = activated_socket();
  if (!socket.valid()) socket = bind_socket(listen_path);
  xpu::api_proxy::ProxyServer server(std::move(socket), bus_address, limits);
  return server.run();
}

}  // namespace

int main(int argc, char** argv) {
  return xpu::run_main(kProgram, argc, argv, run);
}
