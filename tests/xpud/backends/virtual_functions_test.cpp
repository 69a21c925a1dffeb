// Setting SR-IOV virtual-function counts through each hardware backend (virtual_functions.h):
// sysfs sriov_numvfs on the fake sysfs tree, xpumlDeviceSetSriovVfNum on the fake libxpuml, and
// the sysfs fallback of a library without it.
#include <sys/inotify.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/unique_fd.h"
#include "tests/xpud/backends/xpuml/fake_xpuml_host.h"
#include "xpud/backends/sysfs/sysfs_backend.h"
#include "xpud/backends/sysfs_attribute.h"
#include "xpud/backends/virtual_functions.h"
#include "xpud/backends/xpuml/xpuml_backend.h"

namespace xpud {
namespace {

using ::testing::HasSubstr;
using Kind = DriverChangeError::Kind;
namespace fs = std::filesystem;

// The change was made; otherwise the failure shows the backend's message.
#define EXPECT_DONE(call)                                    \
  do {                                                       \
    auto error_ = (call);                                    \
    EXPECT_FALSE(error_) << (error_ ? error_->message : ""); \
  } while (0)

std::vector<DeviceIdentity> discover(Backend& backend) {
  auto devices = backend.discover();
  if (!devices.ok()) ADD_FAILURE() << devices.error();
  return devices.ok() ? *devices : std::vector<DeviceIdentity>{};
}

const DeviceIdentity& at_bus(const std::vector<DeviceIdentity>& devices, std::string_view bus_id) {
  for (const auto& d : devices)
    if (d.pci_bus_id == bus_id) return d;
  throw std::runtime_error("no device at " + std::string(bus_id));
}

std::string read_file(const fs::path& path) {
  auto text = sysfs::read_text_file(path);
  return text.ok() && *text ? **text : "(unreadable)";
}

// Counts the completed writes of one file (IN_CLOSE_WRITE), to see the kernel's 0-then-N dance.
// IN_MODIFY is watched too: inotify merges an event identical to the last unread one, so two
// writes in a row would read as one close without a modification between them.
class WriteCounter {
 public:
  explicit WriteCounter(const fs::path& file) : fd_(inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {
    if (!fd_.valid() || inotify_add_watch(fd_.get(), file.c_str(), IN_CLOSE_WRITE | IN_MODIFY) < 0)
      throw std::runtime_error("inotify on " + file.string());
  }
  unsigned count() {
    alignas(inotify_event) char buffer[4096];
    for (ssize_t n; (n = ::read(fd_.get(), buffer, sizeof buffer)) > 0;)
      for (char* p = buffer; p < buffer + n;) {
        auto* event = reinterpret_cast<inotify_event*>(p);
        writes_ += (event->mask & IN_CLOSE_WRITE) ? 1 : 0;
        p += sizeof(inotify_event) + event->len;
      }
    return writes_;
  }

 private:
  xpu::UniqueFd fd_;
  unsigned writes_ = 0;
};

class SysfsVirtualFunctionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tree.add_control_node();
    auto sriov = xpu::fakes::kunlunxin_r_series("0000:3b:00.0", 1);
    sriov.sriov_totalvfs = 4;
    sriov.sriov_numvfs = 2;
    tree.add_card(sriov, 0);
    tree.add_card(xpu::fakes::kunlunxin_r_series("0000:3d:00.0", 1), 1);
    tree.add_card(xpu::fakes::kunlunxin_vf("0000:3b:00.1", "0000:3b:00.0"), 2);
    auto made = make_sysfs_backend(tree.root());
    ASSERT_TRUE(made.ok()) << made.error();
    backend = std::move(*made);
    ASSERT_NE(backend->virtual_functions(), nullptr);
    devices = discover(*backend);
    ASSERT_EQ(devices.size(), 3u);
  }

  std::optional<DriverChangeError> set(std::string_view bus_id, unsigned count) {
    return backend->virtual_functions()->set_virtual_function_count(at_bus(devices, bus_id), count);
  }

  fs::path numvfs() const { return tree.function_dir("0000:3b:00.0") / "sriov_numvfs"; }

  xpu::fakes::FakeSysfsTree tree;
  std::unique_ptr<Backend> backend;
  std::vector<DeviceIdentity> devices;
};

TEST_F(SysfsVirtualFunctionsTest, ChangingANonZeroCountWritesZeroFirst) {
  WriteCounter writes(numvfs());
  EXPECT_DONE(set("0000:3b:00.0", 3));
  EXPECT_EQ(read_file(numvfs()), "3\n");
  EXPECT_EQ(writes.count(), 2u) << "0, then 3";

  EXPECT_DONE(set("0000:3b:00.0", 0));
  EXPECT_EQ(read_file(numvfs()), "0\n");
  EXPECT_EQ(writes.count(), 3u);
  EXPECT_DONE(set("0000:3b:00.0", 4));
  EXPECT_EQ(read_file(numvfs()), "4\n");
  EXPECT_EQ(writes.count(), 4u) << "from 0 one write is enough";
}

TEST_F(SysfsVirtualFunctionsTest, TheSameCountWritesNothing) {
  WriteCounter writes(numvfs());
  EXPECT_DONE(set("0000:3b:00.0", 2));
  EXPECT_EQ(writes.count(), 0u);
}

TEST_F(SysfsVirtualFunctionsTest, MoreThanTotalVfsIsInvalid) {
  auto error = set("0000:3b:00.0", 5);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->kind, Kind::InvalidArgument);
  EXPECT_THAT(error->message,
              HasSubstr("xpu0 (0000:3b:00.0) supports at most 4 virtual functions"));
  EXPECT_EQ(read_file(numvfs()), "2\n") << "nothing written";
}

