#include "k8s-shim/exporter/metrics_renderer.h"

#include <algorithm>
#include <array>
#include <map>
#include <sstream>

#include <prometheus/text_serializer.h>

#include "common/names.h"
#include "k8s-shim/cards/card_state.h"

namespace shim::exporter {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;
namespace key = xpu::names::metric;

struct DeviceFamily {
  std::string_view key;  // GetMetrics key
  const char* name;
  const char* help;
};

constexpr std::array<DeviceFamily, 14> kDeviceFamilies = {{
    {key::kUtilization, "xpu_utilization_ratio",
     "Share of time the XPU's compute units were busy (0 to 1)."},
    {key::kMemoryUtilization, "xpu_memory_utilization_ratio",
     "Share of time the XPU's global memory was being read or written (0 to 1)."},
    {key::kMemoryUsed, "xpu_memory_used_bytes",
     "Global (HBM/GDDR) memory in use on the XPU, in bytes."},
    {key::kMemoryTotal, "xpu_memory_total_bytes", "Global (HBM/GDDR) memory on the XPU, in bytes."},
    {key::kL3MemoryUsed, "xpu_l3_memory_used_bytes",
     "On-chip L3 memory in use on the XPU, in bytes."},
    {key::kL3MemoryTotal, "xpu_l3_memory_total_bytes", "On-chip L3 memory on the XPU, in bytes."},
    {key::kTemperature, "xpu_temperature_celsius", "XPU die temperature, in degrees Celsius."},
    {key::kPower, "xpu_power_watts", "XPU board power draw, in watts."},
    {key::kClock, "xpu_clock_hertz", "XPU core clock, in hertz."},
    {key::kProcessCount, "xpu_processes", "Processes with a compute context on the XPU."},
    // The kernel's view of the card's PCIe link (sysfs current_link_*, max_link_*), in
    // node_exporter's units (its pcidevice collector: transfers per second, lanes).
    {key::kPcieLinkSpeed, "xpu_pcie_link_speed_transfers_per_second",
     "Speed the XPU's PCIe link trained to, in transfers per second (16 GT/s: 1.6e10)."},
    {key::kPcieLinkMaxSpeed, "xpu_pcie_link_max_speed_transfers_per_second",
     "Fastest PCIe link speed the XPU can do, in transfers per second."},
    {key::kPcieLinkWidth, "xpu_pcie_link_width_lanes",
     "Width the XPU's PCIe link trained to, in lanes."},
    {key::kPcieLinkMaxWidth, "xpu_pcie_link_max_width_lanes",
     "Widest PCIe link the XPU can do, in lanes."},
}};

// xpu_pcie_aer_errors_total's severities: the GetMetrics key of each.
struct AerSeverity {
  std::string_view key;
  std::string_view severity;
};
constexpr std::array<AerSeverity, 3> kAerSeverities = {{
    {key::kPcieAerCorrectable, xpu::names::aer_severity::kCorrectable},
    {key::kPcieAerNonfatal, xpu::names::aer_severity::kNonfatal},
    {key::kPcieAerFatal, xpu::names::aer_severity::kFatal},
}};

MetricFamily gauge_family(const char* name, const char* help) {
  return MetricFamily{name, help, MetricType::Gauge, {}};
}

ClientMetric gauge(std::vector<ClientMetric::Label> labels, double value) {
  ClientMetric metric;
  metric.label = std::move(labels);
  metric.gauge.value = value;
  return metric;
}

ClientMetric counter(std::vector<ClientMetric::Label> labels, double value) {
  ClientMetric metric;
  metric.label = std::move(labels);
  metric.counter.value = value;
  return metric;
}

std::vector<ClientMetric::Label> identity_labels(const xpu::DeviceInfo& device) {
  return {{"xpu", std::to_string(device.index)},
          {"uuid", device.uuid},
          {"model", device.model},
          {"pci_bus_id", device.pci_bus_id}};
}

std::vector<ClientMetric::Label> device_labels(const xpu::DeviceInfo& device, const PodMap& pods) {
  std::vector<ClientMetric::Label> labels = identity_labels(device);
  if (auto holder = pods.find(device.uuid); !device.uuid.empty() && holder != pods.end()) {
    labels.push_back({"namespace", holder->second.pod_namespace});
    labels.push_back({"pod", holder->second.pod});
    labels.push_back({"container", holder->second.container});
  }
  return labels;
}

// An instance's owner ("<namespace>/<pod>/<container>", as xpud checked it) as labels.
std::optional<ContainerRef> owner_of(const xpu::CxpuInstanceInfo& instance) {
  const std::size_t first = instance.owner.find('/');
  const std::size_t second =
      first == std::string::npos ? first : instance.owner.find('/', first + 1);
  if (second == std::string::npos) return std::nullopt;
  return ContainerRef{instance.owner.substr(0, first),
                      instance.owner.substr(first + 1, second - first - 1),
                      instance.owner.substr(second + 1)};
}

// The owner of the card's memory share whose instance the process's container is named after.
std::optional<ContainerRef> share_owner(const xpu::DeviceInfo& device,
                                        const xpu::CardProcess& process,
                                        const ScrapeInputs& inputs) {
  if (process.container_id.empty()) return std::nullopt;
  for (const auto& instance : inputs.instances)
    if (instance.index == device.index && !instance.id.empty() &&
        process.container_id.starts_with(instance.id))
      return owner_of(instance);
  return std::nullopt;
}

// One series per process, for at most kMaxProcessSeriesPerCard processes per card (the largest).
// Pod labels only when the process runs in a container (xpud found a container ID in its cgroup)
// and pod-resources names exactly one container holding the card: a host process on an
// allocated card, or one of several sharers, is not attributed to a pod it may not belong to.
void add_process_series(const xpu::DeviceInfo& device, std::vector<xpu::CardProcess> processes,
                        const ScrapeInputs& inputs, MetricFamily& family) {
  std::sort(processes.begin(), processes.end(), [](const auto& a, const auto& b) {
    return a.memory_used_bytes != b.memory_used_bytes ? a.memory_used_bytes > b.memory_used_bytes
                                                      : a.pid < b.pid;
  });
  // One series per PID even if the driver listed one twice.
  processes.erase(std::unique(processes.begin(), processes.end(),
                              [](const auto& a, const auto& b) { return a.pid == b.pid; }),
                  processes.end());
  if (processes.size() > kMaxProcessSeriesPerCard) processes.resize(kMaxProcessSeriesPerCard);
  const auto holder = inputs.pods.find(device.uuid);
  const bool attributable = !device.uuid.empty() && holder != inputs.pods.end() &&
                            !inputs.shared_cards.contains(device.uuid);
  for (const auto& process : processes) {
    auto labels = identity_labels(device);
    labels.push_back({"pid", std::to_string(process.pid)});
    // A memory share's process is its instance's owner's, however many containers share the
    // card: the instance is named after the container the process runs in.
    if (auto owner = share_owner(device, process, inputs)) {
      labels.push_back({"namespace", owner->pod_namespace});
      labels.push_back({"pod", owner->pod});
      labels.push_back({"container", owner->container});
    } else if (attributable && !process.container_id.empty()) {
      labels.push_back({"namespace", holder->second.pod_namespace});
      labels.push_back({"pod", holder->second.pod});
      labels.push_back({"container", holder->second.container});
    }
    family.metric.push_back(
        gauge(std::move(labels), static_cast<double>(process.memory_used_bytes)));
  }
}

// Each memory share on the card (a cXPU instance xpud made: the grant) beside what it uses: the
// memory of the card's processes whose container ID the instance is named after (its first 12
// characters, as the runtime's hook names it). All the card's processes count, not only those
// with a series of their own.
void add_share_series(const xpu::DeviceInfo& device, const ScrapeInputs& inputs,
                      const std::vector<xpu::CardProcess>* processes, MetricFamily& limit,
                      MetricFamily& used) {
  std::vector<const xpu::CxpuInstanceInfo*> shares;
  for (const auto& instance : inputs.instances)
    if (instance.index == device.index && !instance.id.empty()) shares.push_back(&instance);
  std::sort(shares.begin(), shares.end(),
            [](const auto* a, const auto* b) { return a->id < b->id; });
  shares.erase(std::unique(shares.begin(), shares.end(),
                           [](const auto* a, const auto* b) { return a->id == b->id; }),
               shares.end());
  if (shares.size() > kMaxShareSeriesPerCard) shares.resize(kMaxShareSeriesPerCard);
  for (const auto* share : shares) {
    std::uint64_t bytes = 0;
    if (processes)
      for (const auto& process : *processes)
        if (process.container_id.starts_with(share->id)) bytes += process.memory_used_bytes;
    std::vector<ClientMetric::Label> labels = {
        {"xpu", std::to_string(device.index)}, {"uuid", device.uuid}, {"instance", share->id}};
    if (auto owner = owner_of(*share)) {
      labels.push_back({"namespace", owner->pod_namespace});
      labels.push_back({"pod", owner->pod});
      labels.push_back({"container", owner->container});
    }
    limit.metric.push_back(gauge(labels, static_cast<double>(share->memory_limit_bytes)));
    if (processes) used.metric.push_back(gauge(std::move(labels), static_cast<double>(bytes)));
  }
}

bool is_reason_kind(std::string_view kind) {
  namespace reason_kind = xpu::names::reason_kind;
  return kind == reason_kind::kDriverFault || kind == reason_kind::kReadFailures ||
         kind == reason_kind::kDriverStalled || kind == reason_kind::kMemoryNotReleased ||
         kind == reason_kind::kPcieFatalError || kind == reason_kind::kPcieNonfatalError ||
         kind == reason_kind::kPcieLinkDowntrained || kind == reason_kind::kResetFailed ||
         kind == kXpudUnreachableReasonKind;
}

}  // namespace

