// Moving Kunlunxin functions to vfio-pci and back over a fake sysfs tree whose writes the
// kernel's stand-in answers as drivers/base/bus.c and drivers/pci/pci-sysfs.c do: what an
// operator sees when it works, when the host cannot, and that a failure never leaves a function
// half-moved.
#include "xpud/backends/vfio/vfio_binding.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/fakes/sysfs/fake_pci_kernel.h"
#include "tests/fakes/sysfs/fake_sysfs_tree.h"
#include "xpud/backends/vfio/vfio_functions.h"

namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using xpu::fakes::FakePciKernel;
using xpu::fakes::FakeSysfsTree;
using xpud::DriverChangeError;
using xpud::vfio::bind_to_vfio;
using xpud::vfio::return_to_host_driver;
using Kind = DriverChangeError::Kind;

constexpr const char* kCard = "0000:3b:00.0";

class VfioBindingTest : public ::testing::Test {
 protected:
  VfioBindingTest() {
    tree_.add_card(xpu::fakes::kunlunxin_r_series(kCard, 1, 0), 0);
    tree_.add_to_iommu_group(kCard, 12);
    kernel_.load_driver("kunlun", {0x3684, 0x3685, 0x3688});
    kernel_.load_driver("vfio-pci");
  }

  std::string driver(const std::string& bus_id) const {
    std::error_code ec;
    auto target = std::filesystem::read_symlink(tree_.function_dir(bus_id) / "driver", ec);
    return ec ? "" : target.filename().string();
  }

  FakeSysfsTree tree_;
  FakePciKernel kernel_{tree_};
};

TEST_F(VfioBindingTest, BindsThroughDriverOverrideAndBack) {
  EXPECT_EQ(bind_to_vfio(tree_.root(), kCard, kernel_), std::nullopt);
  EXPECT_EQ(driver(kCard), "vfio-pci");
  // The kernel's order: override first (nothing else may take it once unbound), unbind, probe.
  EXPECT_THAT(kernel_.writes(),
              ElementsAre("sys/bus/pci/devices/0000:3b:00.0/driver_override=vfio-pci",
                          "sys/bus/pci/drivers/kunlun/unbind=0000:3b:00.0",
                          "sys/bus/pci/drivers_probe=0000:3b:00.0"));
  auto listed = xpud::vfio::scan_vfio_functions(tree_.root());
  ASSERT_TRUE(listed.ok()) << listed.error();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].pci_bus_id, kCard);
  EXPECT_EQ((*listed)[0].pci_id, "1d22:3684");
  EXPECT_EQ((*listed)[0].iommu_group, "12");
  EXPECT_EQ((*listed)[0].model, "R200");
  EXPECT_EQ((*listed)[0].numa_node, 0);
  EXPECT_EQ(xpud::vfio::group_node((*listed)[0]), "/dev/vfio/12");

  EXPECT_EQ(return_to_host_driver(tree_.root(), kCard, kernel_), std::nullopt);
  EXPECT_EQ(driver(kCard), "kunlun");
  EXPECT_EQ(kernel_.driver_override(kCard), "");  // cleared: kunlun's id table decides again
  auto after = xpud::vfio::scan_vfio_functions(tree_.root());
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE(after->empty());
}

TEST_F(VfioBindingTest, AFunctionAlreadyThereIsLeftAlone) {
  ASSERT_EQ(bind_to_vfio(tree_.root(), "0000:3B:00.0", kernel_), std::nullopt);
  const auto writes = kernel_.writes().size();
  EXPECT_EQ(bind_to_vfio(tree_.root(), kCard, kernel_), std::nullopt);
  EXPECT_EQ(kernel_.writes().size(), writes);
  ASSERT_EQ(return_to_host_driver(tree_.root(), kCard, kernel_), std::nullopt);
  EXPECT_EQ(return_to_host_driver(tree_.root(), kCard, kernel_), std::nullopt);
}

TEST_F(VfioBindingTest, RefusesWhatIsNotAKunlunxinFunction) {
  tree_.add_pci_function(xpu::fakes::other_pci_function("0000:5e:00.0", 0x15b3, 0x1017));
  auto nic = bind_to_vfio(tree_.root(), "0000:5e:00.0", kernel_);
  ASSERT_TRUE(nic);
  EXPECT_EQ(nic->kind, Kind::InvalidArgument);
  EXPECT_THAT(nic->message, HasSubstr("not a Kunlunxin function"));
  auto absent = bind_to_vfio(tree_.root(), "0000:99:00.0", kernel_);
  ASSERT_TRUE(absent);
  EXPECT_EQ(absent->kind, Kind::NoSuchDevice);
  // An argument that could climb out of the devices directory is not an address at all.
  auto garbage = bind_to_vfio(tree_.root(), "../../../../etc", kernel_);
  ASSERT_TRUE(garbage);
  EXPECT_EQ(garbage->kind, Kind::InvalidArgument);
  EXPECT_TRUE(kernel_.writes().empty());
}

