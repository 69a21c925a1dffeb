// The node-feature-discovery labels the device plugin writes: the file format NFD's `local`
// source documents (features.d), label names and values Kubernetes accepts whatever xpud says,
// and memory in --memory-unit.
#include "k8s-shim/device_plugin/node_features.h"

#include <gtest/gtest.h>

#include <map>
#include <regex>

#include "tests/support/card_builder.h"

namespace shim {
namespace {

// This file's cards have 32 GiB (virtual functions 8 GiB) on driver 5.0.21.21 unless a test says
// otherwise.
xpu::DeviceInfo card(unsigned index, std::string model = "R200",
                     std::uint64_t memory = 32ull << 30) {
  return xpu::test::card(index).model(std::move(model)).memory_total_bytes(memory);
}

xpu::DeviceInfo vf(unsigned index, std::uint64_t memory = 8ull << 30) {
  return xpu::test::card(index).memory_total_bytes(memory).virtual_function();
}

xpu::DeviceView present(std::vector<xpu::DeviceInfo> devices, std::string driver = "5.0.21.21") {
  return xpu::test::present(std::move(devices), std::move(driver));
}

// NFD's features.d format, checked independently of the code under test: every line is a
// comment (`#...`, never the `# +` directive form) or `<prefix>/<name>[=<value>]`, where the
// prefix is a DNS subdomain, the name a label name and the value a label value; under 64 kB.
// Returns the labels, failing the test on any line that breaks the format.
std::map<std::string, std::string> parse_as_nfd(const std::string& text) {
  EXPECT_LT(text.size(), 64u * 1024) << "NFD ignores feature files over 64 kB";
  EXPECT_TRUE(text.empty() || text.back() == '\n');
  static const std::regex line_re(
      R"(^(([a-z0-9]([-a-z0-9]*[a-z0-9])?)(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)/)"
      R"(([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)(=(([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?))?$)");
  std::map<std::string, std::string> labels;
  std::size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    std::string line = text.substr(start, end - start);
    start = end + 1;
    if (line.starts_with("#")) {
      EXPECT_FALSE(line.starts_with("# +") || line.starts_with("#+"))
          << "a directive, not a comment: " << line;
      continue;
    }
    std::smatch m;
    if (!std::regex_match(line, m, line_re)) {
      ADD_FAILURE() << "not a valid NFD feature line: '" << line << "'";
      continue;
    }
    std::string prefix = m[1], name = m[6];
    EXPECT_LE(prefix.size(), 253u) << line;
    EXPECT_LE(name.size(), 63u) << line;
    std::string value = m[8].matched ? std::string(m[9]) : "true";
    EXPECT_LE(value.size(), 63u) << line;
    EXPECT_TRUE(labels.emplace(prefix + "/" + name, value).second) << "label twice: " << line;
  }
  return labels;
}

std::map<std::string, std::string> labels_of(const xpu::DeviceView& view,
                                             NodeFeatureOptions options = {}) {
  auto labels = node_feature_labels(view, options);
  EXPECT_TRUE(labels.has_value());
  if (!labels) return {};
  return parse_as_nfd(render_feature_file(*labels));
}

TEST(NodeFeatures, EightR200CardsInMiB) {
  std::vector<xpu::DeviceInfo> cards;
  for (unsigned i = 0; i < 8; ++i) cards.push_back(card(i));
  auto labels = node_feature_labels(present(cards), {});
  ASSERT_TRUE(labels);
  EXPECT_EQ(render_feature_file(*labels),
            "# XPU facts of this node, written by xpu-k8s-shim device-plugin for "
            "node-feature-discovery's\n"
            "# local source; rewritten when they change, removed when the device plugin stops.\n"
            "kunlunxin.com/xpu.count=8\n"
            "kunlunxin.com/xpu.model=R200\n"
            "kunlunxin.com/xpu.memory-mib=32768\n"
            "kunlunxin.com/xpu.driver-version=5.0.21.21\n"
            "kunlunxin.com/xpu.vf.count=0\n"
            "kunlunxin.com/xpu.sriov=false\n"
            "kunlunxin.com/xpu.share=false\n");
  EXPECT_EQ(parse_as_nfd(render_feature_file(*labels)).size(), 7u);
}

TEST(NodeFeatures, NothingWhileXpudIsAbsent) {
  xpu::DeviceView gone;
  gone.devices = {card(0)};  // the last known list: not news about the node
  EXPECT_FALSE(node_feature_labels(gone, {}).has_value());
}

TEST(NodeFeatures, MemoryUnitIsInTheNameAndRoundsDown) {
  const std::uint64_t memory = (32ull << 30) - 1;  // a hair under 32 GiB
  auto view = present({card(0, "R200", memory)});
  EXPECT_EQ(labels_of(view, {.memory_unit = MemoryUnit::B}).at("kunlunxin.com/xpu.memory-b"),
            std::to_string(memory));
  EXPECT_EQ(labels_of(view, {.memory_unit = MemoryUnit::KiB}).at("kunlunxin.com/xpu.memory-kib"),
            "33554431");
  EXPECT_EQ(labels_of(view, {.memory_unit = MemoryUnit::MiB}).at("kunlunxin.com/xpu.memory-mib"),
            "32767");
  auto gib = labels_of(view, {.memory_unit = MemoryUnit::GiB});
  EXPECT_EQ(gib.at("kunlunxin.com/xpu.memory-gib"), "31");
  EXPECT_EQ(gib.count("kunlunxin.com/xpu.memory-mib"), 0u);
}

TEST(NodeFeatures, SmallestCardAndMixedModels) {
  auto labels = labels_of(present({card(0, "R200", 32ull << 30), card(1, "R300", 64ull << 30)}));
  EXPECT_EQ(labels.at("kunlunxin.com/xpu.count"), "2");
  EXPECT_EQ(labels.at("kunlunxin.com/xpu.model"), "mixed");
  EXPECT_EQ(labels.at("kunlunxin.com/xpu.memory-mib"), "32768");
}

TEST(NodeFeatures, UnknownMemoryOrDriverVersionLeavesTheLabelOut) {
  // The sysfs backend knows neither: a missing label, not a made-up 0.
  auto labels = labels_of(present({card(0, "R200", 32ull << 30), card(1, "R200", 0)}, ""));
  EXPECT_EQ(labels.count("kunlunxin.com/xpu.memory-mib"), 0u);
  EXPECT_EQ(labels.count("kunlunxin.com/xpu.driver-version"), 0u);
  EXPECT_EQ(labels.at("kunlunxin.com/xpu.model"), "R200");
}

TEST(NodeFeatures, NoCards) {
  auto labels = labels_of(present({}));
  EXPECT_EQ(labels.at("kunlunxin.com/xpu.count"), "0");
  EXPECT_EQ(labels.at("kunlunxin.com/xpu.vf.count"), "0");
  EXPECT_EQ(labels.count("kunlunxin.com/xpu.model"), 0u);
  EXPECT_EQ(labels.count("kunlunxin.com/xpu.memory-mib"), 0u);
}

TEST(NodeFeatures, SriovAndShareModes) {
  auto view = present({card(0, "R200"), vf(1), vf(2), vf(3)});
  auto labels = labels_of(view, {.sriov = true});
  EXPECT_EQ(labels.at("kunlunxin.com/xpu.count"), "1");
  EXPECT_EQ(labels.at("kunlunxin.com/xpu.vf.count"), "3");
  EXPECT_EQ(labels.at("kunlunxin.com/xpu.memory-mib"), "32768");  // the physical card, not a VF
  EXPECT_EQ(labels.at("kunlunxin.com/xpu.sriov"), "true");
  EXPECT_EQ(labels.at("kunlunxin.com/xpu.share"), "false");
  EXPECT_EQ(labels.count("kunlunxin.com/xpu.share.replicas"), 0u);

  auto shared = labels_of(present({card(0)}), {.share_replicas = 4});
  EXPECT_EQ(shared.at("kunlunxin.com/xpu.share"), "true");
  EXPECT_EQ(shared.at("kunlunxin.com/xpu.share.replicas"), "4");
  EXPECT_EQ(shared.at("kunlunxin.com/xpu.sriov"), "false");

  // The memory form: the unit instead of replicas, which it does not have.
  auto by_memory = labels_of(present({card(0)}), {.share_memory_unit_mib = 1024});
  EXPECT_EQ(by_memory.at("kunlunxin.com/xpu.share"), "true");
  EXPECT_EQ(by_memory.at("kunlunxin.com/xpu.share.memory-unit-mib"), "1024");
  EXPECT_EQ(by_memory.count("kunlunxin.com/xpu.share.replicas"), 0u);
}

TEST(NodeFeatures, OnlyVirtualFunctionsDescribeTheNode) {
  // Inside a VM given virtual functions, they are all there is.
  auto labels = labels_of(present({vf(0), vf(1)}));
  EXPECT_EQ(labels.at("kunlunxin.com/xpu.count"), "0");
  EXPECT_EQ(labels.at("kunlunxin.com/xpu.vf.count"), "2");
  EXPECT_EQ(labels.at("kunlunxin.com/xpu.model"), "R200");
  EXPECT_EQ(labels.at("kunlunxin.com/xpu.memory-mib"), "8192");
}

TEST(NodeFeatures, HostileModelAndDriverStringsBecomeValidLabelValues) {
  const std::string long_model(200, 'K');
  struct Case {
    std::string model, driver;
    std::string want_model;
    std::optional<std::string> want_driver;
  };
  const std::vector<Case> cases = {
      {"R200 (rev 2)", "5.0.21 build 7", "R200-rev-2", "5.0.21-build-7"},
      {"R200\nkunlunxin.com/xpu.count=99", "5.0\n# +expiry-time=2000-01-01T00:00:00Z",
       "R200-kunlunxin.com-xpu.count-99", "5.0-expiry-time-2000-01-01T00-00-00Z"},
      {"--R200--", "..5.0.21..", "R200", "5.0.21"},
      {"昆仑芯 R200", "\xff\xfe", "R200", std::nullopt},
      {"", "", "unknown", std::nullopt},
      {"!!!", "=", "unknown", std::nullopt},
      {long_model, std::string(100, '9') + "-x", std::string(63, 'K'), std::string(63, '9')},
      {std::string(62, 'a') + "-b", std::string(62, '1') + ".", std::string(62, 'a'),
       std::string(62, '1')},
      {std::string("R2\0"
                   "00",
                   5),
       "5.0.21\t", "R2-00", "5.0.21"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE("model '" + c.model + "', driver '" + c.driver + "'");
    auto labels = labels_of(present({card(0, c.model)}, c.driver));  // parse_as_nfd checks validity
    EXPECT_EQ(labels.at("kunlunxin.com/xpu.model"), c.want_model);
    if (c.want_driver)
      EXPECT_EQ(labels.at("kunlunxin.com/xpu.driver-version"), *c.want_driver);
    else
      EXPECT_EQ(labels.count("kunlunxin.com/xpu.driver-version"), 0u);
    EXPECT_EQ(labels.at("kunlunxin.com/xpu.count"), "1") << "a hostile string injected a line";
  }
}

TEST(NodeFeatures, SanitizeKeepsValidValuesAsTheyAre) {
  for (const char* value : {"R200", "5.0.21.21", "a", "K200_x.y-z", "0"})
    EXPECT_EQ(sanitize_label_value(value), value);
  EXPECT_EQ(sanitize_label_value(std::string(63, 'x')), std::string(63, 'x'));
  EXPECT_EQ(sanitize_label_value(""), std::nullopt);
}

TEST(NodeFeatures, EqualFactsGiveEqualFilesWhateverTheHealth) {
  auto a = present({card(0), card(1)});
  auto b = a;
  b.devices[1].healthy = false;
  b.devices[1].health_reason = "thermal trip";
  b.manager.healthy_device_count = 1;
  EXPECT_EQ(render_feature_file(*node_feature_labels(a, {})),
            render_feature_file(*node_feature_labels(b, {})));
}

}  // namespace
}  // namespace shim
