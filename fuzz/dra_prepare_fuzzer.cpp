// The DRA plugin's NodePrepareResources and NodeUnprepareResources handlers (DraService,
// k8s-shim/dra/kubelet/) on requests as the kubelet sends them. The input is a serialised
// NodePrepareResourcesRequest; the same bytes are then the NodeUnprepareResourcesRequest (the two
// messages share their wire form). The node has 8 cards, xpu-6 unhealthy. The stand-in API
// server allocates each claim from its name, one result per byte (card, request, pool and driver
// from the byte's bits), so the fuzzer steers the allocation along with the kubelet's claims.
//
// Checked: more than kMaxClaimsPerCall claims is INVALID_ARGUMENT, else every claim gets an entry
// under its UID and no other entry appears; a prepared device is a healthy card of this node led
// by its own CDI name, and its claim's CDI spec is on disk; preparing again answers the same
// (the checkpoint, not the API server, decides); unpreparing leaves no record and no spec. With
// device metadata on: unpreparing leaves none, and nothing is ever written outside the plugin and
// CDI directories (the kubelet's names go into the files' paths).
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <google/protobuf/util/message_differencer.h>
#include <grpcpp/grpcpp.h>

#include "fuzz/protobuf_support.h"
#include "k8s-shim/dra/dra_names.h"
#include "k8s-shim/dra/kubelet/dra_service.h"