TEST_F(SysfsVirtualFunctionsTest, ACardWithoutSriovIsNotSupported) {
  auto error = set("0000:3d:00.0", 1);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->kind, Kind::NotSupported);
  EXPECT_THAT(error->message, HasSubstr("xpu1 (0000:3d:00.0) has no SR-IOV capability"));
}

TEST_F(SysfsVirtualFunctionsTest, AVirtualFunctionIsNotSupported) {
  auto error = set("0000:3b:00.1", 1);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->kind, Kind::NotSupported);
  EXPECT_THAT(error->message, HasSubstr("is a virtual function"));
}

TEST_F(SysfsVirtualFunctionsTest, ACardGoneSinceDiscoveryIsNoSuchDevice) {
  DeviceIdentity ghost = at_bus(devices, "0000:3d:00.0");
  ghost.pci_bus_id = "0000:99:00.0";
  auto error = backend->virtual_functions()->set_virtual_function_count(ghost, 1);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->kind, Kind::NoSuchDevice);
}

TEST_F(SysfsVirtualFunctionsTest, AnUnwritableFileIsAFailureNamingIt) {
  fs::remove(numvfs());
  fs::create_directory(numvfs());  // not a file: the kernel would never do this
  auto error = set("0000:3b:00.0", 1);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->kind, Kind::Failed);
  EXPECT_THAT(error->message, HasSubstr("sriov_numvfs"));
}

class XpumlVirtualFunctionsTest : public ::testing::Test {
 protected:
  std::unique_ptr<Backend> load(const fs::path& library) {
    auto made = make_xpuml_backend(library, host.sysfs_root());
    if (!made.ok()) ADD_FAILURE() << made.error();
    return made.ok() ? std::move(*made) : nullptr;
  }

  test::FakeXpumlHost host;
};

TEST_F(XpumlVirtualFunctionsTest, SetSriovVfNumAddsVirtualFunctionsToTheNextDiscovery) {
  host.write_scenario("devices 2\ndevice 0\nmax_vfs 4\n");
  auto backend = load(test::fake_xpuml_library());
  ASSERT_TRUE(backend);
  auto devices = discover(*backend);
  ASSERT_EQ(devices.size(), 2u);
  auto* control = backend->virtual_functions();
  ASSERT_NE(control, nullptr);

  EXPECT_DONE(control->set_virtual_function_count(devices[0], 2));
  devices = discover(*backend);
  ASSERT_EQ(devices.size(), 4u);
  EXPECT_FALSE(devices[0].is_virtual_function);
  EXPECT_FALSE(devices[1].is_virtual_function);
  EXPECT_TRUE(devices[2].is_virtual_function);
  EXPECT_TRUE(devices[3].is_virtual_function);
  EXPECT_EQ(devices[2].pci_bus_id, "0000:3b:00.1");
  EXPECT_EQ(devices[3].pci_bus_id, "0000:3b:00.2");

  auto too_many = control->set_virtual_function_count(devices[0], 5);
  ASSERT_TRUE(too_many);
  EXPECT_EQ(too_many->kind, Kind::InvalidArgument);
  EXPECT_THAT(too_many->message, HasSubstr("supports at most 4 virtual functions (maxVFCount)"));

  auto no_sriov = control->set_virtual_function_count(devices[1], 1);
  ASSERT_TRUE(no_sriov);
  EXPECT_EQ(no_sriov->kind, Kind::NotSupported);
  EXPECT_THAT(no_sriov->message, HasSubstr("xpu1 (0000:3c:00.0) has no SR-IOV capability"));

  auto on_vf = control->set_virtual_function_count(devices[2], 1);
  ASSERT_TRUE(on_vf);
  EXPECT_EQ(on_vf->kind, Kind::NotSupported);

  EXPECT_DONE(control->set_virtual_function_count(devices[0], 0));
  EXPECT_EQ(discover(*backend).size(), 2u);
}

TEST_F(XpumlVirtualFunctionsTest, ALibraryWithoutSetSriovVfNumWritesSysfs) {
  host.write_scenario("devices 1\ndevice 0\nmax_vfs 4\n");
  auto pf = xpu::fakes::kunlunxin_r_series("0000:3b:00.0", 1);
  pf.sriov_totalvfs = 4;
  host.tree().add_pci_function(pf);
  auto backend = load(test::fake_xpuml_old_library());
  ASSERT_TRUE(backend);
  auto devices = discover(*backend);
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_DONE(backend->virtual_functions()->set_virtual_function_count(devices[0], 3));
  EXPECT_EQ(read_file(host.tree().function_dir("0000:3b:00.0") / "sriov_numvfs"), "3\n");
  auto too_many = backend->virtual_functions()->set_virtual_function_count(devices[0], 9);
  ASSERT_TRUE(too_many);
  EXPECT_EQ(too_many->kind, Kind::InvalidArgument);
  EXPECT_THAT(too_many->message, HasSubstr("(sriov_totalvfs)"));
}

}  // namespace
}  // namespace xpud
