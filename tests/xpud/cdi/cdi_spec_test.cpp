// The CDI spec as text (render_cdi_spec) and as a file (CdiSpecFile): what a runtime reading
// /var/run/cdi finds. That the reference library accepts it is cdi_spec_reference_test's part.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/support/card_builder.h"
#include "tests/support/child_process.h"
#include "xpud/cdi/cdi_spec.h"
#include "xpud/cdi/cdi_spec_file.h"

namespace {

using nlohmann::json;
using xpud::CdiSpecFile;
using xpud::CdiSpecInput;
using xpud::DeviceIdentity;
using xpud::render_cdi_spec;

// A card as a backend discovers it, with its two device nodes.
DeviceIdentity card(unsigned index, std::string uuid) {
  return xpu::test::card(index)
      .uuid(std::move(uuid))
      .device_nodes({"/dev/xpu" + std::to_string(index), "/dev/xpuctrl"});
}

const json* device(const json& spec, const std::string& name) {
  for (const auto& d : spec["devices"])
    if (d["name"] == name) return &d;
  return nullptr;
}

std::vector<std::string> node_paths(const json& dev) {
  std::vector<std::string> paths;
  for (const auto& n : dev["containerEdits"]["deviceNodes"]) paths.push_back(n["path"]);
  return paths;
}

std::vector<std::string> env(const json& dev) {
  return dev["containerEdits"]["env"];
}

TEST(CdiSpecRender, EachCardByIndexAndUuidAndAllWithItsNodesAndEnvironment) {
  auto rendering = render_cdi_spec(CdiSpecInput{{card(0, "uuid-a0"), card(1, "uuid-b1")}, ""});
  ASSERT_FALSE(rendering.text.empty());
  ASSERT_EQ(rendering.text.back(), '\n');
  json spec = json::parse(rendering.text);
  EXPECT_EQ(spec["kind"], "kunlunxin.com/xpu");
  // Names starting with a digit came with 0.5.0; nothing here needs more.
  EXPECT_EQ(spec["cdiVersion"], "0.5.0");
  EXPECT_EQ(spec["devices"].size(), 5u);
  EXPECT_EQ(rendering.devices, (std::vector<std::string>{"0", "uuid-a0", "1", "uuid-b1", "all"}));

  for (const std::string name : {"1", "uuid-b1"}) {
    const json* dev = device(spec, name);
    ASSERT_NE(dev, nullptr) << name;
    EXPECT_EQ(node_paths(*dev), (std::vector<std::string>{"/dev/xpu1", "/dev/xpuctrl"})) << name;
    EXPECT_EQ(env(*dev),
              (std::vector<std::string>{"XPU_VISIBLE_DEVICES=1", "CXPU_VISIBLE_DEVICES=1",
                                        "KUNLUNXIN_XPU_UUIDS=uuid-b1"}));
    for (const auto& n : (*dev)["containerEdits"]["deviceNodes"]) {
      EXPECT_EQ(n["permissions"], "rw");
      EXPECT_FALSE(n.contains("hostPath")) << "a real node is at its own path";
    }
  }
  const json* all = device(spec, "all");
  ASSERT_NE(all, nullptr);
  EXPECT_EQ(node_paths(*all), (std::vector<std::string>{"/dev/xpu0", "/dev/xpu1", "/dev/xpuctrl"}));
  // The vendor's runtime injects what CXPU_VISIBLE_DEVICES names (its base images say "all"):
  // exactly these cards.
  EXPECT_EQ(env(*all),
            (std::vector<std::string>{"XPU_VISIBLE_DEVICES=0,1", "CXPU_VISIBLE_DEVICES=0,1",
                                      "KUNLUNXIN_XPU_UUIDS=uuid-a0,uuid-b1"}));
}

TEST(CdiSpecRender, SimulatedNodesStandInForAnExistingDevice) {
  json spec = json::parse(render_cdi_spec(CdiSpecInput{{card(3, "u3")}, "/dev/null"}).text);
  const json* dev = device(spec, "3");
  ASSERT_NE(dev, nullptr);
  for (const auto& n : (*dev)["containerEdits"]["deviceNodes"])
    EXPECT_EQ(n["hostPath"], "/dev/null");
  EXPECT_EQ(node_paths(*dev), (std::vector<std::string>{"/dev/xpu3", "/dev/xpuctrl"}));
}

TEST(CdiSpecRender, AVirtualFunctionIsADeviceWithTheNodesXpudListsForIt) {
  DeviceIdentity vf = card(8, "vf-8");
  vf.is_virtual_function = true;
  vf.device_nodes = {"/dev/xpu8", "/dev/xpuctrl"};
  json spec = json::parse(render_cdi_spec(CdiSpecInput{{card(0, "pf-0"), vf}, ""}).text);
  ASSERT_NE(device(spec, "vf-8"), nullptr);
  EXPECT_EQ(node_paths(*device(spec, "8")),
            (std::vector<std::string>{"/dev/xpu8", "/dev/xpuctrl"}));
  EXPECT_EQ(env(*device(spec, "all"))[0], "XPU_VISIBLE_DEVICES=0,8");
  EXPECT_EQ(env(*device(spec, "all"))[1], "CXPU_VISIBLE_DEVICES=0,8");
  EXPECT_EQ(env(*device(spec, "8"))[1], "CXPU_VISIBLE_DEVICES=8");
}

TEST(CdiSpecRender, AUuidThatCannotBeANameLeavesTheCardReachableByIndex) {
  auto rendering = render_cdi_spec(
      CdiSpecInput{{card(0, "bad uuid/with slash"), card(1, "all"), card(2, "0"), card(3, "-lead"),
                    card(4, "twin"), card(5, "twin"), card(6, "77")},
                   ""});
  json spec = json::parse(rendering.text);
  EXPECT_EQ(rendering.devices,
            (std::vector<std::string>{"0", "1", "2", "3", "4", "twin", "5", "6", "all"}));
  EXPECT_EQ(rendering.skipped.size(), 6u);
  // "all" stays every card, not card 1; "0" stays card 0, not card 2.
  EXPECT_EQ(env(*device(spec, "all"))[0], "XPU_VISIBLE_DEVICES=0,1,2,3,4,5,6");
  EXPECT_EQ(env(*device(spec, "0"))[0], "XPU_VISIBLE_DEVICES=0");
}

TEST(CdiSpecRender, NodesOutsideDevAreLeftOutAndACardWithoutNodesIsNotDescribed) {
  DeviceIdentity odd = card(0, "u0");
  odd.device_nodes = {"/dev/../etc/shadow", "relative", "/dev/xpuctrl"};
  DeviceIdentity none = card(1, "u1");
  none.device_nodes = {"/tmp/x"};
  auto rendering = render_cdi_spec(CdiSpecInput{{odd, none}, ""});
  json spec = json::parse(rendering.text);
  EXPECT_EQ(node_paths(*device(spec, "0")), (std::vector<std::string>{"/dev/xpuctrl"}));
  EXPECT_EQ(device(spec, "1"), nullptr);
  EXPECT_EQ(rendering.skipped.size(), 4u);
}

TEST(CdiSpecRender, NoCardsMeansNoSpec) {
  // The reference library refuses a spec without devices: the writer removes the file instead.
  EXPECT_TRUE(render_cdi_spec(CdiSpecInput{{}, ""}).text.empty());
}

TEST(CdiSpecRender, SameCardsSameText) {
  CdiSpecInput input{{card(0, "u0"), card(1, "u1")}, ""};
  EXPECT_EQ(render_cdi_spec(input).text, render_cdi_spec(input).text);
}

struct stat stat_of(const std::filesystem::path& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st;
}

std::string read(const std::filesystem::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(CdiSpecFile, CreatesTheDirectoryWritesWorldReadableAndLeavesNoTempFile) {
  xpu::test::TempDir dir;
  CdiSpecFile file(dir.path() / "cdi" / "kunlunxin-xpu.json");
  auto written = file.write("{}\n");
  ASSERT_TRUE(written.ok()) << written.error();
  EXPECT_TRUE(*written);
  EXPECT_EQ(read(dir.path() / "cdi" / "kunlunxin-xpu.json"), "{}\n");
  EXPECT_EQ(stat_of(dir.path() / "cdi" / "kunlunxin-xpu.json").st_mode & 07777, 0644u);
  EXPECT_EQ(stat_of(dir.path() / "cdi").st_mode & 07777, 0755u);
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path() / "cdi"))
    names.push_back(entry.path().filename());
  EXPECT_EQ(names, std::vector<std::string>{"kunlunxin-xpu.json"});
}

