"""Memory as an operator's tools count it: a pod's from its cgroup (cgroup v1, the kubelet's
cgroupfs driver: kubepods/<qos>/pod<uid>), a host daemon's from /proc. The working set is what
the kubelet's eviction and `kubectl top` use (usage minus inactive file pages, from cAdvisor's
definition); the peak is the cgroup's max_usage_in_bytes since it was last reset."""

import os

MEMORY_ROOT = "/sys/fs/cgroup/memory/kubepods"
MIB = 1024 * 1024


def pod_cgroup(uid):
    for directory, subdirectories, _ in os.walk(MEMORY_ROOT):
        for name in subdirectories:
            if name == f"pod{uid}":
                return os.path.join(directory, name)
    raise RuntimeError(f"no memory cgroup for pod {uid} under {MEMORY_ROOT}")


def read_int(path):
    with open(path, encoding="ascii") as f:
        return int(f.read().strip())


def memory_stat(cgroup):
    with open(os.path.join(cgroup, "memory.stat"), encoding="ascii") as f:
        return {key: int(value) for key, value in (line.split() for line in f)}


def pod_memory(uid):
    """{'working_set': bytes, 'rss': bytes, 'peak': bytes} of a pod's cgroup."""
    cgroup = pod_cgroup(uid)
    usage = read_int(os.path.join(cgroup, "memory.usage_in_bytes"))
    stat = memory_stat(cgroup)
    return {"working_set": max(0, usage - stat.get("total_inactive_file", 0)),
            "rss": stat.get("total_rss", 0),
            "peak": read_int(os.path.join(cgroup, "memory.max_usage_in_bytes"))}


def reset_pod_peak(uid):
    with open(os.path.join(pod_cgroup(uid), "memory.max_usage_in_bytes"), "w", encoding="ascii") as f:
        f.write("0")


def process_memory(pid):
    """{'rss': bytes, 'peak': bytes} from /proc/PID/status (VmRSS, VmHWM)."""
    fields = {}
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                fields[key] = int(value.split()[0]) * 1024
    return {"rss": fields["VmRSS"], "peak": fields["VmHWM"]}
