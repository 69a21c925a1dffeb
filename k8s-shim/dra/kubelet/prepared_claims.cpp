#include "k8s-shim/dra/kubelet/prepared_claims.h"

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <utility>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "common/file_replacement.h"
#include "common/fnv1a.h"
#include "k8s-shim/dra/kube/device_attribute_json.h"
#include "k8s-shim/dra/kubelet/plugin_directory.h"
#include "k8s-shim/kube/json_fields.h"

namespace shim::dra {
namespace {

using Claims = std::map<std::string, PreparedClaim, std::less<>>;
using nlohmann::json;

// A checksum, not a signature: it catches a torn write or a hand edit, which is all we need from
// a root-owned file. FNV-1a, 64 bits, over the compact dump of "claims".
std::string checksum_of(std::string_view text) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(xpu::fnv1a_64(text)));
  return std::string("fnv1a64:") + hex;
}

json to_json(const Claims& claims) {
  json out = json::object();
  for (const auto& [uid, claim] : claims) {
    json devices = json::array();
    for (const PreparedDevice& d : claim.devices) {
      json device = {{"requests", d.requests}, {"pool", d.pool}, {"device", d.device},
                     {"index", d.index},       {"uuid", d.uuid}, {"cdiIds", d.cdi_ids}};
      // Only a share has them, so a checkpoint of whole cards reads as before they existed.
      if (!d.share_id.empty()) {
        device["shareId"] = d.share_id;
        device["memoryLimit"] = d.memory_limit;
      }
      // Only a function on vfio-pci has it: a checkpoint of cards reads as before it existed.
      if (!d.vfio_pci_bus_id.empty()) device["vfioPciBusId"] = d.vfio_pci_bus_id;
      // As a slice spells them ({"int": 3}); absent for none, as in a record from before them.
      if (!d.attributes.empty()) {
        json attributes = json::object();
        for (const auto& [name, value] : d.attributes)
          attributes[name] = device_attribute_json(value);
        device["attributes"] = std::move(attributes);
      }
      devices.push_back(std::move(device));
    }
    out[uid] = {{"namespace", claim.namespace_name}, {"name", claim.name}, {"devices", devices}};
    if (!claim.instance_hook.empty()) out[uid]["instanceHook"] = claim.instance_hook;
    if (claim.instance_hook_names_share) out[uid]["instanceHookNamesShare"] = true;
    if (!claim.pod_claim_name.empty()) out[uid]["podClaimName"] = claim.pod_claim_name;
  }
  return out;
}

// A number of the file that is no whole number of T's range. nlohmann's get<int>() would cast a
// float (undefined behaviour beyond int's range: "version": 1e40) and wrap a negative number
// into an unsigned ("index": -1 as card 4294967295).
class NotAnInteger : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

template <typename T>
T integer_at(const json& object, const char* key) {
  const json& value = object.at(key);
  if (value.is_number_unsigned()) {
    if (const auto v = value.get<std::uint64_t>(); std::in_range<T>(v)) return static_cast<T>(v);
  } else if (value.is_number_integer()) {
    if (const auto v = value.get<std::int64_t>(); std::in_range<T>(v)) return static_cast<T>(v);
  }
  // A number is short enough to quote; an object in its place might not be.
  throw NotAnInteger(std::string("\"") + key + "\" is " +
                     (value.is_number() ? value.dump() : std::string("a ") + value.type_name()) +
                     ", not a whole number in range");
}

// Throws nlohmann's exceptions and NotAnInteger on a wrong shape; parse() turns them into an
// error.
Claims from_json(const json& in) {
  Claims claims;
  for (const auto& [uid, entry] : in.items()) {
    PreparedClaim claim{
        uid, entry.at("namespace").get<std::string>(), entry.at("name").get<std::string>(), {}};
    for (const json& d : entry.at("devices")) {
      claim.devices.push_back(PreparedDevice{
          d.at("requests").get<std::vector<std::string>>(), d.at("pool").get<std::string>(),
          d.at("device").get<std::string>(), integer_at<unsigned>(d, "index"),
          d.at("uuid").get<std::string>(), d.at("cdiIds").get<std::vector<std::string>>()});
      if (d.contains("shareId")) {
        claim.devices.back().share_id = d.at("shareId").get<std::string>();
        claim.devices.back().memory_limit = integer_at<std::int64_t>(d, "memoryLimit");
      }
      if (d.contains("vfioPciBusId"))
        claim.devices.back().vfio_pci_bus_id = d.at("vfioPciBusId").get<std::string>();
      if (d.contains("attributes")) {
        const json& attributes = kube::json_fields::expect_object(d.at("attributes"), "attributes");
        for (const auto& [name, value] : attributes.items())
          claim.devices.back().attributes[name] =
              device_attribute_from_json(value, "attributes." + name);
      }
    }
    if (entry.contains("instanceHook"))
      claim.instance_hook = entry.at("instanceHook").get<std::vector<std::string>>();
    // A record from before the field: its spec was written without the share, and stays so.
    if (entry.contains("instanceHookNamesShare"))
      claim.instance_hook_names_share = entry.at("instanceHookNamesShare").get<bool>();
    if (entry.contains("podClaimName"))
      claim.pod_claim_name = entry.at("podClaimName").get<std::string>();
    claims.emplace(uid, std::move(claim));
  }
  return claims;
}

}  // namespace

