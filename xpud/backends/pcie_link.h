// A card's PCIe link and its AER error counters, as the kernel shows them for every PCI Express
// function, whatever its driver (so both hardware backends read them the same way):
//
//  - current_link_speed, max_link_speed: pci_speed_string() of the link status / capability,
//    "16.0 GT/s PCIe" since Linux 5.7 ("16 GT/s" before), "Unknown" when the register gives no
//    speed (drivers/pci/pci-sysfs.c, drivers/pci/probe.c; Documentation/ABI/testing/
//    sysfs-bus-pci). A virtual function's link registers are reserved (PCIe SR-IOV: the PF's
//    link is the VF's), so it reads "Unknown".
//  - current_link_width, max_link_width: the negotiated / maximum lane count, "%u\n"; 0 when the
//    register gives none (a VF, a link that is down).
//  - aer_dev_correctable, aer_dev_nonfatal, aer_dev_fatal: one "NAME COUNT" line per error type
//    and a last "TOTAL_ERR_COR|TOTAL_ERR_NONFATAL|TOTAL_ERR_FATAL COUNT" line: the error messages
//    the function sent since its pci_dev was made, i.e. since boot or its last re-enumeration
//    (drivers/pci/pcie/aer.c, aer_stats_dev_attr; Documentation/ABI/testing/
//    sysfs-bus-pci-devices-aer_stats). They exist only when the kernel has CONFIG_PCIEAER and the
//    function has the AER capability.
//
// The files come from outside the daemon: a missing file, "Unknown" or garbage leaves that field
// unknown (garbage with a debug line naming the file), never a crash and never a made-up value.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string_view>

#include "xpud/device.h"

namespace xpud::sysfs {

// The fastest link a parser accepts, in GT/s: far above PCIe 7.0's 128, below any garbage
// that happens to parse.
inline constexpr std::uint64_t kMaxLinkGigatransfers = 1024;
// The widest link the PCIe specification defines (x32).
inline constexpr unsigned kMaxLinkWidth = 32;

// "16.0 GT/s PCIe\n" or "16 GT/s\n" -> 16000000000 (transfers per second); "Unknown" and the
// older "Unknown speed" -> 0 (the kernel does not know); nullopt for anything else.
std::optional<std::uint64_t> parse_link_speed(std::string_view text);
// "16\n" -> 16 lanes; 0 when the kernel has no width; nullopt above kMaxLinkWidth or for garbage.
std::optional<unsigned> parse_link_width(std::string_view text);
// The count on the file's TOTAL_<total_name> line ("ERR_FATAL" for aer_dev_fatal), when every
// line is "NAME COUNT" with a decimal count that fits 64 bits and that total appears exactly
// once; nullopt otherwise.
std::optional<std::uint64_t> parse_aer_total(std::string_view text, std::string_view total_name);

// Everything above for the function whose sysfs directory is `function_dir`
// (<root>/sys/bus/pci/devices/<bus id>); fields it cannot tell stay nullopt.
PcieLinkState read_pcie_link_state(const std::filesystem::path& function_dir);

}  // namespace xpud::sysfs
