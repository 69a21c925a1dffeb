#include "xpud/cdi/cdi_spec.h"

#include <algorithm>
#include <cctype>
#include <set>

#include <nlohmann/json.hpp>

#include "common/ascii.h"
#include "common/names.h"

namespace xpud {
namespace {

using nlohmann::json;
namespace names = xpu::names;

constexpr const char* kVersionWithHostPathAndDigitNames = "0.5.0";
constexpr const char* kOldestReadVersion = "0.3.0";
// The plugin gives the same: read and write, no mknod inside the container.
constexpr const char* kNodePermissions = "rw";

// A node the spec may name: an absolute path under /dev/ without '..' or odd characters. The
// identities come from xpud's own backends; this keeps a surprise in one of them (a sysfs tree
// that says something strange) from reaching every container runtime on the host.
bool is_device_node_path(const std::string& path) {
  if (path.rfind("/dev/", 0) != 0 || path.size() <= 5 || path.back() == '/') return false;
  if (path.find("/../") != std::string::npos || path.find("/./") != std::string::npos ||
      path.ends_with("/..") || path.ends_with("/.") || path.find("//") != std::string::npos)
    return false;
  return std::all_of(path.begin(), path.end(), [](char c) {
    return xpu::is_ascii_alnum(c) || c == '/' || c == '-' || c == '_' || c == '.' || c == ':';
  });
}

struct CardEntry {
  const DeviceIdentity* card;
  std::vector<std::string> nodes;
};

json node_json(const std::string& path, const std::string& stand_in) {
  json node = {{"path", path}, {"permissions", kNodePermissions}};
  if (!stand_in.empty()) node["hostPath"] = stand_in;
  return node;
}

json device_json(const std::string& name, const std::vector<std::string>& nodes,
                 const std::string& indices, const std::string& uuids,
                 const std::string& stand_in) {
  json node_list = json::array();
  for (const auto& node : nodes) node_list.push_back(node_json(node, stand_in));
  return {
      {"name", name},
      {"containerEdits",
       {{"env", json::array({std::string(names::kVisibleDevicesEnv) + "=" + indices,
                             std::string(names::kVendorRuntimeVisibleDevicesEnv) + "=" + indices,
                             std::string(names::kUuidsEnv) + "=" + uuids})},
        {"deviceNodes", std::move(node_list)}}}};
}

}  // namespace

CdiSpecRendering render_cdi_spec(const CdiSpecInput& input) {
  CdiSpecRendering out;
  std::vector<CardEntry> entries;
  for (const auto& card : input.cards) {
    CardEntry entry{&card, {}};
    for (const auto& node : card.device_nodes) {
      if (is_device_node_path(node))
        entry.nodes.push_back(node);
      else
        out.skipped.push_back(names::device_name(card.index) + ": device node '" + node +
                              "' is not a path under /dev/; left out");
    }
    if (entry.nodes.empty()) {
      out.skipped.push_back(names::device_name(card.index) + ": no device node; card left out");
      continue;
    }
    entries.push_back(std::move(entry));
  }
  if (entries.empty()) return out;

  json devices = json::array();
  std::set<std::string> taken_uuids;
  bool digit_names = false;
  std::string all_indices, all_uuids;
  std::vector<std::string> all_nodes;
  for (const auto& entry : entries) {
    const DeviceIdentity& card = *entry.card;
    const std::string index = std::to_string(card.index);
    devices.push_back(device_json(index, entry.nodes, index, card.uuid, input.host_node_stand_in));
    out.devices.push_back(index);
    digit_names = true;
    // A UUID the runtime could not parse, one that would shadow an index or "all", or one two
    // cards report, is left out; the card stays reachable by its index.
    if (!names::cdi::is_uuid_name(card.uuid)) {
      out.skipped.push_back(names::device_name(card.index) + ": UUID '" + card.uuid +
                            "' cannot be a CDI device name of its own; reachable by index only");
    } else if (!taken_uuids.insert(card.uuid).second) {
      out.skipped.push_back(names::device_name(card.index) + ": UUID '" + card.uuid +
                            "' is another card's too; reachable by index only");
    } else {
      devices.push_back(
          device_json(card.uuid, entry.nodes, index, card.uuid, input.host_node_stand_in));
      out.devices.push_back(card.uuid);
      digit_names = digit_names || std::isdigit(static_cast<unsigned char>(card.uuid.front()));
    }
    all_indices += (all_indices.empty() ? "" : ",") + index;
    all_uuids += (all_uuids.empty() ? "" : ",") + card.uuid;
    for (const auto& node : entry.nodes)
      if (std::find(all_nodes.begin(), all_nodes.end(), node) == all_nodes.end())
        all_nodes.push_back(node);
  }
  // Each card's own nodes first, in index order, then the shared control node.
  std::stable_partition(all_nodes.begin(), all_nodes.end(),
                        [](const std::string& node) { return node != names::kControlNode; });
  devices.push_back(device_json(std::string(names::cdi::kAllDevices), all_nodes, all_indices,
                                all_uuids, input.host_node_stand_in));
  out.devices.emplace_back(names::cdi::kAllDevices);

  const bool needs_v050 = digit_names || !input.host_node_stand_in.empty();
  json spec = {{"cdiVersion", needs_v050 ? kVersionWithHostPathAndDigitNames : kOldestReadVersion},
               {"kind", std::string(names::cdi::kKind)},
               {"devices", std::move(devices)}};
  out.text = spec.dump(2) + "\n";
  return out;
}

}  // namespace xpud
