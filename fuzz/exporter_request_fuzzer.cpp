// The exporter's HTTP request handling as far as our code sees it: libmicrohttpd parses the
// request and hands over the method, the path (not percent-decoded), the headers and, for basic
// auth, the decoded user and password; request_route.h decides the answer and basic_auth.h
// checks the password. The input is method, path, Content-Length, Transfer-Encoding, user and
// password, cut at NUL bytes (a part left out is a header not sent). Content may only go to GET
// or HEAD on / and /metrics without a body, credentials may only be skipped for the probe, and
// only the one configured user's password may pass.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "fuzz/fuzz_support.h"
#include "k8s-shim/exporter/basic_auth.h"
#include "k8s-shim/exporter/request_route.h"

namespace {

using xpu::fuzz::check;
namespace exporter = shim::exporter;

// crypt(3) of "secret" at bcrypt's lowest cost (4), so each check stays near a millisecond.
constexpr const char* kUser = "prometheus";
constexpr const char* kPassword = "secret";
constexpr const char* kHash = "$2b$04$FVJ/ae9S9YrZ0AJy6KfLJ.e2V8uM.RZoa2klRVLmHZOoUSvydH50e";

void check_route(const exporter::RequestHead& head) {
  const bool get_or_head = head.method == "GET" || head.method == "HEAD";
  const bool body =
      (head.content_length && *head.content_length != "0") || head.has_transfer_encoding;
  check(exporter::announces_body(head) == body, "announces_body");
  check(exporter::needs_credentials(head) || (get_or_head && head.path == "/healthz"),
        "skipped credentials for something else than the probe", std::string(head.path));
  const exporter::Answer answer = exporter::route_request(head);
  switch (answer) {
    case exporter::Answer::Metrics:
    case exporter::Answer::Page:
      check(get_or_head && !body, "served content to a request it should refuse",
            std::string(head.method));
      check(head.path == (answer == exporter::Answer::Metrics ? "/metrics" : "/"),
            "served content on another path", std::string(head.path));
      break;
    case exporter::Answer::Health:
      check(head.path == "/healthz" && get_or_head, "answered ok elsewhere than the probe",
            std::string(head.path));
      break;
    case exporter::Answer::NotFound:
      check(head.path != "/" && head.path != "/metrics" && head.path != "/healthz",
            "404 for a known path", std::string(head.path));
      break;
    case exporter::Answer::MethodNotAllowed:
      check(!get_or_head, "405 for GET or HEAD", std::string(head.method));
      break;
    case exporter::Answer::BodyNotAccepted:
      check(body, "413 without a body");
      break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  xpu::fuzz::quiet_logging();
  check(exporter::check_bcrypt_hash(kHash).ok(), "the fuzzer's own hash");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto parts =
      xpu::fuzz::split_at_nul(std::string_view(reinterpret_cast<const char*>(data), size), 6);
  auto part = [&](std::size_t i) -> std::optional<std::string_view> {
    if (i < parts.size()) return parts[i];
    return std::nullopt;
  };
  exporter::RequestHead head{parts[0], part(1).value_or(""), part(2), part(3).has_value()};
  check_route(head);

  // A hash from a web config: whatever the file holds, the check answers without crashing. Only
  // at bcrypt's lowest cost: the cost is the hash's own (up to 2^31 rounds, by design), and a
  // costly hash would only slow the fuzzer down.
  const std::string hash(parts[0]);
  if (hash.size() < 7 || hash.compare(3, 4, "$04$") == 0) (void)exporter::check_bcrypt_hash(hash);
  // The configured user's password against its hash (the password checker's verdict for a
  // known user); an unknown user is refused by the checker without a lookup.
  if (auto user = part(4); user && *user == kUser) {
    // MHD hands the decoded password over as a C string: it ends at the first NUL.
    const std::string password(std::string(part(5).value_or("")).c_str());
    const bool matches = exporter::bcrypt_matches(password, kHash);
    check(matches == (password == kPassword), "basic auth", password);
  }
  return 0;
}
