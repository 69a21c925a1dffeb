// The attribute reader both hardware backends use: bounded, non-blocking reads and strict parsers.
#include "xpud/backends/sysfs_attribute.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <chrono>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/unique_fd.h"
#include "tests/fakes/sysfs/fake_sysfs_tree.h"
#include "tests/xpud/backends/captured_log.h"

namespace xpud::sysfs {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

class SysfsAttributeFile : public ::testing::Test {
 protected:
  fs::path write(const std::string& name, const std::string& contents) {
    tree_.write_file(name, contents);
    return tree_.root() / name;
  }
  xpu::fakes::FakeSysfsTree tree_;
};

TEST_F(SysfsAttributeFile, ReadsTheWholeText) {
  auto text = read_text_file(write("vendor", "0x1d22\n"));
  ASSERT_TRUE(text.ok()) << text.error();
  ASSERT_TRUE(text->has_value());
  EXPECT_EQ(**text, "0x1d22\n");
}

TEST_F(SysfsAttributeFile, MissingFileIsAbsentNotAnError) {
  auto text = read_text_file(tree_.root() / "no/such/file");
  ASSERT_TRUE(text.ok()) << text.error();
  EXPECT_FALSE(text->has_value());
}

TEST_F(SysfsAttributeFile, AcceptsExactlyTheLimitAndRejectsOneByteMore) {
  auto at_limit = read_text_file(write("page", std::string(kMaxAttributeBytes, 'a')));
  ASSERT_TRUE(at_limit.ok()) << at_limit.error();
  EXPECT_EQ((*at_limit)->size(), kMaxAttributeBytes);

  auto too_large = read_text_file(write("huge", std::string(kMaxAttributeBytes + 1, 'a')));
  ASSERT_FALSE(too_large.ok());
  EXPECT_THAT(too_large.error(), HasSubstr("larger than 4096 bytes"));
}

TEST_F(SysfsAttributeFile, RejectsBinaryContent) {
  auto text = read_text_file(write("binary", std::string("0x1d\0"
                                                         "22",
                                                         7)));
  ASSERT_FALSE(text.ok());
  EXPECT_THAT(text.error(), HasSubstr("binary"));
}

TEST_F(SysfsAttributeFile, RejectsADirectory) {
  fs::create_directories(tree_.root() / "a_directory");
  auto text = read_text_file(tree_.root() / "a_directory");
  ASSERT_FALSE(text.ok());
  EXPECT_THAT(text.error(), HasSubstr("not a regular file"));
}

TEST_F(SysfsAttributeFile, RejectsAFifoWithoutBlocking) {
  fs::path fifo = tree_.root() / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto started = std::chrono::steady_clock::now();
  auto text = read_text_file(fifo);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(2));
  ASSERT_FALSE(text.ok());
  EXPECT_THAT(text.error(), HasSubstr("not a regular file"));
}

TEST_F(SysfsAttributeFile, ReadAttributeLogsTheFileItIgnores) {
  test::CapturedLog log;
  fs::path path = write("numa_node", "banana\n");
  EXPECT_EQ(read_attribute(path, parse_numa_node), std::nullopt);
  EXPECT_THAT(log.text(), HasSubstr("debug sysfs: ignoring " + path.string() + ": malformed"));

  log.clear();
  fs::path huge = write("vendor", std::string(100000, '1'));
  EXPECT_EQ(read_attribute(huge, parse_pci_id), std::nullopt);
  EXPECT_THAT(log.text(), HasSubstr("ignoring " + huge.string() + ": larger than"));
}

TEST_F(SysfsAttributeFile, ReadAttributeIsQuietAboutMissingFiles) {
  test::CapturedLog log;
  EXPECT_EQ(read_attribute(tree_.root() / "sriov_numvfs", parse_vf_count), std::nullopt);
  EXPECT_EQ(log.text(), "");
}

TEST_F(SysfsAttributeFile, ParseAttributeGivesTheValueOrNothingForAMissingFile) {
  auto node = parse_attribute(write("numa_node", "1\n"), parse_numa_node);
  ASSERT_TRUE(node.ok()) << node.error();
  EXPECT_EQ(*node, 1);
  auto missing = parse_attribute(tree_.root() / "no/numa_node", parse_numa_node);
  ASSERT_TRUE(missing.ok()) << missing.error();
  EXPECT_EQ(*missing, std::nullopt);
}

