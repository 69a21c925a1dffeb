// The DRA plugin's checkpoint of prepared claims (<plugin-dir>/checkpoint.json,
// k8s-shim/dra/kubelet/prepared_claims.cpp): the input is the file's text. It is root-owned,
// but a torn write, a disk error or a hand edit can leave anything there, and a load that throws
// would stop the plugin at every start. Whatever parses must come back unchanged from
// serialize -> parse, and serialize must then be stable: the plugin rewrites the file on every
// prepare, so a claim that changed on the way would hand the kubelet other cards after a restart.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_support.h"
#include "k8s-shim/dra/kubelet/prepared_claims.h"

namespace {

using shim::dra::PreparedClaims;
using xpu::fuzz::check;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  xpu::fuzz::quiet_logging();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto claims = PreparedClaims::parse(input);
  if (!claims) return 0;

  for (const auto& [uid, claim] : *claims)
    check(claim.uid == uid, "a claim is filed under another UID", uid + " holds " + claim.uid);

  const std::string written = PreparedClaims::serialize(*claims);
  const auto again = PreparedClaims::parse(written);
  check(again.ok(), "a parsed checkpoint does not parse once written",
        again ? std::string() : again.error() + "\n" + written);
  check(*again == *claims, "a checkpoint changed on the way out and back", written);
  check(PreparedClaims::serialize(*again) == written, "serialize is not stable", written);
  return 0;
}
