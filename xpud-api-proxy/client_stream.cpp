#include "xpud-api-proxy/client_stream.h"

#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace xpu::api_proxy {
namespace {

// How much is read from a socket at once, and how many filtered bytes may wait for sd-bus before
// the client is no longer read from (so a client that writes faster than it is served is slowed
// down by its own socket, not buffered here).
constexpr std::size_t kChunkBytes = 64 * 1024;

bool would_block(int error) {
  return error == EAGAIN || error == EWOULDBLOCK || error == EINTR;
}

// Reads up to `room` bytes from a client socket into `out`. Any descriptors sent along are closed:
// the proxy negotiates no fd passing, so none may reach sd-bus or stay open here.
ssize_t receive_without_fds(int fd, char* out, std::size_t room) {
  iovec io{out, room};
  alignas(cmsghdr) std::array<char, CMSG_SPACE(sizeof(int) * 16)> control{};
  msghdr message{};
  message.msg_iov = &io;
  message.msg_iovlen = 1;
  message.msg_control = control.data();
  message.msg_controllen = control.size();
  const ssize_t n = ::recvmsg(fd, &message, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  if (n < 0) return n;
  for (cmsghdr* c = CMSG_FIRSTHDR(&message); c; c = CMSG_NXTHDR(&message, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int passed = -1;
      std::memcpy(&passed, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      ::close(passed);
    }
  }
  // Descriptors beyond the control buffer's room were closed by the kernel (MSG_CTRUNC).
  return n;
}

}  // namespace

ClientStream::ClientStream(UniqueFd client, sd_event* event, StreamLimits limits,
                           std::function<void(const std::string&)> on_close)
    : client_(std::move(client)),
      limits_(limits),
      on_close_(std::move(on_close)),
      filter_(limits.max_message_bytes) {
  int ends[2] = {-1, -1};
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, ends) < 0)
    throw std::runtime_error(std::string("socketpair: ") + std::strerror(errno));
  bus_end_.reset(ends[0]);
  proxy_end_.reset(ends[1]);
  sd_event_source* source = nullptr;
  int r = sd_event_add_io(event, &source, client_.get(), EPOLLIN, &ClientStream::on_client, this);
  if (r < 0) throw std::runtime_error(std::string("watching a client: ") + std::strerror(-r));
  client_source_.reset(source);
  r = sd_event_add_io(event, &source, proxy_end_.get(), EPOLLIN, &ClientStream::on_bus_end, this);
  if (r < 0) throw std::runtime_error(std::string("watching a client: ") + std::strerror(-r));
  bus_end_source_.reset(source);
}

ClientStream::~ClientStream() {
  stop();
}

UniqueFd ClientStream::take_bus_end() {
  return std::move(bus_end_);
}

void ClientStream::stop() {
  if (stopped_) return;
  stopped_ = true;
  client_source_.reset();
  bus_end_source_.reset();
  release_output(to_client_.size());
  to_client_.clear();
  to_bus_.clear();
}

void ClientStream::fail(const std::string& why) {
  if (stopped_) return;
  stop();
  if (on_close_) on_close_(why);
}

int ClientStream::on_client(sd_event_source*, int, std::uint32_t revents, void* userdata) {
  auto* self = static_cast<ClientStream*>(userdata);
  // A hung-up client cannot read an answer: what it sent last is not worth serving. (Checked
  // first: while its input waits for sd-bus it is not read, and a level-triggered hang-up would
  // otherwise wake the loop again and again.)
  if (revents & (EPOLLHUP | EPOLLERR)) {
    self->fail((revents & EPOLLERR) ? "its socket failed" : "it hung up");
    return 0;
  }
  if (revents & EPOLLIN) self->read_client();
  if (!self->stopped_ && (revents & EPOLLOUT)) self->write_client();
  if (!self->stopped_) self->update_events();
  return 0;
}