TEST(CdiSpecFile, SameContentKeepsInodeAndMtimeNewContentReplacesTheFile) {
  xpu::test::TempDir dir;
  const auto path = dir.path() / "kunlunxin-xpu.json";
  CdiSpecFile file(path);
  ASSERT_TRUE(file.write("one\n").ok());
  const auto first = stat_of(path);
  auto again = file.write("one\n");
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(*again);
  const auto second = stat_of(path);
  EXPECT_EQ(second.st_ino, first.st_ino);
  EXPECT_EQ(second.st_mtim.tv_nsec, first.st_mtim.tv_nsec);
  EXPECT_TRUE(file.unchanged_since_write());

  ASSERT_TRUE(*file.write("two\n"));
  EXPECT_NE(stat_of(path).st_ino, first.st_ino) << "replaced by rename, never written in place";
  EXPECT_EQ(read(path), "two\n");
}

TEST(CdiSpecFile, NoticesAFileReplacedBehindItsBackAndPutsItBack) {
  xpu::test::TempDir dir;
  const auto path = dir.path() / "kunlunxin-xpu.json";
  CdiSpecFile file(path);
  ASSERT_TRUE(file.write("spec\n").ok());
  std::filesystem::remove(path);
  EXPECT_FALSE(file.unchanged_since_write());
  xpu::test::write_file(path, "edited by hand\n");
  EXPECT_FALSE(file.unchanged_since_write());
  EXPECT_TRUE(*file.write("spec\n"));
  EXPECT_EQ(read(path), "spec\n");
}

