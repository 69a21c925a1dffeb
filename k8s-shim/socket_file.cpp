#include "k8s-shim/socket_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

#include "common/unique_fd.h"

namespace shim {
namespace {

std::filesystem::path directory_of(const std::filesystem::path& path) {
  return path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
}

// Held by our processes around every rename into and removal from a socket directory, so that
// "the path still holds our inode, so unlink it" cannot remove a socket another process renamed
// there in between. An advisory flock on the directory itself: no file of ours in the kubelet's
// directory, and the kernel drops it with a process that dies. Only rename and unlink run under
// it. Without the directory there is nothing to serialise, and the operation fails on its own.
class DirectoryLock {
 public:
  explicit DirectoryLock(const std::filesystem::path& path)
      : fd_(::open(directory_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {
    if (!fd_.valid()) return;
    while (::flock(fd_.get(), LOCK_EX) != 0 && errno == EINTR) {
    }
  }

 private:
  xpu::UniqueFd fd_;  // closing it unlocks
};

xpu::Status check_length(const std::filesystem::path& path) {
  const std::string text = path.string();
  if (text.size() >= sizeof(sockaddr_un::sun_path))
    return xpu::Error{"socket path " + text + " is longer than a unix socket address allows (" +
                      std::to_string(sizeof(sockaddr_un::sun_path) - 1) + " characters)"};
  return xpu::ok_status();
}

xpu::Status refuse_other_files(const std::filesystem::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode))
      return xpu::Error{path.string() + " exists and is not a socket; refusing to replace it"};
  } else if (errno != ENOENT) {
    return xpu::Error{"cannot inspect " + path.string() + ": " + std::strerror(errno)};
  }
  return xpu::ok_status();
}

// connect() on a non-blocking unix stream socket: the connected socket, or an invalid one and the
// failure's errno in `error`.
xpu::UniqueFd connect_without_waiting(const std::filesystem::path& path, int& error) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string text = path.string();
  if (text.size() >= sizeof address.sun_path) {
    error = ENAMETOOLONG;
    return {};
  }
  std::memcpy(address.sun_path, text.c_str(), text.size() + 1);
  xpu::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) {
    error = errno;
    return {};
  }
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    error = errno;
    return {};
  }
  return fd;
}

}  // namespace

xpu::Status check_socket_path(const std::filesystem::path& path) {
  if (auto fits = check_length(path); !fits) return fits;
  return refuse_other_files(path);
}

xpu::Result<std::filesystem::path> private_bind_path(const std::filesystem::path& path) {
  std::random_device random;
  char name[32];
  std::snprintf(name, sizeof name, ".xpu-bind-%08x", static_cast<unsigned>(random()));
  std::filesystem::path bind_path = directory_of(path) / name;
  if (auto fits = check_length(bind_path); !fits)
    return xpu::Error{fits.error() + "; the socket is bound there before it is renamed to " +
                      path.string()};
  return bind_path;
}

bool socket_is_served(const std::filesystem::path& path) {
  int error = 0;
  if (connect_without_waiting(path, error).valid()) return true;
  // EAGAIN: a listener whose backlog is full, served all the same. ECONNREFUSED: nobody listens.
  return error == EAGAIN || error == EINPROGRESS;
}

xpu::Result<xpu::UniqueFd> connect_to_socket(const std::filesystem::path& path) {
  int error = 0;
  xpu::UniqueFd fd = connect_without_waiting(path, error);
  if (fd.valid()) return fd;
  if (error == EAGAIN || error == EINPROGRESS)
    return xpu::Error{"cannot connect to " + path.string() +
                      ": its listener's queue is full (the process does not accept)"};
  return xpu::Error{"cannot connect to " + path.string() + ": " + std::strerror(error)};
}

xpu::Result<BoundSocketFile> BoundSocketFile::publish(const std::filesystem::path& bound_at,
                                                      std::filesystem::path path) {
  DirectoryLock lock(path);
  struct stat st {};
  // The private name is ours alone, so this is the socket we bound (unless the kubelet, starting,
  // deleted it: then the caller retries).
  if (::lstat(bound_at.c_str(), &st) != 0)
    return xpu::Error{"socket " + bound_at.string() +
                      " vanished right after binding: " + std::strerror(errno)};
  if (!S_ISSOCK(st.st_mode))
    return xpu::Error{bound_at.string() + " is not the socket bound there"};
  if (auto other = refuse_other_files(path); !other) return xpu::Error{other.error()};
  if (::rename(bound_at.c_str(), path.c_str()) != 0)
    return xpu::Error{"cannot move the socket bound at " + bound_at.string() + " to " +
                      path.string() + ": " + std::strerror(errno)};
  return BoundSocketFile(std::move(path), st.st_dev, st.st_ino);
}

BoundSocketFile::State BoundSocketFile::state() const {
  struct stat st {};
  if (::lstat(path_.c_str(), &st) != 0) return State::kGone;
  return S_ISSOCK(st.st_mode) && st.st_dev == device_ && st.st_ino == inode_ ? State::kOurs
                                                                             : State::kReplaced;
}

void BoundSocketFile::remove_if_ours() const {
  DirectoryLock lock(path_);
  if (present()) ::unlink(path_.c_str());
}

}  // namespace shim
