// The Container Device Interface spec of this host's cards (kind kunlunxin.com/xpu), rendered
// from xpud's identities alone (pure): health and metrics are not in it, so only a card that
// comes, goes or changes identity changes the text.
//
// Devices: each card by index ("0") and by UUID, and "all". A card's entry carries the nodes xpud
// lists for it (/dev/xpuN and the shared /dev/xpuctrl; a virtual function its own) with
// permissions "rw", and the environment the device plugin gives a container holding that card
// alone: XPU_VISIBLE_DEVICES=<index>, CXPU_VISIBLE_DEVICES=<index> (for the vendor's runtime),
// KUNLUNXIN_XPU_UUIDS=<uuid>. "all" carries every node once
// and the indices and UUIDs of every card, ascending. CDI replaces a variable that several
// requested devices set, so a container that names two cards separately gets the variables of
// the last one: the way to several cards with the right environment is "all" or the device
// plugin's own environment (docs in k8s-shim/device_plugin/README.md).
//
// cdiVersion is the lowest that the fields used need (names starting with a digit and hostPath
// need 0.5.0; otherwise 0.3.0, the oldest the reference library reads), so older runtimes
// (podman 4.3 vendors a library that reads up to 0.5.0) accept it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "xpud/device.h"

namespace xpud {

struct CdiSpecInput {
  std::vector<DeviceIdentity> cards;  // ordered by index, as in a snapshot
  // Where every node really is on this host, when not at its own path: the sim backend's cards
  // have no /dev/xpuN, so its nodes stand in for /dev/null (written as each node's hostPath;
  // the container still sees /dev/xpuN). Empty: each node is at its path.
  std::string host_node_stand_in;
};

struct CdiSpecRendering {
  std::string text;                  // JSON, ends with a newline; empty when there are no devices
  std::vector<std::string> skipped;  // why a card or one of its names was left out, for the log
  std::vector<std::string> devices;  // the device names written ("0", "<uuid>", "all")
};

// A spec needs at least one device (the reference library rejects an empty one): with no card
// left to describe, `text` is empty and the caller removes the file.
CdiSpecRendering render_cdi_spec(const CdiSpecInput& input);

}  // namespace xpud
