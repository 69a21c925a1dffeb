// Which pod and container a card's process belongs to, from the cgroup shapes the kubelet and the
// runtimes really produce.
#include "xpud/process_owner.h"

#include <gtest/gtest.h>

#include "tests/support/child_process.h"

namespace xpud {
namespace {

constexpr const char* kUid = "6f2b1c3a-1111-4222-8333-444455556666";
const std::string kId(64, 'a');

TEST(ProcessOwner, SystemdDriverWithContainerd) {
  auto owner = owner_from_cgroup_file(
      "0::/kubepods.slice/kubepods-burstable.slice/"
      "kubepods-burstable-pod6f2b1c3a_1111_4222_8333_444455556666.slice/cri-containerd-" +
      kId + ".scope\n");
  EXPECT_EQ(owner, (ProcessOwner{kUid, kId}));
}

TEST(ProcessOwner, SystemdDriverGuaranteedPodWithCrio) {
  auto owner = owner_from_cgroup_file(
      "0::/kubepods.slice/kubepods-pod6f2b1c3a_1111_4222_8333_444455556666.slice/crio-" + kId +
      ".scope");
  EXPECT_EQ(owner, (ProcessOwner{kUid, kId}));
}

TEST(ProcessOwner, CgroupfsDriverUnderCgroupV1) {
  // v1 lists every hierarchy; the kubepods path is the same in each.
  auto owner = owner_from_cgroup_file(
      "12:pids:/kubepods/besteffort/pod6f2b1c3a-1111-4222-8333-444455556666/" + kId +
      "\n11:memory:/kubepods/besteffort/pod6f2b1c3a-1111-4222-8333-444455556666/" + kId +
      "\n1:name=systemd:/kubepods/besteffort/pod6f2b1c3a-1111-4222-8333-444455556666/" + kId +
      "\n");
  EXPECT_EQ(owner, (ProcessOwner{kUid, kId}));
}

TEST(ProcessOwner, ProcessInASubCgroupOfItsContainerStillBelongsToIt) {
  auto owner =
      owner_from_cgroup_file("0::/kubepods/pod" + std::string(kUid) + "/" + kId + "/worker\n");
  EXPECT_EQ(owner, (ProcessOwner{kUid, kId}));
}

TEST(ProcessOwner, PodLevelProcessHasAPodButNoContainer) {
  auto owner = owner_from_cgroup_file(
      "0::/kubepods.slice/kubepods-besteffort.slice/"
      "kubepods-besteffort-pod6f2b1c3a_1111_4222_8333_444455556666.slice/crio-conmon-" +
      kId + ".scope\n");
  EXPECT_EQ(owner, (ProcessOwner{kUid, ""}));
}

TEST(ProcessOwner, HostProcessesAndGarbageHaveNoOwner) {
  EXPECT_EQ(owner_from_cgroup_file("0::/system.slice/xpud.service\n"), ProcessOwner{});
  EXPECT_EQ(owner_from_cgroup_file("0::/user.slice/user-1000.slice/session-3.scope\n"),
            ProcessOwner{});
  // A docker container outside Kubernetes names no pod.
  EXPECT_EQ(owner_from_cgroup_file("0::/system.slice/docker-" + kId + ".scope\n"), ProcessOwner{});
  EXPECT_EQ(owner_from_cgroup_file(""), ProcessOwner{});
  EXPECT_EQ(owner_from_cgroup_file("no colons at all\n::\n0:"), ProcessOwner{});
  EXPECT_EQ(owner_from_cgroup_file("0::/kubepods/pod../../etc/" + kId), ProcessOwner{});
  EXPECT_EQ(owner_from_cgroup_file("0::/kubepods/podNOTHEX/" + kId), ProcessOwner{});
  EXPECT_EQ(owner_from_cgroup_file("0::/kubepods/pod" + std::string(200, 'a') + "/" + kId),
            ProcessOwner{});
  // A container ID that is not one is left out, the pod is kept.
  EXPECT_EQ(owner_from_cgroup_file("0::/kubepods/pod" + std::string(kUid) + "/x\"y"),
            (ProcessOwner{kUid, ""}));
}

TEST(ProcessOwner, ReadsTheProcFileAndToleratesAGoneProcess) {
  xpu::test::TempDir proc;
  xpu::test::write_file(proc.path() / "4242" / "cgroup",
                        "0::/kubepods/pod" + std::string(kUid) + "/" + kId + "\n");
  EXPECT_EQ(read_process_owner(proc.path(), 4242), (ProcessOwner{kUid, kId}));
  EXPECT_EQ(read_process_owner(proc.path(), 4243), ProcessOwner{});
}

}  // namespace
}  // namespace xpud
