// The kubelet's pod-resources List reply (k8s-shim/exporter/pod_map.cpp) as the exporter turns it
// into the pod map, and the /metrics text built with that map. The input is a serialised
// ListPodResourcesResponse; the exporter sees it first with its odd-numbered pods left out, then
// whole, as two successive replies. Every owner the map names must be listed for that card in the
// latest reply, and no pod, namespace or container name may break a line of the exposition. The
// same reply is read as the device plugin and the DRA driver read it for the cards held through
// the other of them (k8s-shim/pod_resources/held_cards.cpp): every card held is a valid device
// ID or a card index, the warnings stay few and on one line each, and what a role then offers is
// its cards less the held ones.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/protobuf_support.h"
#include "k8s-shim/exporter/metrics_renderer.h"
#include "k8s-shim/exporter/pod_map.h"
#include "k8s-shim/pod_resources/held_cards.h"
#include "k8s-shim/resource_name.h"
#include "podresources_v1.pb.h"

namespace {

using xpu::fuzz::check;
namespace exporter = shim::exporter;

// Whether `reply` lists card `uuid` for `holder` under the exporter's resource domain or in a claim
// of the DRA driver.
bool lists(const v1::ListPodResourcesResponse& reply, const std::string& uuid,
           const exporter::ContainerRef& holder) {
  for (const auto& pod : reply.pod_resources()) {
    if (pod.namespace_() != holder.pod_namespace || pod.name() != holder.pod) continue;
    for (const auto& container : pod.containers()) {
      if (container.name() != holder.container) continue;
      for (const auto& devices : container.devices()) {
        if (!std::string_view(devices.resource_name()).starts_with("kunlunxin.com/")) continue;
        for (const auto& id : devices.device_ids())
          if (!id.empty() && shim::card_uuid_of_device_id(id) == uuid) return true;
      }
      // A card of a claim of our DRA driver, by the card's name in xpud's CDI spec.
      for (const auto& dynamic : container.dynamic_resources())
        for (const auto& resource : dynamic.claim_resources())
          if (resource.driver_name() == "xpu.kunlunxin.com" &&
              shim::card_cdi_name_of_dra_device(resource) == uuid)
            return true;
    }
  }
  return false;
}

// Two cards whose ids the seeds use, both held and reporting every kind of series.
exporter::ScrapeInputs scrape_with(exporter::PodMap pods) {
  exporter::ScrapeInputs inputs;
  inputs.view.xpud_present = true;
  inputs.view.manager.driver_version = "4.0.25";
  for (unsigned index : {0u, 1u}) {
    xpu::DeviceInfo card;
    card.index = index;
    card.name = "xpu" + std::to_string(index);
    card.uuid = "uuid-" + std::to_string(index);
    card.model = "R200";
    card.pci_bus_id = "0000:3" + std::to_string(index) + ":00.0";
    card.healthy = true;
    inputs.view.devices.push_back(card);
  }
  xpu::MetricsSnapshot metrics;
  metrics.devices = {{0, {{"utilization_ratio", 0.5}}}, {1, {{"memory_used_bytes", 4096}}}};
  inputs.metrics = metrics;
  inputs.podresources_up = true;
  // The rendered cards' own uuids, plus whatever the reply named.
  inputs.pods = std::move(pods);
  return inputs;
}

void check_exposition(const std::string& text) {
  std::string_view rest = text;
  while (!rest.empty()) {
    const auto end = rest.find('\n');
    check(end != std::string_view::npos, "exposition does not end with a newline", text);
    const std::string_view line = rest.substr(0, end);
    check(line.starts_with("# HELP ") || line.starts_with("# TYPE ") || line.starts_with("xpu_"),
          "a label value broke an exposition line", std::string(line));
    rest.remove_prefix(end + 1);
  }
}

void check_held(const shim::HeldCardsReading& reading, const xpu::DeviceView& view) {
  check(reading.ignored.size() <= shim::kMaxIgnoredNamed + 1, "too many warnings",
        std::to_string(reading.ignored.size()));
  for (const auto& line : reading.ignored)
    check(line.find('\n') == std::string::npos && line.find('\r') == std::string::npos,
          "a warning spans lines", line);
  std::vector<std::string> left_out;
  const xpu::DeviceView offered = shim::without_held_cards(view, reading.held, &left_out);
  check(offered.devices.size() + left_out.size() == view.devices.size(),
        "cards offered and left out do not add up", std::to_string(left_out.size()));
  for (const auto& card : offered.devices)
    check(!reading.held.holds(card), "a held card is offered", card.uuid);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  xpu::fuzz::quiet_logging_and_protobuf();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  v1::ListPodResourcesResponse reply;
  if (!reply.ParseFromArray(data, static_cast<int>(size))) return -1;  // not a reply: not kept

  v1::ListPodResourcesResponse earlier;
  for (int i = 0; i < reply.pod_resources_size(); i += 2)
    *earlier.add_pod_resources() = reply.pod_resources(i);

  exporter::PodMapBuilder builder;
  builder.update(earlier);
  const exporter::PodMap pods = builder.update(reply);
  for (const auto& [uuid, holder] : pods) {
    check(!uuid.empty(), "pod map key is empty", uuid);
    check(lists(reply, uuid, holder), "pod map names a holder the reply does not list",
          uuid + " " + holder.pod_namespace + "/" + holder.pod + "/" + holder.container);
  }
  for (const auto& uuid : builder.cards_with_several_holders())
    check(pods.count(uuid) == 1, "a shared card without an owner", uuid);

  const xpu::DeviceView view = scrape_with({}).view;
  const shim::HeldCardsReading by_plugin =
      shim::cards_held_by_device_plugin(reply, "kunlunxin.com");
  for (const auto& uuid : by_plugin.held.uuids)
    check(shim::validate_device_id(uuid).ok(), "a held card is no device ID", uuid);
  check(by_plugin.held.indices.empty(), "device-plugin IDs name cards by index", "");
  check_held(by_plugin, view);
  check_held(shim::cards_held_through_dra(reply), view);

  auto inputs = scrape_with(pods);
  inputs.shared_cards = builder.cards_with_several_holders();
  check_exposition(exporter::render_text(exporter::build_families(inputs)));
  return 0;
}
