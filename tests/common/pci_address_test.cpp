// The PCI names of Kubernetes' standard attributes, checked as its deviceattribute package checks
// them (verifyPCIBDFFormat's pattern), and the kernel's name of a root bus.
#include "common/pci_address.h"

#include <gtest/gtest.h>

namespace {

using xpu::pci_address::is_extended_bdf;
using xpu::pci_address::is_pcie_root;

TEST(PciAddress, ExtendedBdfAsKubernetesVerifiesIt) {
  for (std::string_view good : {"0000:3b:00.0", "0000:02:00.0", "af12:af:1f.7", "ffff:ff:ff.f"})
    EXPECT_TRUE(is_extended_bdf(good)) << good;
  // The package's pattern takes any two hex digits for the device and one for the function.
  EXPECT_TRUE(is_extended_bdf("0000:00:ff.f"));
  for (std::string_view bad : std::initializer_list<std::string_view>{
           "", "invalid-pci-id", "0000:3B:00.0", "3b:00.0", "00000:3b:00.0", "000:3b:00.0",
           "0000:3b:00.00", "0000:3b:0.0", "0000-3b-00.0", "0000:3b:00:0", "0000:3b:00.0\n",
           " 0000:3b:00.0", "0000:3g:00.0", std::string_view("0000:3b:00.\0", 12)})
    EXPECT_FALSE(is_extended_bdf(bad)) << bad;
}

TEST(PciAddress, PcieRootAsTheKernelNamesARootBus) {
  for (std::string_view good : {"pci0000:00", "pci0000:80", "pciaf12:a0"})
    EXPECT_TRUE(is_pcie_root(good)) << good;
  for (std::string_view bad : {"", "pci", "pci0000:0", "pci0000:000", "pci10000:00", "PCI0000:00",
                               "pci0000:0A", "pcix000:00", "pci0000-00", "0000:00", "pci0000:00/"})
    EXPECT_FALSE(is_pcie_root(bad)) << bad;
}

}  // namespace
