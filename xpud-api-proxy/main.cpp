// xpud-api-proxy: xpud's read-only D-Bus API on a socket of its own, for containers (see
// proxy_server.h for why). Run by xpud-api-proxy.service as the unprivileged user xpud-api,
// socket-activated on /run/xpud-api/bus.sock.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "common/command_line.h"
#include "common/logging.h"
#include "common/unique_fd.h"
#include "xpud-api-proxy/proxy_server.h"

namespace {

constexpr const char* kProgram = "xpud-api-proxy";
constexpr const char* kDefaultSocket = "/run/xpud-api/bus.sock";

// The sockets systemd passed (xpud-api-proxy.socket, xpud-api-proxy-sriov.socket), if any: the
// one named "sriov" (FileDescriptorName=) is the SR-IOV socket, any other the read-only one.
std::vector<xpu::api_proxy::ListeningSocket> activated_sockets() {
  char** names = nullptr;
  const int count = sd_listen_fds_with_names(1, &names);
  if (count < 0) throw std::runtime_error(std::string("sd_listen_fds: ") + std::strerror(-count));
  std::vector<xpu::api_proxy::ListeningSocket> sockets;
  std::vector<std::string> fd_names;
  for (int i = 0; names && names[i]; ++i) {
    fd_names.emplace_back(names[i]);
    std::free(names[i]);
  }
  std::free(names);
  for (int i = 0; i < count; ++i) {
    const int fd = SD_LISTEN_FDS_START + i;
    const std::string name = i < static_cast<int>(fd_names.size()) ? fd_names[i] : "unknown";
    xpu::UniqueFd owned(fd);
    if (sd_is_socket_unix(fd, SOCK_STREAM, 1, nullptr, 0) <= 0)
      throw std::runtime_error("the socket \"" + name +
                               "\" from systemd is not a listening AF_UNIX stream socket");
    // systemd hands sockets over blocking; the accept loop drains each until EAGAIN, which a
    // blocking socket never returns (the loop would hang in accept and starve the watchdog).
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
      throw std::runtime_error(
          "the socket \"" + name +
          "\" from systemd: cannot make it non-blocking: " + std::strerror(errno));
    const auto kind =
        name == "sriov" ? xpu::api_proxy::ApiSocket::Sriov : xpu::api_proxy::ApiSocket::ReadOnly;
    sockets.push_back({std::move(owned), kind, "the " + name + " socket from systemd"});
  }
  return sockets;
}

// Binds `path` ourselves (tests, or running by hand), with `mode`. A stale socket from an earlier
// run is replaced; any other file at that path is left alone and reported.
xpu::UniqueFd bind_socket(const std::string& flag, const std::string& path, mode_t mode) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof address.sun_path)
    throw std::runtime_error("--" + flag + " " + path + ": path too long for a unix socket");
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode))
      throw std::runtime_error("--" + flag + " " + path + ": exists and is not a socket");
    ::unlink(path.c_str());
  }
  xpu::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) < 0)
    throw std::runtime_error("--" + flag + " " + path + ": " + std::strerror(errno));
  // Any local user may read xpud's API (the bus policy says so too), so the read-only socket is
  // 0666 and the filter, not the mode, keeps its clients to reads; the SR-IOV socket is root's.
  if (::chmod(path.c_str(), mode) < 0 || ::listen(fd.get(), SOMAXCONN) < 0)
    throw std::runtime_error("--" + flag + " " + path + ": " + std::strerror(errno));
  return fd;
}

// The parser of a count of clients (1 to 4096) into `target`.
auto client_count(unsigned& target) {
  return [&target](std::string_view value) -> xpu::Status {
    auto n = xpu::parse_uint(value, 1, 4096);
    if (!n) return xpu::Error{n.error()};
    target = static_cast<unsigned>(*n);
    return xpu::ok_status();
  };
}

int run(const std::vector<std::string>& args) {
  std::optional<std::string> bus_address;
  std::optional<spdlog::level::level_enum> log_level;
  std::string listen_path = kDefaultSocket;
  std::optional<std::string> sriov_path;
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
  cli.add_option("listen-sriov", "PATH",
                 "also serve the SR-IOV socket, root's only (mode 0600): the reads and "
                 "ConfigureVirtualFunctions, when not socket-activated",
                 [&](std::string_view value) -> xpu::Status {
                   if (value.empty() || value.front() != '/')
                     return xpu::Error{"must be an absolute path"};
                   sriov_path = std::string(value);
                   return xpu::ok_status();
                 });
  xpu::add_bus_address_option(cli, bus_address,
                              "reach xpud on the bus at ADDR instead of the system bus");
  cli.add_option("max-clients", "N",
                 "clients served at once (default 128; a quarter of them kept for root)",
                 client_count(limits.max_clients));
  cli.add_option("max-clients-per-uid", "N",
                 "clients one uid other than 0 may have at once (default 16)",
                 client_count(limits.max_clients_per_uid));
  cli.add_option("max-message-size", "BYTES",
                 "largest message a client may send (default 131072; larger: LimitsExceeded, "
                 "never forwarded)",
                 [&](std::string_view value) -> xpu::Status {
                   // The system bus takes 32 MiB: a larger limit would let calls through that it
                   // answers by dropping the proxy's connection.
                   auto n = xpu::parse_uint(value, 1024, 32ull * 1024 * 1024 - 1);
                   if (!n) return xpu::Error{n.error()};
                   limits.max_message_bytes = *n;
                   return xpu::ok_status();
                 });
  xpu::add_log_level_option(cli, log_level, "error|warn|info|debug|trace (default info)");
  xpu::add_version_flag(cli, flags);
  xpu::add_help_flag(cli, flags);
  xpu::parse_program_command_line(cli, args, flags, xpu::Positionals::kRefused);
  xpu::setup_logging(kProgram, log_level.value_or(spdlog::level::info));
  auto sockets = activated_sockets();
  if (sockets.empty()) {
    sockets.push_back({bind_socket("listen", listen_path, 0666),
                       xpu::api_proxy::ApiSocket::ReadOnly, listen_path});
    if (sriov_path)
      sockets.push_back({bind_socket("listen-sriov", *sriov_path, 0600),
                         xpu::api_proxy::ApiSocket::Sriov, *sriov_path});
  }
  xpu::api_proxy::ProxyServer server(std::move(sockets), bus_address, limits);
  return server.run();
}

}  // namespace

int main(int argc, char** argv) {
  return xpu::run_main(kProgram, argc, argv, run);
}