std::vector<ShownCard> shown_cards(const ScrapeInputs& inputs) {
  // Sorted and de-duplicated by index: a repeated series would make Prometheus drop the scrape.
  std::map<unsigned, ShownCard> by_index;
  if (!inputs.metrics) {
    for (const auto& device : inputs.view.devices)
      by_index.emplace(device.index, ShownCard{&device, nullptr});
  } else {
    std::map<unsigned, const xpu::DeviceInfo*> identity;
    for (const auto& device : inputs.view.devices) identity.emplace(device.index, &device);
    for (const auto& metrics : inputs.metrics->devices)
      if (auto found = identity.find(metrics.index); found != identity.end())
        by_index.emplace(metrics.index, ShownCard{found->second, &metrics});
  }
  std::vector<ShownCard> cards;
  cards.reserve(by_index.size());
  for (const auto& [index, card] : by_index) cards.push_back(card);
  return cards;
}

std::vector<MetricFamily> build_state_families(const ScrapeInputs& inputs) {
  std::vector<MetricFamily> families;
  if (const auto cards = shown_cards(inputs); !cards.empty()) {
    MetricFamily info = gauge_family("xpu_info", "Identity of each XPU; the value is always 1.");
    MetricFamily healthy = gauge_family(
        "xpu_healthy",
        "1 when xpud reports the XPU Healthy, 0 when Unhealthy (and every XPU 0 once xpud has been "
        "unreachable for longer than the grace period).");
    // Only the card's identity as labels: a counter must not start a new series when a pod
    // comes or goes.
    MetricFamily transitions{"xpu_health_transitions_total",
                             "Times xpud saw the XPU's health become the value of `to` (counted by "
                             "xpud since the card appeared, so an exporter restart loses none).",
                             MetricType::Counter,
                             {}};
    MetricFamily reason = gauge_family(
        "xpu_health_reason_info",
        "Why an Unhealthy XPU is Unhealthy, as a fixed word (driver_fault, read_failures, "
        "driver_stalled, memory_not_released, pcie_fatal_error, pcie_nonfatal_error, "
        "pcie_link_downtrained, reset_failed, xpud_unreachable, other); 1 while Unhealthy, absent "
        "while Healthy.");
    // Counted by xpud, as the health counters are; only the card's identity and the result.
    MetricFamily resets{"xpu_resets_total",
                        "Resets of the XPU xpud was asked for or started by itself ([recovery]), "
                        "by result: succeeded (Healthy again), failed (refused by the kernel, "
                        "or still Unhealthy after it), refused (not attempted: in use, the "
                        "hour's resets used up, resets off).",
                        MetricType::Counter,
                        {}};
    MetricFamily process_memory = gauge_family(
        "xpu_process_memory_used_bytes",
        "Global memory a process holds on the XPU, in bytes (host pid; at most 16 processes per "
        "card, the largest).");
    MetricFamily share_limit = gauge_family(
        "xpu_share_memory_limit_bytes",
        "Global memory a memory share (cXPU instance, named after its container's ID) may use "
        "on the XPU, in bytes.");
    MetricFamily share_used = gauge_family(
        "xpu_share_memory_used_bytes",
        "Global memory the processes of a memory share's container hold on the XPU, in bytes.");
    // Only the card's identity as labels, as for the health counters.
    MetricFamily aer_errors{"xpu_pcie_aer_errors_total",
                            "PCIe errors the XPU reported, by severity (correctable, nonfatal, "
                            "fatal), as the kernel's AER counts them since the PCI function "
                            "appeared (boot or re-enumeration).",
                            MetricType::Counter,
                            {}};
    std::map<unsigned, const std::vector<xpu::CardProcess>*> processes_by_index;
    if (inputs.processes)
      for (const auto& device : inputs.processes->devices)
        processes_by_index.emplace(device.index, &device.processes);
    std::vector<MetricFamily> values;
    values.reserve(std::size(kDeviceFamilies));
    for (const auto& family : kDeviceFamilies)
      values.push_back(gauge_family(family.name, family.help));

    for (const auto& shown : cards) {
      const xpu::DeviceInfo& device = *shown.device;
      auto labels = device_labels(device, inputs.pods);

      auto info_labels = labels;
      info_labels.push_back({"serial", device.serial});
      info_labels.push_back({"driver_version", inputs.view.manager.driver_version});
      info.metric.push_back(gauge(std::move(info_labels), 1));
      healthy.metric.push_back(gauge(labels, device.healthy ? 1 : 0));
      const std::vector<ClientMetric::Label> card = {{"xpu", std::to_string(device.index)},
                                                     {"uuid", device.uuid}};
      for (const auto& [to, count] : device.health_transitions) {
        // The words xpud defines; anything else would be an unbounded label value.
        if (to != xpu::names::kHealthy && to != xpu::names::kUnhealthy) continue;
        auto to_labels = card;
        to_labels.push_back({"to", to});
        transitions.metric.push_back(counter(std::move(to_labels), static_cast<double>(count)));
      }
      for (const auto& [result, count] : device.resets) {
        // The words xpud defines; anything else would be an unbounded label value.
        const auto& known = xpu::names::reset_result::kAll;
        if (std::find(known.begin(), known.end(), result) == known.end()) continue;
        auto result_labels = card;
        result_labels.push_back({"result", result});
        resets.metric.push_back(counter(std::move(result_labels), static_cast<double>(count)));
      }
      if (!device.healthy) {
        // A word this exporter does not know (a newer xpud) or none (an older one) is "other":
        // the label stays bounded and the card still shows as Unhealthy for some reason.
        auto reason_labels = card;
        reason_labels.push_back({"reason", is_reason_kind(device.health_reason_kind)
                                               ? device.health_reason_kind
                                               : "other"});
        reason.metric.push_back(gauge(std::move(reason_labels), 1));
      }

      auto listed = processes_by_index.find(device.index);
      if (listed != processes_by_index.end())
        add_process_series(device, *listed->second, inputs, process_memory);
      add_share_series(device, inputs,
                       listed != processes_by_index.end() ? listed->second : nullptr, share_limit,
                       share_used);

      if (shown.metrics == nullptr) continue;
      for (size_t i = 0; i < kDeviceFamilies.size(); ++i) {
        auto value = shown.metrics->values.find(std::string(kDeviceFamilies[i].key));
        if (value != shown.metrics->values.end())
          values[i].metric.push_back(gauge(labels, value->second));
      }
      for (const auto& [aer_key, severity] : kAerSeverities) {
        auto count = shown.metrics->values.find(std::string(aer_key));
        if (count == shown.metrics->values.end()) continue;
        auto severity_labels = card;
        severity_labels.push_back({"severity", std::string(severity)});
        aer_errors.metric.push_back(counter(std::move(severity_labels), count->second));
      }
    }
    families.push_back(std::move(info));
    families.push_back(std::move(healthy));
    families.push_back(std::move(transitions));
    families.push_back(std::move(reason));
    families.push_back(std::move(resets));
    for (auto& family : values) families.push_back(std::move(family));
    families.push_back(std::move(aer_errors));
    families.push_back(std::move(process_memory));
    families.push_back(std::move(share_limit));
    families.push_back(std::move(share_used));
    std::erase_if(families, [](const MetricFamily& family) { return family.metric.empty(); });
  }

  MetricFamily xpud_up = gauge_family(
      "xpu_exporter_xpud_up", "1 when xpud answered this scrape's GetMetrics call, else 0.");
  xpud_up.metric.push_back(gauge({}, inputs.metrics ? 1 : 0));
  MetricFamily podresources_up =
      gauge_family("xpu_exporter_podresources_up",
                   "1 when the kubelet pod-resources List answered (cached up to 2 s), else 0.");
  podresources_up.metric.push_back(gauge({}, inputs.podresources_up ? 1 : 0));
  MetricFamily build_info = gauge_family(
      "xpu_exporter_build_info", "The exporter's version as a label; the value is always 1.");
  build_info.metric.push_back(gauge({{"version", XPU_VERSION}}, 1));
  families.push_back(std::move(build_info));
  families.push_back(std::move(xpud_up));
  families.push_back(std::move(podresources_up));
  return families;
}

MetricFamily scrape_duration_family(double seconds) {
  MetricFamily duration =
      gauge_family("xpu_exporter_scrape_duration_seconds",
                   "Time this scrape spent collecting from xpud and the kubelet, in seconds.");
  duration.metric.push_back(gauge({}, seconds));
  return duration;
}

std::vector<MetricFamily> build_families(const ScrapeInputs& inputs) {
  std::vector<MetricFamily> families = build_state_families(inputs);
  families.push_back(scrape_duration_family(inputs.scrape_duration_seconds));
  return families;
}

std::string render_text(const std::vector<MetricFamily>& families) {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return out.str();
}

}  // namespace shim::exporter
