// Which pod and container a card's process belongs to, from the cgroup shapes the kubelet and the
// runtimes really produce.
#include "xpud/sampling/process_owner.h"

#include <gtest/gtest.h>

#include <ostream>

#include "tests/support/child_process.h"

namespace xpud {

// What a failure prints of an owner (found by gtest through ADL).
void PrintTo(const ProcessOwner& owner, std::ostream* out) {
  *out << "{pod " << owner.pod_uid << ", container " << owner.container_id << "}";
}

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

// What anyone with a cgroup of their own can name: a local user's systemd scopes (user@.service
// delegates a subtree to the user), a cgroup made inside a container. Only a path from the
// kubelet's root names a pod, and the pod's cgroup sits where the kubelet puts it.
TEST(ProcessOwner, ACgroupNamedLikeAPodsOutsideTheKubeletsRootNamesNoPod) {
  const std::string pod_slice =
      "kubepods-burstable-pod6f2b1c3a_1111_4222_8333_444455556666.slice/cri-containerd-" + kId +
      ".scope";
  for (const std::string& path : {
           // systemd-run --user --slice=... under the user's own manager
           "/user.slice/user-1000.slice/user@1000.service/app.slice/" + pod_slice,
           "/user.slice/user-1000.slice/user@1000.service/kubepods.slice/"
           "kubepods-burstable.slice/" +
               pod_slice,
           "/user.slice/user-1000.slice/session-3.scope/kubepods/pod" + std::string(kUid) + "/" +
               kId,
           // roots that only look like the kubelet's
           "/mykubepods/pod" + std::string(kUid) + "/" + kId,
           "/kubepods-evil/pod" + std::string(kUid) + "/" + kId,
           "/kubepods.slice.d/" + pod_slice,
           "/kubepods.slice/" + pod_slice.substr(std::string("kubepods-burstable-").size()),
           "kubepods/pod" + std::string(kUid) + "/" + kId,  // not absolute
           // a QoS class the kubelet does not make, or one its pod's name disagrees with
           "/kubepods/guaranteed/pod" + std::string(kUid) + "/" + kId,
           "/kubepods.slice/kubepods-besteffort.slice/" + pod_slice,
           // each driver spells the UID its own way
           "/kubepods/pod6f2b1c3a_1111_4222_8333_444455556666/" + kId,
           "/kubepods.slice/kubepods-pod" + std::string(kUid) + ".slice/cri-containerd-" + kId +
               ".scope",
       }) {
    EXPECT_EQ(owner_from_cgroup_file("0::" + path + "\n"), ProcessOwner{}) << path;
    EXPECT_EQ(owner_from_cgroup_file("4:memory:" + path + "\n1:name=systemd:" + path + "\n"),
              ProcessOwner{})
        << path;
  }
}

TEST(ProcessOwner, APodCgroupMadeInsideAContainerIsTheContainersOwn) {
  // A privileged container with its cgroups writable makes "pod<victim>/<id>" below its own.
  const std::string victim = "99999999-1111-4222-8333-444455556666";
  const std::string fake(64, 'f');
  EXPECT_EQ(owner_from_cgroup_file("0::/kubepods/besteffort/pod" + std::string(kUid) + "/" + kId +
                                   "/pod" + victim + "/" + fake + "\n"),
            (ProcessOwner{kUid, kId}));
  EXPECT_EQ(
      owner_from_cgroup_file(
          "0::/kubepods.slice/kubepods-besteffort.slice/"
          "kubepods-besteffort-pod6f2b1c3a_1111_4222_8333_444455556666.slice/cri-containerd-" +
          kId + ".scope/kubepods-besteffort-pod99999999_1111_4222_8333_444455556666.slice/" +
          "cri-containerd-" + fake + ".scope\n"),
      (ProcessOwner{kUid, kId}));
}

TEST(ProcessOwner, UnderCgroupV1TheLineFromTheKubeletsRootServes) {
  // A hierarchy where the process sits elsewhere (these machines' memory controller; a named
  // hierarchy a tool moved it in) does not hide the pod, nor does it name another one.
  const std::string own = "/kubepods/besteffort/pod" + std::string(kUid) + "/" + kId;
  EXPECT_EQ(owner_from_cgroup_file("12:pids:/user.slice/kubepods/pod99999999-1111-4222-8333-"
                                   "444455556666/" +
                                   std::string(64, 'f') + "\n11:memory:/process_api/62b7ef70\n" +
                                   "3:cpu,cpuacct:" + own + "\n0::/\n"),
            (ProcessOwner{kUid, kId}));
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