TEST_F(SysfsAttributeFile, ParseAttributeErrorsNameTheFileAndTheProblem) {
  for (std::string contents : {"", "\n", "abc\n", "1x\n", "1 2\n", "-2\n", "1024\n",
                               "99999999999999\n", "0x1\n", "\x01\x02\n"}) {
    fs::path path = write("numa_node", contents);
    auto node = parse_attribute(path, parse_numa_node);
    ASSERT_FALSE(node.ok()) << "contents: " << contents;
    EXPECT_EQ(node.error(), path.string() + ": malformed content");
  }
  fs::path huge = write("numa_node", std::string(kMaxAttributeBytes + 1, '1'));
  auto node = parse_attribute(huge, parse_numa_node);
  ASSERT_FALSE(node.ok());
  EXPECT_EQ(node.error(), huge.string() + ": larger than 4096 bytes");

  fs::path directory = tree_.root() / "devices/0000:3b:00.0/numa_node";
  fs::create_directories(directory);
  node = parse_attribute(directory, parse_numa_node);
  ASSERT_FALSE(node.ok());
  EXPECT_EQ(node.error(), directory.string() + ": not a regular file");
}

TEST_F(SysfsAttributeFile, ParseAttributeAtReadsRelativeToTheDirectoryAndNamesTheFile) {
  write("devices/0000:3b:00.0/vendor", "0x1d22\n");
  write("devices/0000:3c:00.0/vendor", "0x1d2\x7f\n");
  const fs::path devices = tree_.root() / "devices";
  xpu::UniqueFd dir(::open(devices.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(dir.valid());
  auto vendor = parse_attribute_at(dir.get(), devices, "0000:3b:00.0/vendor", parse_pci_id);
  ASSERT_TRUE(vendor.ok()) << vendor.error();
  EXPECT_EQ(*vendor, 0x1d22);
  auto garbled = parse_attribute_at(dir.get(), devices, "0000:3c:00.0/vendor", parse_pci_id);
  ASSERT_FALSE(garbled.ok());
  EXPECT_EQ(garbled.error(), (devices / "0000:3c:00.0/vendor").string() + ": malformed content");
}

TEST_F(SysfsAttributeFile, SymlinkTargetNameIsTheLastComponent) {
  fs::create_directories(tree_.root() / "drivers/kunlun");
  fs::create_symlink("../../drivers/kunlun", tree_.root() / "driver");
  EXPECT_EQ(symlink_target_name(tree_.root() / "driver"), "kunlun");
  EXPECT_EQ(symlink_target_name(write("plain", "x")), std::nullopt);
  EXPECT_EQ(symlink_target_name(tree_.root() / "missing"), std::nullopt);
}

TEST(SysfsAttributeParse, PciIds) {
  EXPECT_EQ(parse_pci_id("0x1d22\n"), 0x1d22);
  EXPECT_EQ(parse_pci_id("0X3684"), 0x3684);
  EXPECT_EQ(parse_pci_id("0x0002\n"), 2);
  EXPECT_EQ(parse_pci_id("ffff"), 0xffff);
  EXPECT_EQ(parse_pci_id(""), std::nullopt);
  EXPECT_EQ(parse_pci_id("\n"), std::nullopt);
  EXPECT_EQ(parse_pci_id("0x"), std::nullopt);
  EXPECT_EQ(parse_pci_id("0x10000"), std::nullopt);
  EXPECT_EQ(parse_pci_id("0x1d22 0x3684"), std::nullopt);
  EXPECT_EQ(parse_pci_id(" 0x1d22"), std::nullopt);
  EXPECT_EQ(parse_pci_id("0xzz"), std::nullopt);
  EXPECT_EQ(parse_pci_id("-0x1"), std::nullopt);
  EXPECT_EQ(parse_pci_id("\xff\xfe"), std::nullopt);
}

TEST(SysfsAttributeParse, NumaNodes) {
  EXPECT_EQ(parse_numa_node("-1\n"), -1);
  EXPECT_EQ(parse_numa_node("0\n"), 0);
  EXPECT_EQ(parse_numa_node("7"), 7);
  EXPECT_EQ(parse_numa_node("1023\n"), 1023);
  EXPECT_EQ(parse_numa_node("1024\n"), std::nullopt);
  EXPECT_EQ(parse_numa_node("-2\n"), std::nullopt);
  EXPECT_EQ(parse_numa_node("99999999999999999999"), std::nullopt);
  EXPECT_EQ(parse_numa_node("+1"), std::nullopt);
  EXPECT_EQ(parse_numa_node("1.5"), std::nullopt);
  EXPECT_EQ(parse_numa_node("node0"), std::nullopt);
  EXPECT_EQ(parse_numa_node(""), std::nullopt);
}

TEST(SysfsAttributeParse, VfCounts) {
  EXPECT_EQ(parse_vf_count("0\n"), 0u);
  EXPECT_EQ(parse_vf_count("8\n"), 8u);
  EXPECT_EQ(parse_vf_count("65535"), 65535u);
  EXPECT_EQ(parse_vf_count("65536"), std::nullopt);
  EXPECT_EQ(parse_vf_count("-1"), std::nullopt);
  EXPECT_EQ(parse_vf_count("four"), std::nullopt);
}

}  // namespace
}  // namespace xpud::sysfs