TEST_F(VfioBindingTest, WithoutAnIommuGroupNothingIsWritten) {
  tree_.add_card(xpu::fakes::kunlunxin_r_series("0000:3c:00.0", 1), 1);
  auto refusal = bind_to_vfio(tree_.root(), "0000:3c:00.0", kernel_);
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->kind, Kind::NotSupported);
  EXPECT_THAT(refusal->message, HasSubstr("no IOMMU group"));
  EXPECT_THAT(refusal->message, HasSubstr("intel_iommu=on"));
  EXPECT_TRUE(kernel_.writes().empty());
  EXPECT_EQ(driver("0000:3c:00.0"), "kunlun");
}

TEST_F(VfioBindingTest, WithoutVfioPciLoadedNothingIsWritten) {
  kernel_.unload_driver("vfio-pci");
  auto refusal = bind_to_vfio(tree_.root(), kCard, kernel_);
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->kind, Kind::NotSupported);
  EXPECT_THAT(refusal->message, HasSubstr("modprobe vfio-pci"));
  EXPECT_TRUE(kernel_.writes().empty());
  EXPECT_EQ(driver(kCard), "kunlun");
}

TEST_F(VfioBindingTest, AGroupSharedWithAnotherDriversFunctionIsRefused) {
  tree_.add_pci_function(xpu::fakes::other_pci_function("0000:3b:00.1", 0x8086, 0x1572));
  tree_.bind_driver("0000:3b:00.1", "i40e");
  tree_.add_to_iommu_group("0000:3b:00.1", 12);
  auto refusal = bind_to_vfio(tree_.root(), kCard, kernel_);
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->kind, Kind::NotSupported);
  EXPECT_THAT(refusal->message,
              HasSubstr("shares IOMMU group 12 with 0000:3b:00.1 (bound to i40e)"));
  EXPECT_TRUE(kernel_.writes().empty());

  // Members on drivers that leave DMA to VFIO, or on none, do not stand in the way.
  tree_.bind_driver("0000:3b:00.1", "pci-stub");
  EXPECT_EQ(bind_to_vfio(tree_.root(), kCard, kernel_), std::nullopt);
}

TEST_F(VfioBindingTest, APhysicalFunctionWithItsVirtualFunctionsOnIsRefused) {
  auto pf = xpu::fakes::kunlunxin_r_series("0000:4b:00.0", 1);
  pf.sriov_totalvfs = 3;
  pf.sriov_numvfs = 2;
  tree_.add_card(pf, 1);
  tree_.add_to_iommu_group("0000:4b:00.0", 20);
  auto refusal = bind_to_vfio(tree_.root(), "0000:4b:00.0", kernel_);
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->kind, Kind::NotSupported);
  EXPECT_THAT(refusal->message, HasSubstr("2 SR-IOV virtual functions on"));
  EXPECT_TRUE(kernel_.writes().empty());
}

TEST_F(VfioBindingTest, AVirtualFunctionGoesAlone) {
  tree_.add_card(xpu::fakes::kunlunxin_vf("0000:3b:00.1", kCard), 1);
  tree_.add_to_iommu_group("0000:3b:00.1", 13);
  EXPECT_EQ(bind_to_vfio(tree_.root(), "0000:3b:00.1", kernel_), std::nullopt);
  EXPECT_EQ(driver("0000:3b:00.1"), "vfio-pci");
  EXPECT_EQ(driver(kCard), "kunlun");
  auto listed = xpud::vfio::scan_vfio_functions(tree_.root());
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_TRUE((*listed)[0].is_virtual_function);
  EXPECT_EQ((*listed)[0].physical_function, kCard);
  EXPECT_EQ((*listed)[0].pci_id, "1d22:3685");
}

TEST_F(VfioBindingTest, AProbeVfioPciRefusesIsRolledBackToKunlun) {
  kernel_.fail_probe("vfio-pci");
  auto failure = bind_to_vfio(tree_.root(), kCard, kernel_);
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->kind, Kind::Failed);
  EXPECT_THAT(failure->message, HasSubstr("vfio-pci did not take it"));
  EXPECT_THAT(failure->message, HasSubstr("rolled back: it is on kunlun again"));
  EXPECT_EQ(driver(kCard), "kunlun");
  EXPECT_EQ(kernel_.driver_override(kCard), "");
}

TEST_F(VfioBindingTest, ARollBackThatFailsSaysWhereTheFunctionIs) {
  kernel_.fail_probe("vfio-pci");
  kernel_.fail_probe("kunlun");
  auto failure = bind_to_vfio(tree_.root(), kCard, kernel_);
  ASSERT_TRUE(failure);
  EXPECT_THAT(failure->message, HasSubstr("kunlun did not take it again: it is left on no driver"));
  EXPECT_EQ(driver(kCard), "");
}