int ClientStream::on_bus_end(sd_event_source*, int, std::uint32_t revents, void* userdata) {
  auto* self = static_cast<ClientStream*>(userdata);
  if (revents & (EPOLLIN | EPOLLHUP | EPOLLERR)) self->read_bus_end();
  if (!self->stopped_ && (revents & EPOLLOUT)) self->write_bus_end();
  if (!self->stopped_) {
    self->write_client();
    if (!self->stopped_) self->update_events();
  }
  return 0;
}

void ClientStream::read_client() {
  std::array<char, kChunkBytes> buffer;
  while (!stopped_ && to_bus_.size() < kChunkBytes) {
    const ssize_t n = receive_without_fds(client_.get(), buffer.data(), buffer.size());
    if (n == 0) return fail("it hung up");
    if (n < 0) {
      if (would_block(errno)) break;
      return fail(std::string("reading from it failed: ") + std::strerror(errno));
    }
    if (auto status =
            filter_.feed(std::string_view(buffer.data(), static_cast<std::size_t>(n)), to_bus_);
        !status)
      return fail(status.error());
  }
  write_bus_end();
}

void ClientStream::write_bus_end() {
  while (!stopped_ && !to_bus_.empty()) {
    const ssize_t n = ::send(proxy_end_.get(), to_bus_.data(), to_bus_.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (would_block(errno)) return;
      return fail(std::string("its connection ended: ") + std::strerror(errno));
    }
    to_bus_.erase(0, static_cast<std::size_t>(n));
  }
}

void ClientStream::pump_output() {
  if (stopped_) return;
  read_bus_end();
  if (!stopped_) write_client();
  if (!stopped_) update_events();
}

void ClientStream::read_bus_end() {
  std::array<char, kChunkBytes> buffer;
  while (!stopped_) {
    const ssize_t n = ::recv(proxy_end_.get(), buffer.data(), buffer.size(), MSG_DONTWAIT);
    if (n == 0) return fail("its connection was closed");
    if (n < 0) {
      if (would_block(errno)) return;
      return fail(std::string("its connection ended: ") + std::strerror(errno));
    }
    if (!account_output(static_cast<std::size_t>(n))) return;
    to_client_.append(buffer.data(), static_cast<std::size_t>(n));
  }
}

void ClientStream::write_client() {
  while (!stopped_ && !to_client_.empty()) {
    const ssize_t n =
        ::send(client_.get(), to_client_.data(), to_client_.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (would_block(errno)) return;
      return fail(std::string("writing to it failed: ") + std::strerror(errno));
    }
    to_client_.erase(0, static_cast<std::size_t>(n));
    release_output(static_cast<std::size_t>(n));
  }
  // A buffer that grew for a burst gives its memory back once the client has read it.
  if (to_client_.empty() && to_client_.capacity() > kChunkBytes) std::string().swap(to_client_);
}

bool ClientStream::account_output(std::size_t added) {
  if (to_client_.size() + added > limits_.max_output_bytes) {
    fail("it stopped reading: more than " + std::to_string(limits_.max_output_bytes) +
         " bytes waiting for it");
    return false;
  }
  if (OutputPool* pool = limits_.shared_output) {
    if (pool->used + added > pool->limit) {
      fail("it stopped reading while the clients of uids other than 0 had " +
           std::to_string(pool->used) + " bytes waiting, their limit " +
           std::to_string(pool->limit));
      return false;
    }
    pool->used += added;
  }
  return true;
}

void ClientStream::release_output(std::size_t removed) {
  if (OutputPool* pool = limits_.shared_output) pool->used -= std::min(pool->used, removed);
}

void ClientStream::update_events() {
  // The client is read only while sd-bus keeps up with it, and watched for room while output
  // waits; our end is watched for room while input waits for sd-bus.
  std::uint32_t client_events = 0;
  if (to_bus_.size() < kChunkBytes) client_events |= EPOLLIN;
  if (!to_client_.empty()) client_events |= EPOLLOUT;
  sd_event_source_set_io_events(client_source_.get(), client_events);
  sd_event_source_set_io_events(bus_end_source_.get(),
                                EPOLLIN | (to_bus_.empty() ? 0u : static_cast<unsigned>(EPOLLOUT)));
}

}  // namespace xpu::api_proxy
