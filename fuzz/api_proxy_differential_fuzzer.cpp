// The API proxy's inbound filter against the sd-bus server it guards (differential). The input is a
// client's byte stream. It goes through InboundFilter (xpud-api-proxy/inbound_filter.h, limit
// 1 KiB here), and what the filter passes goes, as the proxy sends it, to a real sd-bus server
// connection set up by the proxy's own configure_client_bus, on a socketpair, driven by
// sd_bus_process until it has taken everything. The filter's output is written in the pieces the
// filter's framing gives it (the NUL, each authentication line, each message), and sd-bus is run
// dry after each piece, so that where the two part ways shows at the piece where it happens.
// Properties:
//   - sd-bus leaves its authentication exactly where the filter does: not before the BEGIN that
//     ended it for the filter, and by then (a filter that ends it elsewhere frames every later
//     byte differently from sd-bus: the smuggle of issue 39); sd-bus does not fail the connection
//     while the filter takes the authentication;
//   - after it, sd-bus delivers at most one message per message the filter passed, with that
//     message's serial and type, and nothing for a message the input ended inside; every message
//     the filter passes is at most the limit.
// sd-bus is not instrumented for coverage: its answers during the authentication (OK, DATA,
// REJECTED, ERROR) are classified here, so that inputs reaching new answers count as new, and an
// answer its server does not give with the proxy's settings (AGREE_UNIX_FD) fails the run.
#include <sys/socket.h>
#include <systemd/sd-bus.h>

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/unique_fd.h"
#include "fuzz/fuzz_support.h"
#include "xpud-api-proxy/client_bus.h"
#include "xpud-api-proxy/inbound_filter.h"

namespace {

using xpu::fuzz::check;

constexpr std::uint64_t kLimit = 1024;
constexpr std::size_t kFixedHeader = 16;
// sd_bus_process calls per piece at most (one message each, or one step of the authentication):
// far more than a piece of at most 16 KiB can need, so reaching it is a hang.
constexpr int kMaxRounds = 20000;
constexpr std::string_view kLocalInterface = "org.freedesktop.DBus.Local";

// What the filter passed, cut where its framing cuts it.
struct Piece {
  std::string bytes;
  bool message = false;  // a whole message (else an authentication line, or a message's start)
  std::uint32_t serial = 0;
  std::uint8_t type = 0;
};

struct Filtered {
  std::vector<Piece> authentication;  // the NUL, then each line up to the BEGIN that ended it
  std::vector<Piece> messages;        // then each message, the last possibly cut short
  bool authenticated = false;
};

std::uint32_t read_u32(std::string_view bytes, std::size_t at) {
  const bool little = bytes[0] == 'l';
  std::uint32_t value = 0;
  for (int i = 0; i < 4; ++i)
    value = (value << 8) | static_cast<std::uint8_t>(bytes[at + (little ? 3 - i : i)]);
  return value;
}

// The filter, fed byte by byte during the authentication (each growth of its output is one piece)
// and the rest at once; its output after the authentication cut into messages by the
// specification's framing (the fixed header, the fields padded to 8, the body).
Filtered run_filter(std::string_view stream) {
  xpu::api_proxy::InboundFilter filter(kLimit);
  Filtered result;
  std::string out;
  while (!stream.empty() && !filter.authenticated()) {
    const std::size_t before = out.size();
    const bool fed = static_cast<bool>(filter.feed(stream.substr(0, 1), out));
    stream.remove_prefix(1);
    if (out.size() > before) result.authentication.push_back({out.substr(before)});
    if (!fed) return result;
  }
  result.authenticated = filter.authenticated();
  out.clear();
  // On an error the proxy closes the connection; what came out before it is written anyway.
  (void)filter.feed(stream, out);
  std::string_view rest = out;
  while (!rest.empty()) {
    Piece piece;
    std::size_t size = rest.size();
    if (rest.size() >= kFixedHeader) {
      const std::uint64_t fields = read_u32(rest, 12);
      const std::uint64_t whole = kFixedHeader + fields + (8 - fields % 8) % 8 + read_u32(rest, 4);
      check(whole <= kLimit, "every message the filter passes is within the limit",
            std::to_string(whole) + " bytes");
      if (whole <= rest.size()) {
        size = static_cast<std::size_t>(whole);
        piece.message = true;
        piece.serial = read_u32(rest, 8);
        piece.type = static_cast<std::uint8_t>(rest[1]);
      }
    }
    piece.bytes = std::string(rest.substr(0, size));
    rest.remove_prefix(size);
    result.messages.push_back(std::move(piece));
  }
  return result;
}

struct Delivered {
  std::uint64_t cookie = 0;
  std::uint8_t type = 0;
};

// One sd-bus server connection as the proxy sets one up, on a socketpair whose other end is ours.
class Server {
 public:
  Server() {
    int ends[2] = {-1, -1};
    check(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, ends) == 0,
          "socketpair");
    ours_.reset(ends[1]);
    check(sd_bus_new(&bus_) >= 0, "sd_bus_new");
    const sd_id128_t id =
        SD_ID128_MAKE(5a, 1e, 2b, 7c, 3d, 4e, 8f, 90, a1, b2, c3, d4, e5, f6, 07, 18);
    check(xpu::api_proxy::configure_client_bus(bus_, xpu::UniqueFd(ends[0]), id) >= 0,
          "configure_client_bus");
    check(sd_bus_add_filter(bus_, nullptr, &Server::on_message, this) >= 0, "sd_bus_add_filter");
    check(sd_bus_start(bus_) >= 0, "sd_bus_start");
  }
  ~Server() { sd_bus_unref(bus_); }
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Writes `bytes` to sd-bus and runs it until it has nothing more to do.
  void take(std::string_view bytes) {
    for (int round = 0; !bytes.empty() && !closed_; ++round) {
      check(round < kMaxRounds, "sd-bus takes what it is given",
            "a piece of " + std::to_string(bytes.size()));
      const ssize_t n = ::send(ours_.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n > 0) bytes.remove_prefix(static_cast<std::size_t>(n));
      check(n >= 0 || errno == EAGAIN || errno == EPIPE || errno == ECONNRESET, "send");
      if (n < 0 && errno != EAGAIN) closed_ = true;
      run();
    }
    run();
  }