TEST_F(VfioBindingTest, AGroupAVmHoldsIsNotTakenFromIt) {
  ASSERT_EQ(bind_to_vfio(tree_.root(), kCard, kernel_), std::nullopt);
  kernel_.hold_group(12);
  const auto writes = kernel_.writes().size();
  auto refusal = return_to_host_driver(tree_.root(), kCard, kernel_);
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->kind, Kind::InUse);
  EXPECT_THAT(refusal->message, HasSubstr("IOMMU group 12 is open (/dev/vfio/12): a VM holds it"));
  EXPECT_EQ(kernel_.writes().size(), writes);
  EXPECT_EQ(driver(kCard), "vfio-pci");
}

TEST_F(VfioBindingTest, ReturningWithoutKunlunLoadedIsRefused) {
  ASSERT_EQ(bind_to_vfio(tree_.root(), kCard, kernel_), std::nullopt);
  kernel_.unload_driver("kunlun");
  auto refusal = return_to_host_driver(tree_.root(), kCard, kernel_);
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->kind, Kind::NotSupported);
  EXPECT_THAT(refusal->message, HasSubstr("kunlun driver is not loaded"));
  EXPECT_EQ(driver(kCard), "vfio-pci");
}

TEST_F(VfioBindingTest, AReturnKunlunRefusesGoesBackToVfioPci) {
  ASSERT_EQ(bind_to_vfio(tree_.root(), kCard, kernel_), std::nullopt);
  kernel_.fail_probe("kunlun");
  auto failure = return_to_host_driver(tree_.root(), kCard, kernel_);
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->kind, Kind::Failed);
  EXPECT_THAT(failure->message, HasSubstr("kunlun did not take it"));
  EXPECT_THAT(failure->message, HasSubstr("rolled back: it is on vfio-pci again"));
  EXPECT_EQ(driver(kCard), "vfio-pci");
  EXPECT_EQ(kernel_.driver_override(kCard), "vfio-pci");
}

TEST_F(VfioBindingTest, AFunctionOnAnotherDriverIsNotReturned) {
  tree_.bind_driver(kCard, "pci-stub");
  auto refusal = return_to_host_driver(tree_.root(), kCard, kernel_);
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->kind, Kind::InvalidArgument);
  EXPECT_THAT(refusal->message, HasSubstr("bound to pci-stub, not vfio-pci"));
  EXPECT_TRUE(kernel_.writes().empty());
}

// The stand-in itself, where the binder's correctness leans on it: the kernel's answers.
TEST(FakePciKernelTest, AnswersAsTheKernelDoes) {
  FakeSysfsTree tree;
  tree.add_card(xpu::fakes::kunlunxin_r_series(kCard, 1), 0);
  FakePciKernel kernel(tree);
  kernel.load_driver("kunlun", {0x3684});
  const auto root = tree.root();
  // unbind_store: ENODEV for an address the driver does not hold.
  EXPECT_EQ(kernel.write(root / "sys/bus/pci/drivers/kunlun/unbind", "0000:3b:00.1\n"), ENODEV);
  // driver_override_store drops one newline; show prints "(null)" when unset.
  EXPECT_EQ(kernel.write(root / "sys/bus/pci/devices" / kCard / "driver_override", "none\n"), 0);
  EXPECT_EQ(kernel.driver_override(kCard), "none");
  // bind_store: EBUSY for a bound device.
  EXPECT_EQ(kernel.write(root / "sys/bus/pci/drivers/kunlun/bind", std::string(kCard)), ENODEV)
      << "driver_override 'none' keeps kunlun from matching";
  EXPECT_EQ(kernel.write(root / "sys/bus/pci/devices" / kCard / "driver_override", "\n"), 0);
  EXPECT_EQ(kernel.write(root / "sys/bus/pci/drivers/kunlun/bind", std::string(kCard)), EBUSY);
  // drivers_probe_store honours the override; succeeds with no driver found.
  EXPECT_EQ(kernel.write(root / "sys/bus/pci/drivers/kunlun/unbind", std::string(kCard)), 0);
  EXPECT_EQ(kernel.write(root / "sys/bus/pci/devices" / kCard / "driver_override", "vfio-pci"), 0);
  EXPECT_EQ(kernel.write(root / "sys/bus/pci/drivers_probe", std::string(kCard)), 0);
  std::error_code ec;
  EXPECT_FALSE(std::filesystem::exists(tree.function_dir(kCard) / "driver", ec));
  EXPECT_EQ(kernel.write(root / "sys/bus/pci/drivers_probe", "0000:99:00.0"), ENODEV);
}

}  // namespace