TEST(CdiSpecFile, ASymlinkAtTheFileIsReplacedNotWrittenThrough) {
  xpu::test::TempDir dir;
  const auto target = dir.path() / "elsewhere";
  xpu::test::write_file(target, "not xpud's\n");
  std::filesystem::create_symlink(target, dir.path() / "kunlunxin-xpu.json");
  CdiSpecFile file(dir.path() / "kunlunxin-xpu.json");
  ASSERT_TRUE(file.write("spec\n").ok());
  EXPECT_EQ(read(target), "not xpud's\n");
  EXPECT_FALSE(std::filesystem::is_symlink(dir.path() / "kunlunxin-xpu.json"));
}

TEST(CdiSpecFile, AnUnwritableDirectoryIsAnErrorNamingIt) {
  xpu::test::TempDir dir;
  xpu::test::write_file(dir.path() / "a-file", "x");
  CdiSpecFile file(dir.path() / "a-file" / "kunlunxin-xpu.json");
  auto written = file.write("spec\n");
  ASSERT_FALSE(written.ok());
  EXPECT_NE(written.error().find((dir.path() / "a-file").string()), std::string::npos)
      << written.error();
}

TEST(CdiSpecFile, RemoveSaysWhetherThereWasAFile) {
  xpu::test::TempDir dir;
  CdiSpecFile file(dir.path() / "kunlunxin-xpu.json");
  ASSERT_TRUE(file.write("spec\n").ok());
  EXPECT_TRUE(*file.remove());
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "kunlunxin-xpu.json"));
  EXPECT_FALSE(*file.remove());
}

TEST(CdiSpecFileName, OnlyAPlainKunlunxinJsonName) {
  EXPECT_TRUE(xpud::validate_cdi_spec_file_name("kunlunxin-xpu.json").ok());
  EXPECT_TRUE(xpud::validate_cdi_spec_file_name("kunlunxin.json").ok());
  for (const char* bad : {"", "nvidia.json", "kunlunxin-xpu.yaml", "kunlunxin/../x.json",
                          "../kunlunxin.json", "kunlunxin xpu.json", "kunlunxin-xpu"})
    EXPECT_FALSE(xpud::validate_cdi_spec_file_name(bad).ok()) << bad;
  EXPECT_FALSE(
      xpud::validate_cdi_spec_file_name("kunlunxin" + std::string(300, 'x') + ".json").ok());
}

}  // namespace
