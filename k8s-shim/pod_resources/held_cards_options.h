// The flags of the roles that read pod-resources: where the kubelet serves it (the exporter, the
// device plugin, the DRA driver) and how often the two that hand cards out ask it which cards the
// other one handed out (held_cards_watch.h).
#pragma once

#include <chrono>
#include <string>

#include "common/command_line.h"
#include "k8s-shim/pod_resources/pod_resources_client.h"

namespace shim {

inline constexpr std::chrono::seconds kDefaultHeldCardsRefresh{2};
// A List on a kubelet that answers takes milliseconds; a hung one delays only the watch's thread.
inline constexpr std::chrono::milliseconds kHeldCardsListDeadline{1000};
// How long a decision that hands a card out waits for a fresh List (HeldCardsWatch::fresh): one
// that was running when it asked, then its own. Past it the decision uses the last known cards.
inline constexpr std::chrono::milliseconds kHeldCardsFreshWait{2 * kHeldCardsListDeadline +
                                                               std::chrono::milliseconds(200)};

struct HeldCardsOptions {
  std::string podresources_socket{kDefaultPodResourcesSocket};
  std::chrono::seconds refresh{kDefaultHeldCardsRefresh};  // 0: pod-resources is not asked
};

// --podresources-socket PATH (not empty).
void add_podresources_socket_option(xpu::CommandLine& cli, std::string& socket);

// --resource-name NAME (validated) of a role that reads pod-resources: the device plugin's, whose
// domain holds every resource it advertises; `use` says what the role does with it.
void add_device_plugin_resource_name_option(xpu::CommandLine& cli, std::string& resource_name,
                                            std::string_view use);

// --podresources-socket PATH and --held-cards-refresh SECONDS (0..3600; 0 turns the reading off).
void add_held_cards_options(xpu::CommandLine& cli, HeldCardsOptions& options);

}  // namespace shim
