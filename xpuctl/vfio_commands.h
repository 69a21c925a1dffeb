// xpuctl vfio list | bind TARGET | unbind TARGET: the Kunlunxin functions on vfio-pci for
// virtual machines, and root's moves of a card or virtual function there and back (xpud's Vfio
// interface). TARGET is a PCI address, or a card's index or name (xpu3), which xpud's device
// list turns into its address.
#pragma once

#include <string>
#include <vector>

#include "common/xpud_types.h"

namespace xpuctl {

// `rest` is the command line from "vfio" on; returns the exit status. Usage errors exit.
int run_vfio_command(const xpu::ClientOptions& options, const std::vector<std::string>& rest,
                     bool json_output);

}  // namespace xpuctl
