// Which processes have a card's device node open, from procfs: the guard before a reset. The
// driver's process list (xpumlDeviceGetComputeRunningProcesses) names the processes that run
// work on a card; a process that has only opened the node (a tool, a container whose work has
// not started) is not on it, and a reset under it would pull the card from under an open file.
//
// Each /proc/<pid>/fd/<n> is compared with the node by what stat() finds through it (the kernel
// resolves the link to the open file itself, whatever the process's mount namespace calls it):
// a character device by its device number, so the node a container runtime made in a
// container's own /dev counts too; any other file (a fake tree's stand-in) by its inode.
//
// procfs is input like any other: processes end and close files while they are read. A pid
// directory or fd that vanishes is counted and skipped; an fd directory that cannot be read
// (another user's process, for an xpud that is not root) is counted, and the caller decides
// what a scan with blind spots is worth (CardRecovery refuses the reset).
#pragma once

#include <filesystem>
#include <vector>

namespace xpud {

struct DeviceNodeUsers {
  std::vector<unsigned> pids;  // processes with one of the nodes open, ascending
  unsigned vanished = 0;       // pids or fds that were gone by the time they were read
  unsigned unreadable = 0;     // processes whose open files could not be listed
  unsigned nodes_found = 0;    // how many of the nodes exist (0: nothing could be compared)
};

// Scans <proc_root>/<pid>/fd/* for `nodes` (paths as they exist on this host, under the
// [sysfs] root), leaving out `own_pid`: xpud, which the vendor's library has open every card.
// A node that is the same file as `stand_in` (the sim backend's /dev/null, which the real-node
// suite's stand-in nodes are too: backend_factory.h) stands for no card and is not compared:
// every process has /dev/null open.
DeviceNodeUsers find_device_node_users(const std::filesystem::path& proc_root,
                                       const std::vector<std::filesystem::path>& nodes,
                                       unsigned own_pid,
                                       const std::filesystem::path& stand_in = {});

}  // namespace xpud