std::string PreparedClaims::serialize(const Claims& claims) {
  json body = to_json(claims);
  json file = {
      {"version", kFormatVersion}, {"checksum", checksum_of(body.dump())}, {"claims", body}};
  return file.dump(2) + "\n";
}

xpu::Result<Claims> PreparedClaims::parse(std::string_view text) {
  json file = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (file.is_discarded() || !file.is_object()) return xpu::Error{"not a JSON object"};
  try {
    const int version = integer_at<int>(file, "version");
    if (version != kFormatVersion)
      return xpu::Error{"unknown format version " + std::to_string(version)};
    const json& body = file.at("claims");
    if (!body.is_object()) return xpu::Error{"\"claims\" is not an object"};
    if (file.at("checksum").get<std::string>() != checksum_of(body.dump()))
      return xpu::Error{"checksum mismatch"};
    return from_json(body);
  } catch (const json::exception& error) {
    return xpu::Error{std::string("unexpected content: ") + error.what()};
  } catch (const NotAnInteger& error) {
    return xpu::Error{std::string("unexpected content: ") + error.what()};
  } catch (const kube::json_fields::FieldError& error) {
    return xpu::Error{std::string("unexpected content: ") + error.what()};
  }
}

PreparedClaims PreparedClaims::load(std::filesystem::path file) {
  PreparedClaims store(std::move(file));
  std::error_code error;
  if (!std::filesystem::exists(store.file_, error) && !error) return store;

  std::ifstream in(store.file_, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  xpu::Result<Claims> loaded =
      in ? parse(text.str()) : xpu::Result<Claims>(xpu::Error{"unreadable"});
  if (loaded) {
    store.claims_ = std::move(*loaded);
    spdlog::info("prepared claims: loaded {} from {}", store.claims_.size(), store.file_.string());
    return store;
  }
  // Keep the bad file for a post-mortem; starting empty is safe because the kubelet prepares
  // the claims of running pods again, and a prepare is idempotent on the cards.
  std::filesystem::path aside = store.file_;
  aside += ".corrupt";
  std::filesystem::rename(store.file_, aside, error);
  if (error)
    spdlog::error(
        "prepared claims: {} does not load ({}) and cannot be renamed to {}: {}; starting empty",
        store.file_.string(), loaded.error(), aside.string(), error.message());
  else
    spdlog::error("prepared claims: {} does not load ({}); renamed to {}, starting empty",
                  store.file_.string(), loaded.error(), aside.string());
  return store;
}

const PreparedClaim* PreparedClaims::find(std::string_view uid) const {
  auto it = claims_.find(uid);
  return it == claims_.end() ? nullptr : &it->second;
}

xpu::Status PreparedClaims::save(const Claims& claims) const {
  if (auto dir = ensure_plugin_directory(file_.parent_path()); !dir) return dir;
  // Durable: once the kubelet has the answer, the record must survive a power cut.
  auto written = xpu::replace_file_if_changed(file_.parent_path(), file_.filename().string(),
                                              serialize(claims),
                                              xpu::FileReplacement{.mode = 0600, .durable = true});
  if (!written) return xpu::Error{written.error()};
  return xpu::ok_status();
}

xpu::Status PreparedClaims::add(PreparedClaim claim) {
  Claims next = claims_;
  std::string uid = claim.uid;
  next.insert_or_assign(std::move(uid), std::move(claim));
  if (auto saved = save(next); !saved) return saved;
  claims_ = std::move(next);
  return xpu::ok_status();
}

xpu::Status PreparedClaims::remove(std::string_view uid) {
  auto it = claims_.find(uid);
  if (it == claims_.end()) return xpu::ok_status();
  Claims next = claims_;
  next.erase(std::string(uid));
  if (auto saved = save(next); !saved) return saved;
  claims_ = std::move(next);
  return xpu::ok_status();
}

}  // namespace shim::dra