namespace {

using xpu::fuzz::check;
namespace dra = shim::dra;
namespace drapb = dra::drapb;

constexpr std::string_view kNode = "node-a";
constexpr unsigned kCards = 8;
constexpr unsigned kUnhealthy = 6;
// Results per claim: enough for every card and a repeat.
constexpr std::size_t kMaxResults = 10;

std::string card_uuid(unsigned index) {
  return "86a3c1f0-0000-4000-8000-00000000000" + std::to_string(index);
}

std::vector<xpu::DeviceInfo> cards() {
  std::vector<xpu::DeviceInfo> out;
  for (unsigned i = 0; i < kCards; ++i) {
    xpu::DeviceInfo card;
    card.index = i;
    card.name = "xpu" + std::to_string(i);
    card.uuid = card_uuid(i);
    card.model = "R200";
    card.healthy = i != kUnhealthy;
    if (!card.healthy) card.health_reason = "driver reports state ERROR (207)";
    out.push_back(card);
  }
  return out;
}

// One result per byte of the name: the card (xpu-8 and xpu-9 do not exist), the request (a
// subrequest on bit 4), and on two bytes another node's pool or another driver.
dra::AllocatedClaim allocation_from(const drapb::Claim& claim) {
  dra::AllocatedClaim allocated{claim.name(), claim.namespace_(), claim.uid(), true, {}};
  for (unsigned char byte : claim.name().substr(0, kMaxResults)) {
    std::string request = std::string("r") + static_cast<char>('a' + (byte >> 5));
    if (byte & 0x10) request += "/s";
    allocated.results.push_back(dra::AllocatedDevice{
        std::move(request), byte == '?' ? "other.example.com" : std::string(dra::kDriverName),
        byte == '!' ? "node-b" : std::string(kNode), dra::device_name(byte % 10), byte == '#'});
  }
  // A claim named "u..." is not allocated yet: the scheduler has not got to it.
  allocated.allocated = !claim.name().starts_with('u');
  return allocated;
}

// The API server as the request implies it: a claim is found under its namespace and name with
// the UID of the first claim in the request that has them.
dra::ClaimLookup lookup_for(const drapb::NodePrepareResourcesRequest& request) {
  return
      [&request](std::string_view ns, std::string_view name) -> xpu::Result<dra::AllocatedClaim> {
        for (const drapb::Claim& claim : request.claims())
          if (claim.namespace_() == ns && claim.name() == name) return allocation_from(claim);
        return xpu::Error{"resourceclaims \"" + std::string(name) + "\" not found"};
      };
}

std::set<std::string> uids_of(const drapb::NodePrepareResourcesRequest& request) {
  std::set<std::string> uids;
  for (const drapb::Claim& claim : request.claims()) uids.insert(claim.uid());
  return uids;
}

template <typename Map>
void check_entries(const std::set<std::string>& uids, const Map& answered, const char* call) {
  check(answered.size() == uids.size(), "not one entry per claim UID", call);
  for (const std::string& uid : uids)
    check(answered.count(uid) == 1, "a claim without an entry", std::string(call) + " " + uid);
}

void check_prepared(const drapb::NodePrepareResourcesResponse& response,
                    const dra::ClaimCdiSpecs& specs) {
  for (const auto& [uid, answer] : response.claims()) {
    if (!answer.error().empty()) continue;
    check(std::filesystem::exists(specs.directory() / dra::claim_cdi_spec_file_name(uid)),
          "a prepared claim without its CDI spec", uid);
    for (const drapb::Device& device : answer.devices()) {
      const auto index = dra::device_index(device.device_name());
      check(index && *index < kCards && *index != kUnhealthy,
            "prepared a device that is no healthy card of this node", device.device_name());
      check(device.pool_name() == kNode, "prepared a device of another pool", device.pool_name());
      check(device.request_names_size() > 0, "a prepared device for no request", uid);
      check(device.cdi_device_ids_size() > 0 &&
                device.cdi_device_ids(0) == "kunlunxin.com/xpu=" + card_uuid(*index),
            "a prepared device not led by its card's CDI name", device.device_name());
    }
  }
}

bool directory_empty(const std::filesystem::path& directory) {
  std::error_code error;
  return !std::filesystem::exists(directory, error) ||
         std::filesystem::directory_iterator(directory) == std::filesystem::directory_iterator();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  xpu::fuzz::quiet_logging_and_protobuf();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  drapb::NodePrepareResourcesRequest prepare_request;
  drapb::NodeUnprepareResourcesRequest unprepare_request;
  if (!prepare_request.ParseFromArray(data, static_cast<int>(size)) ||
      !unprepare_request.ParseFromArray(data, static_cast<int>(size)))
    return -1;  // not a request: not kept

  // A fresh plugin directory and CDI directory per input: the checkpoint of one input must not
  // answer the next one's prepare.
  static const xpu::fuzz::ScratchDirectory scratch("dra_prepare");
  std::filesystem::remove_all(scratch.path() / "plugin");
  std::filesystem::remove_all(scratch.path() / "cdi");
  const dra::ClaimCdiSpecs specs(scratch.path() / "cdi");
  const std::filesystem::path metadata = scratch.path() / "plugin" / "dra-device-metadata";
  dra::ClaimState state(lookup_for(prepare_request), cards, std::string(kNode),
                        dra::PreparedClaims::load(scratch.path() / "plugin" / "checkpoint.json"),
                        specs, {}, {},
                        dra::DeviceMetadataConfig{
                            .files = dra::DeviceMetadataFiles(metadata),
                            .attributes = [](const dra::PreparedDevice& device) {
                              return dra::DeviceAttributes{{"index", std::int64_t{device.index}}};
                            }});
  dra::DraService service(state);

  drapb::NodePrepareResourcesResponse prepared;
  const grpc::Status status = service.NodePrepareResources(nullptr, &prepare_request, &prepared);
  if (prepare_request.claims_size() > dra::DraService::kMaxClaimsPerCall) {
    check(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT, "too many claims not refused",
          status.error_message());
    check(state.prepared_count() == 0, "a refused call prepared claims");
    return 0;
  }
  check(status.ok(), "prepare failed as a whole", status.error_message());
  const std::set<std::string> uids = uids_of(prepare_request);
  check_entries(uids, prepared.claims(), "prepare");
  check_prepared(prepared, specs);

  drapb::NodePrepareResourcesResponse again;
  check(service.NodePrepareResources(nullptr, &prepare_request, &again).ok(),
        "a second prepare failed as a whole");
  check(google::protobuf::util::MessageDifferencer::Equals(prepared, again),
        "a second prepare answered otherwise", prepared.DebugString() + again.DebugString());

  drapb::NodeUnprepareResourcesResponse unprepared;
  check(service.NodeUnprepareResources(nullptr, &unprepare_request, &unprepared).ok(),
        "unprepare failed as a whole");
  check_entries(uids, unprepared.claims(), "unprepare");
  check(state.prepared_count() == 0, "a claim is still recorded after its unprepare");
  check(directory_empty(specs.directory()), "a CDI spec is left after its claim's unprepare");
  check(directory_empty(metadata), "device metadata is left after its claim's unprepare");
  for (const auto& entry : std::filesystem::directory_iterator(scratch.path()))
    check(entry.path().filename() == "plugin" || entry.path().filename() == "cdi",
          "something was written outside the plugin and CDI directories", entry.path().string());
  return 0;
}
