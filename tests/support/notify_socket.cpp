#include "tests/support/notify_socket.h"

#include <sys/socket.h>
#include <sys/un.h>

#include <cstring>
#include <stdexcept>

#include "tests/support/wait.h"

namespace xpu::test {

NotifySocket::NotifySocket(const std::filesystem::path& path) : path_(path.string()) {
  fd_.reset(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path_.size() >= sizeof addr.sun_path) throw std::runtime_error("notify socket path too long");
  std::memcpy(addr.sun_path, path_.c_str(), path_.size() + 1);
  if (::bind(fd_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    throw std::runtime_error("cannot bind notify socket " + path_);
}

void NotifySocket::poll() {
  char buf[4096];
  while (true) {
    ssize_t n = ::recv(fd_.get(), buf, sizeof buf, 0);
    if (n <= 0) return;
    messages_.emplace_back(buf, static_cast<size_t>(n));
  }
}

int NotifySocket::wait_for(const std::string& line, std::chrono::milliseconds timeout,
                           size_t skip) {
  int found = -1;
  wait_until(
      [&] {
        poll();
        for (size_t i = skip; i < messages_.size(); ++i) {
          // Each datagram holds newline-separated assignments.
          std::string text = "\n" + messages_[i] + "\n";
          if (text.find("\n" + line + "\n") != std::string::npos) {
            found = static_cast<int>(i);
            return true;
          }
        }
        return false;
      },
      timeout);
  return found;
}

std::vector<std::string> NotifySocket::messages() {
  poll();
  return messages_;
}

}  // namespace xpu::test
