// The API proxy's inbound filter (xpud-api-proxy/inbound_filter.h): what any local user writes to
// the read-only API socket, before sd-bus reads any of it. The input is the client's byte stream;
// its last byte picks how the stream is cut into reads (a socket delivers it in any pieces).
// Properties: the pieces change nothing (the same bytes out, the same verdict), and nothing comes
// out but the client's own bytes and one small stand-in call per refused message, so no message
// larger than the limit ever reaches sd-bus.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_support.h"
#include "xpud-api-proxy/inbound_filter.h"

namespace {

using xpu::fuzz::check;

constexpr std::uint64_t kLimit = 1024;  // small, so that inputs cross it often

struct Outcome {
  std::string out;
  std::string error;
  std::uint64_t refused = 0;
};

Outcome run(std::string_view stream, std::size_t piece) {
  xpu::api_proxy::InboundFilter filter(kLimit, 512);
  Outcome outcome;
  for (std::size_t at = 0; at < stream.size(); at += piece) {
    auto status = filter.feed(stream.substr(at, piece), outcome.out);
    if (!status) {
      outcome.error = status.error();
      break;
    }
  }
  outcome.refused = filter.refused();
  return outcome;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::string_view stream(reinterpret_cast<const char*>(data), size - 1);
  const std::size_t piece = 1 + data[size - 1] % 64;
  const Outcome whole = run(stream, stream.size() + 1);
  const Outcome pieces = run(stream, piece);
  check(whole.out == pieces.out, "the same bytes out however the stream is cut",
        "piece " + std::to_string(piece));
  check(whole.error == pieces.error, "the same verdict however the stream is cut",
        "'" + whole.error + "' against '" + pieces.error + "'");
  check(whole.refused == pieces.refused, "the same refusals however the stream is cut");
  const std::size_t stand_in = xpu::api_proxy::too_large_call(1, 0, 0).size();
  check(whole.out.size() <= stream.size() + whole.refused * stand_in,
        "nothing out but the client's bytes and one stand-in per refusal",
        std::to_string(whole.out.size()) + " out of " + std::to_string(stream.size()));
  return 0;
}