  bool ready() const { return !closed_ && sd_bus_is_ready(bus_) > 0; }
  bool closed() const { return closed_; }
  const std::vector<Delivered>& delivered() const { return delivered_; }

 private:
  static int on_message(sd_bus_message* message, void* userdata, sd_bus_error*) {
    auto* self = static_cast<Server*>(userdata);
    if (sd_bus_message_is_signal(message, std::string(kLocalInterface).c_str(), nullptr) > 0) {
      self->closed_ = true;  // Disconnected: sd-bus closed the connection
      return 1;
    }
    Delivered delivered;
    sd_bus_message_get_cookie(message, &delivered.cookie);
    sd_bus_message_get_type(message, &delivered.type);
    self->delivered_.push_back(delivered);
    return 1;  // handled, as the proxy's session handles everything: no answer from sd-bus
  }

  void run() {
    for (int round = 0; round < kMaxRounds; ++round) {
      const bool answered = drain();
      if (closed_) return;
      const int r = sd_bus_process(bus_, nullptr);
      if (r < 0) {
        closed_ = true;
        return;
      }
      if (r == 0 && !answered) return;
    }
    xpu::fuzz::property_broken("sd-bus settles", "still busy after the rounds allowed");
  }

  // Reads what sd-bus wrote; during the authentication, notes each answer's kind.
  bool drain() {
    std::array<char, 4096> buffer{};
    bool any = false;
    for (;;) {
      const ssize_t n = ::recv(ours_.get(), buffer.data(), buffer.size(), MSG_DONTWAIT);
      if (n == 0) closed_ = true;
      if (n <= 0) return any;
      any = true;
      if (sd_bus_is_ready(bus_) <= 0) note_answers(std::string_view(buffer.data(), n));
    }
  }

  // sd-bus's server answers OK, DATA, REJECTED or ERROR, never AGREE_UNIX_FD (the proxy passes no
  // descriptors). A branch per kind, so that libFuzzer sees answers it has not seen as coverage.
  void note_answers(std::string_view text) {
    answers_ += text;
    for (auto end = answers_.find("\r\n"); end != std::string::npos; end = answers_.find("\r\n")) {
      const std::string_view answer = std::string_view(answers_).substr(0, end);
      if (answer.substr(0, 3) == "OK ") {
        ++oks_;
      } else if (answer == "DATA") {
        ++data_;
      } else if (answer.substr(0, 8) == "REJECTED") {
        ++rejections_;
      } else if (answer == "ERROR") {
        ++errors_;
      } else {
        xpu::fuzz::property_broken("sd-bus answers as the proxy configures it",
                                   std::string(answer));
      }
      answers_.erase(0, end + 2);
    }
  }

  xpu::UniqueFd ours_;
  sd_bus* bus_ = nullptr;
  bool closed_ = false;
  std::vector<Delivered> delivered_;
  std::string answers_;  // what sd-bus answered during the authentication, a line not yet whole
  unsigned oks_ = 0, data_ = 0, rejections_ = 0, errors_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const Filtered filtered = run_filter(std::string_view(reinterpret_cast<const char*>(data), size));
  Server server;
  const std::size_t lines = filtered.authentication.size();
  for (std::size_t i = 0; i < lines; ++i) {
    server.take(filtered.authentication[i].bytes);
    const bool ended_here = filtered.authenticated && i + 1 == lines;
    const std::string where = "piece " + std::to_string(i) + " of the authentication";
    check(!server.closed(), "sd-bus keeps the connection while the filter takes the authentication",
          where);
    if (ended_here)
      check(server.ready(), "sd-bus's authentication ends where the filter's does", where);
    else
      check(!server.ready(), "sd-bus's authentication does not end before the filter's", where);
    check(server.delivered().empty(), "no message during the authentication", where);
  }
  if (!filtered.authenticated) return 0;
  std::size_t delivered = 0;
  for (std::size_t i = 0; i < filtered.messages.size() && !server.closed(); ++i) {
    const Piece& piece = filtered.messages[i];
    server.take(piece.bytes);
    const std::size_t now = server.delivered().size();
    const std::string where = "message " + std::to_string(i);
    check(now <= delivered + (piece.message ? 1 : 0),
          "sd-bus delivers at most the message the filter passed", where);
    if (now > delivered) {
      const Delivered& got = server.delivered().back();
      check(got.cookie == piece.serial && got.type == piece.type,
            "sd-bus delivers the message the filter passed, with its serial and type",
            where + ": serial " + std::to_string(got.cookie) + " against " +
                std::to_string(piece.serial));
    }
    delivered = now;
  }
  return 0;
}
