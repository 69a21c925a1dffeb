"""A real single-node Kubernetes cluster, run inside the suite's own mount, network and PID
namespaces (see cluster_test.py for who makes them and who cleans up the rest of the host).

Everything here is the real program: etcd (etcd/), kube-apiserver, kube-controller-manager,
kube-scheduler and kubelet (kube/), containerd 2 and its runc shim, all built from the Go module
proxy by build-node.sh; runc and the CNI plugins from Debian. The node's network is a
macvlan network on a bridge with no uplink, inside the suite's network namespace: nothing can
leave the machine. Instead of kube-proxy, one DNAT rule leads the `kubernetes` Service to the API
server.
The host side is xpud on the sim backend, on a system-type bus with the package's policy file at
/run/dbus/system_bus_socket (the namespace's own /run), and xpud-api-proxy serving
/run/xpud-api/bus.sock and the SR-IOV socket /run/xpud-api-sriov/bus.sock as on an installed host.
"""

import json
import os
import shutil
import signal
import sys
import time

from pki import Pki
from processes import Program, run, wait_for

NODE_NAME = "xpu-node"
NODE_IP = "10.244.0.1"
SERVICE_RANGE = "10.96.0.0/16"
SERVICE_IP = "10.96.0.1"
POD_SUBNET = "10.244.0.0/24"
POD_RANGE_START = "10.244.0.10"
BRIDGE = "xpu-br0"
PAUSE_IMAGE = "localhost/xpu-cluster-test/pause:1"
CDI_DIR = "/var/run/cdi"
PRIVILEGED_POLICY = "xpu-suite-no-privileged-containers"
# A pod only Node.refuse_privileged_pods sends, as a server-side dry run.
PRIVILEGED_PROBE = {
    "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "privileged-probe", "namespace": "default"},
    "spec": {"automountServiceAccountToken": False,
             "containers": [{"name": "probe", "image": PAUSE_IMAGE, "securityContext": {"privileged": True}}]}}

# Directories the node writes, each a bind mount of a fresh directory under the run directory, so
# that nothing of the node lands on the host (their mount points are made and removed by the
# outer process).
# /var/lib/containers: where skopeo (the registry scenario's push) keeps its blob cache.
NODE_DIRECTORIES = ["/var/lib/kubelet", "/var/lib/containerd", "/etc/cni/net.d", "/var/log/pods",
                    "/var/log/containers", "/xpu-runtime", "/etc/cdi", "/var/lib/containers"]

# xpud-api-proxy's two sockets as its socket units declare them: (FileDescriptorName=, path,
# SocketMode=, DirectoryMode=). The read-only one is everyone's; the SR-IOV one, the only one that
# carries ConfigureVirtualFunctions, root's alone.
API_PROXY_SOCKETS = [("api", "/run/xpud-api/bus.sock", 0o666, 0o755),
                     ("sriov", "/run/xpud-api-sriov/bus.sock", 0o600, 0o700)]

# What systemd does for xpud-api-proxy.service: it binds the sockets as root (so the SR-IOV one,
# in root's 0700 directory, is root's), then runs the proxy as its unprivileged user with them as
# descriptors 3, 4, ... and their names in LISTEN_FDNAMES (sd_listen_fds_with_names). The proxy,
# as nobody, could not bind in that directory itself. Arguments: uid gid program NAME=PATH=MODE...
SOCKET_ACTIVATION = r"""
import fcntl, os, socket, sys
uid, gid, program = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
specs = [arg.split("=") for arg in sys.argv[4:]]
held = []
for name, path, mode in specs:
    if os.path.lexists(path):
        os.unlink(path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    os.chmod(path, int(mode, 8))
    listener.listen(128)
    held.append(fcntl.fcntl(listener.fileno(), fcntl.F_DUPFD, 100))
    listener.close()
for number, fd in enumerate(held, 3):
    os.dup2(fd, number)  # inheritable, as systemd passes them
    os.close(fd)
os.environ.update(LISTEN_PID=str(os.getpid()), LISTEN_FDS=str(len(specs)),
                  LISTEN_FDNAMES=":".join(name for name, _, _ in specs))
os.setgroups([])
os.setgid(gid)
os.setuid(uid)
os.execv(program, [program])
"""


class Node:
    def __init__(self, source_dir, build_dir, programs_dir, run_dir):
        self.source_dir = source_dir
        self.build_dir = build_dir
        self.programs = programs_dir
        self.run_dir = run_dir
        self.log_dir = os.path.join(run_dir, "logs")
        os.makedirs(self.log_dir, exist_ok=True)
        self.kubeconfig = None
        self.components = {}

    # ---- the namespace's file system and network -----------------------------------------

    def prepare_namespace(self):
        # Mounts made from here on (the kubelet's, the runtime's) propagate among themselves
        # inside this namespace only: it was made private from the host's.
        run(["mount", "--make-rshared", "/"])
        run(["mount", "-t", "tmpfs", "-o", "mode=0755", "tmpfs", "/run"])
        for path in NODE_DIRECTORIES:
            backing = os.path.join(self.run_dir, "fs", path.strip("/").replace("/", "_"))
            os.makedirs(backing, exist_ok=True)
            os.chmod(backing, 0o755)  # as on a node, whatever this process's umask
            run(["mount", "--bind", backing, path])
        self.make_run_directories()
        run(["ip", "link", "set", "lo", "up"])
        # The kernels of these machines have no veth (nor dummy), so the pods' network is
        # macvlan: an interface per pod on a bridge that has no uplink, and one more for the
        # node itself (a macvlan cannot talk to its parent, only to its siblings). Nothing on
        # the bridge can leave the machine, and pods get no route beyond the subnet.
        run(["ip", "link", "add", BRIDGE, "type", "bridge"])
        run(["ip", "link", "set", BRIDGE, "up"])
        run(["ip", "link", "add", "xpu-node0", "link", BRIDGE, "type", "macvlan", "mode", "bridge"])
        run(["ip", "addr", "add", f"{NODE_IP}/24", "dev", "xpu-node0"])
        run(["ip", "link", "set", "xpu-node0", "up"])
        # Go's address selection wants a default route; it leads onto the bridge only.
        run(["ip", "route", "add", "default", "dev", "xpu-node0"])
        # What kube-proxy would do for the one Service pods use: the API server's `kubernetes`
        # Service (KUBERNETES_SERVICE_HOST in every pod, where in-cluster clients such as the
        # DRA driver connect) leads to the API server on this node. Pods route the Service range
        # to the node (the CNI config below).
        run(["iptables", "-t", "nat", "-A", "PREROUTING", "-d", f"{SERVICE_IP}/32", "-p", "tcp",
             "--dport", "443", "-j", "DNAT", "--to-destination", f"{NODE_IP}:6443"])
        with open("/etc/cni/net.d/10-xpu-test.conflist", "w", encoding="utf-8") as f:
            json.dump({
                "cniVersion": "1.0.0", "name": "xpu-test",
                "plugins": [
                    {"type": "macvlan", "master": BRIDGE, "mode": "bridge",
                     "ipam": {"type": "host-local", "routes": [{"dst": SERVICE_RANGE, "gw": NODE_IP}],
                              "ranges": [[{"subnet": POD_SUBNET, "rangeStart": POD_RANGE_START}]]}},
                ],
            }, f)

    def make_run_directories(self):
        """What a booting host finds or makes in its empty /run (a tmpfs; /var/run is a link to
        it, so CDI_DIR is on it too, as on the hosts the field's DRA drivers lose claims on)."""
        for path in ["/run/dbus", "/run/containerd", CDI_DIR]:
            os.makedirs(path, exist_ok=True)
        # As systemd makes them for the proxy's socket units: root's, with their DirectoryMode=.
        for _, path, _, directory_mode in API_PROXY_SOCKETS:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            os.chmod(os.path.dirname(path), directory_mode)

    # ---- a reboot ---------------------------------------------------------------------------

    def power_off(self):
        """What a reboot takes from the node, the control plane (other machines) left running:
        the services stopped as systemd stops them (SIGTERM; the kubelet first, and with no
        graceful node shutdown configured it stops no pod), then every process left (the
        runtime's shims, every container, the shim's pods among them) killed, every mount the
        node made under /run and in the kubelet's and the runtime's directories (pods' volumes,
        network namespaces, root filesystems) gone, /run a new empty tmpfs, the kubepods cgroups
        gone. What is on disk stays: /var/lib/kubelet (the device manager's and the DRA
        driver's checkpoints) and /var/lib/containerd (images, the runtime's metadata)."""
        for name in ["kubelet", "containerd", "xpud-api-proxy", "xpud", "dbus-daemon"]:
            self.components[name].stop()
        keep = {1, os.getpid()} | {self.components[name].process.pid for name in CONTROL_PLANE}
        wait_for("every node process ended", lambda: kill_all_but(keep), 30)
        for top in ["/var/lib/kubelet/", "/var/lib/containerd/"]:
            for path in sorted(mounts_under(top), key=len, reverse=True):
                run(["umount", "-l", path])
        run(["umount", "-l", "/run"])  # with every mount below it
        run(["mount", "-t", "tmpfs", "-o", "mode=0755", "tmpfs", "/run"])
        remove_kubepods_cgroups()

    def boot(self):
        """The services in boot order, as their units order them: the system bus, xpud, the
        proxy's sockets and the proxy, containerd, the kubelet (which brings the pods back).
        Returns {step: seconds from the boot's start} and the monotonic time the kubelet was
        started at."""
        started = time.monotonic()
        self.make_run_directories()
        self.start_host_services()
        host_services = time.monotonic() - started
        self.start_runtime()
        kubelet_started = time.monotonic()
        self.start_kubelet()
        return {"the bus, xpud and the proxy serving": host_services,
                "containerd serving, the kubelet started": kubelet_started - started}, kubelet_started

    # ---- host side: xpud and its API proxy's sockets ---------------------------------------

    def start_host_services(self, cards=8):
        sys.path.insert(0, os.path.join(self.source_dir, "tests", "packaging"))
        from private_system_bus import bus_config
        config = os.path.join(self.run_dir, "system-bus.conf")
        with open(config, "w", encoding="utf-8") as f:
            f.write(bus_config("/run/dbus/system_bus_socket",
                               [os.path.join(self.source_dir, "dbus", "com.kunlunxin.xpud1.conf")]))
        bus = self.add("dbus-daemon", ["dbus-daemon", f"--config-file={config}", "--nofork",
                                       "--nopidfile"])
        bus.start()
        wait_for("the system bus socket", lambda: os.path.exists("/run/dbus/system_bus_socket"), 10)
        os.chmod("/run/dbus/system_bus_socket", 0o666)
        self.cards = cards
        xpud_conf = self.write_xpud_conf()
        self.add("xpud", [self.binary("xpud/xpud"), "--config", xpud_conf]).start()
        wait_for("xpud on the system bus", self.xpud_answers, 20)
        # As xpud-api-proxy.service runs it, socket-activated: its sockets bound as root, the
        # proxy as its own unprivileged user (here nobody).
        self.add("xpud-api-proxy", [
            sys.executable, "-c", SOCKET_ACTIVATION, "65534", "65534",
            self.binary("xpud-api-proxy/xpud-api-proxy"),
            *(f"{name}={path}={mode:o}" for name, path, mode, _ in API_PROXY_SOCKETS)]).start()
        for _, path, _, _ in API_PROXY_SOCKETS:
            wait_for(f"xpud-api-proxy's socket {path}", lambda path=path: os.path.exists(path), 10)
        wait_for("xpud-api-proxy serving its sockets", self.api_proxy_serves, 20)

    def write_xpud_conf(self, extra=""):
        """The node's xpud.conf: the sim's cards, the built xpuctl as the hook program (the
        runtime runs it for memory shares), then `extra` (sections a scenario adds)."""
        path = os.path.join(self.run_dir, "xpud.conf")
        with open(path, "w", encoding="utf-8") as f:
            f.write(f"[daemon]\nbackend = sim\n\n[sim]\ndevices = {self.cards}\n\n"
                    f"[cxpu]\nhook_program = {self.binary('xpuctl/xpuctl')}\n{extra}")
        return path

    def restart_xpud(self, extra=""):
        """xpud stopped (SIGTERM, as systemd stops it), its xpud.conf rewritten with `extra`
        (empty: the suite's default), started again; returns once it answers on the bus. The
        sim's state (injected faults, pinned metrics) goes with the process."""
        self.components["xpud"].stop()
        self.write_xpud_conf(extra)
        self.components["xpud"].start()
        wait_for("xpud back on the system bus", self.xpud_answers, 20)

    def api_proxy_serves(self):
        """True once every socket of the proxy answers a read (the sockets exist before the
        proxy runs, as under systemd)."""
        for _, path, _, _ in API_PROXY_SOCKETS:
            result = run(["busctl", f"--address=unix:path={path}", "--timeout=5", "get-property",
                          "com.kunlunxin.xpud1", "/com/kunlunxin/xpud1", "com.kunlunxin.xpud1.Manager",
                          "DeviceCount"], check=False)
            if result.returncode != 0:
                return False
        return True

    def xpud_answers(self):
        result = run(["busctl", "--system", "get-property", "com.kunlunxin.xpud1",
                      "/com/kunlunxin/xpud1", "com.kunlunxin.xpud1.Manager", "DeviceCount"],
                     check=False)
        return result.returncode == 0

    def xpuctl(self, *args):
        return run([self.binary("xpuctl/xpuctl"), *args])

    def set_health(self, index, healthy, reason="cluster test fault"):
        run(["busctl", "--system", "call", "com.kunlunxin.xpud1", "/com/kunlunxin/xpud1",
             "com.kunlunxin.xpud1.Simulator", "SetHealth", "uss", str(index),
             "Healthy" if healthy else "Unhealthy", "" if healthy else reason])

    def set_metric(self, index, key, value):
        """Pins a sim metric (Simulator.SetMetric); float("nan") lets the simulation drive it."""
        run(["busctl", "--system", "call", "com.kunlunxin.xpud1", "/com/kunlunxin/xpud1",
             "com.kunlunxin.xpud1.Simulator", "SetMetric", "usd", str(index), key, repr(float(value))])

    def set_reset_fails(self, index, fails):
        run(["busctl", "--system", "call", "com.kunlunxin.xpud1", "/com/kunlunxin/xpud1",
             "com.kunlunxin.xpud1.Simulator", "SetResetFails", "ub", str(index),
             "true" if fails else "false"])

    # ---- the cluster ------------------------------------------------------------------------

    def start_control_plane(self):
        self.pki = Pki(os.path.join(self.run_dir, "pki"), NODE_NAME, NODE_IP, SERVICE_IP)
        server = f"https://{NODE_IP}:6443"
        self.kubeconfig = self.pki.kubeconfig("admin", server, self.pki.admin)
        etcd_dir = os.path.join(self.run_dir, "etcd")
        self.add("etcd", [self.program("etcd"), "--data-dir", etcd_dir, "--listen-client-urls", "http://127.0.0.1:2379",
                          "--advertise-client-urls", "http://127.0.0.1:2379",
                          "--listen-peer-urls", "http://127.0.0.1:2380",
                          "--initial-advertise-peer-urls", "http://127.0.0.1:2380",
                          "--initial-cluster", "default=http://127.0.0.1:2380"]).start()
        pki = self.pki
        self.add("kube-apiserver", [
            self.program("kube-apiserver"), "--etcd-servers=http://127.0.0.1:2379",
            f"--advertise-address={NODE_IP}", "--bind-address=0.0.0.0", "--secure-port=6443",
            f"--service-cluster-ip-range={SERVICE_RANGE}", "--authorization-mode=Node,RBAC",
            f"--client-ca-file={pki.ca_cert}", f"--tls-cert-file={pki.apiserver[0]}",
            f"--tls-private-key-file={pki.apiserver[1]}",
            f"--kubelet-client-certificate={pki.apiserver_kubelet_client[0]}",
            f"--kubelet-client-key={pki.apiserver_kubelet_client[1]}",
            "--service-account-issuer=https://kubernetes.default.svc",
            f"--service-account-key-file={pki.service_account_public}",
            f"--service-account-signing-key-file={pki.service_account_key}",
            # The node name resolves nowhere: the API server reaches the kubelet by its address.
            "--kubelet-preferred-address-types=InternalIP",
            # Privileged containers are refused by a ValidatingAdmissionPolicy instead
            # (refuse_privileged_pods), which scenario 15 lifts for the add-on's pods with an API
            # write: restarting the API server with another flag broke every component's watches
            # (the scheduler's were refused while the new server loaded its RBAC).
            "--allow-privileged=true", "--profiling=false",
            # Alpha in 1.35, beta (on by default) from 1.36: pods' status shows the health of the
            # DRA devices they hold (allocatedResourcesStatus), which the kubelet reads from the
            # driver's health stream.
            "--feature-gates=ResourceHealthStatus=true"]).start()
        wait_for("kube-apiserver ready", lambda: self.kubectl("get", "--raw", "/readyz", check=False).returncode == 0, 120)
        self.add("kube-controller-manager", [
            self.program("kube-controller-manager"),
            f"--kubeconfig={pki.kubeconfig('controller-manager', server, pki.controller_manager)}",
            f"--authentication-kubeconfig={self.kubeconfig}", f"--authorization-kubeconfig={self.kubeconfig}",
            f"--service-account-private-key-file={pki.service_account_key}",
            f"--root-ca-file={pki.ca_cert}", "--use-service-account-credentials=true",
            "--leader-elect=false", "--allocate-node-cidrs=false", "--bind-address=127.0.0.1",
            "--controllers=*,-nodeipam"]).start()
        self.add("kube-scheduler", [
            self.program("kube-scheduler"),
            f"--kubeconfig={pki.kubeconfig('scheduler', server, pki.scheduler)}",
            f"--authentication-kubeconfig={self.kubeconfig}", f"--authorization-kubeconfig={self.kubeconfig}",
            "--leader-elect=false", "--bind-address=127.0.0.1",
            # Each pod it binds and each it cannot, with why: what a scenario's pod left Pending
            # needs to be read by.
            "--v=2"]).start()
        self.refuse_privileged_pods(True)

    def refuse_privileged_pods(self, refused):
        """Whether the API server refuses pods with a privileged container (the chart needs none,
        so every scenario runs with them refused; the add-on's own pods were privileged). What
        --allow-privileged=false refuses, as a ValidatingAdmissionPolicy whose binding comes and
        goes; returns once a server-side dry run of such a pod is refused, or admitted."""
        if refused:
            self.kubectl("apply", "-f", "-", input_text=json.dumps(
                {"apiVersion": "v1", "kind": "List", "items": privileged_pods_policy()}))
        else:
            self.kubectl("delete", "validatingadmissionpolicybinding", PRIVILEGED_POLICY, "--ignore-not-found")

        def settled():
            result = self.kubectl("create", "--dry-run=server", "-f", "-", check=False,
                                  input_text=json.dumps(PRIVILEGED_PROBE))
            if refused:
                return PRIVILEGED_POLICY in result.stderr
            return result.returncode == 0
        wait_for(f"privileged pods {'refused' if refused else 'admitted'}", settled, 120)

    def start_runtime(self):
        config = self.containerd_config = os.path.join(self.run_dir, "containerd.toml")
        # Registries' hosts.toml (the registry scenario's CA): here, not the host's /etc/containerd.
        self.registry_config_path = os.path.join(self.run_dir, "certs.d")
        os.makedirs(self.registry_config_path, exist_ok=True)
        with open(config, "w", encoding="utf-8") as f:
            f.write(f"""version = 3
root = "/var/lib/containerd"
state = "/run/containerd"
[grpc]
  address = "/run/containerd/containerd.sock"
[plugins.'io.containerd.internal.v1.opt']
  # Not the host's /opt/containerd.
  path = "/var/lib/containerd/opt"
[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "{PAUSE_IMAGE}"
  [plugins.'io.containerd.cri.v1.images'.registry]
    config_path = "{self.registry_config_path}"
[plugins.'io.containerd.cri.v1.runtime']
  # No CAP_SYS_RESOURCE on these machines: lowering a sandbox's oom_score_adj would fail.
  restrict_oom_score_adj = true
  enable_cdi = true
  cdi_spec_dirs = ["/etc/cdi", "{CDI_DIR}"]
  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
    BinaryName = "/usr/sbin/runc"
    SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "/etc/cni/net.d"
""")
        env = {"PATH": f"{self.programs}:{os.environ['PATH']}"}
        self.add("containerd", [self.program("containerd"), "--config", config], env=env).start()
        wait_for("containerd's socket", lambda: self.ctr("version", check=False).returncode == 0, 30)

    def import_image(self, archive):
        self.ctr("images", "import", "--all-platforms", archive, timeout=300)

    def ctr(self, *args, check=True, timeout=60):
        result = run([self.program("ctr"), "--address", "/run/containerd/containerd.sock",
                      "--namespace", "k8s.io", *args], check=False, timeout=timeout)
        if check and result.returncode != 0:
            raise RuntimeError(f"ctr {' '.join(args)}: {result.stderr}")
        return result

    def start_kubelet(self):
        server = f"https://{NODE_IP}:6443"
        kubelet_kubeconfig = self.pki.kubeconfig("kubelet", server, self.pki.kubelet)
        config = os.path.join(self.run_dir, "kubelet.yaml")
        with open(config, "w", encoding="utf-8") as f:
            f.write(f"""apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
authentication:
  anonymous: {{enabled: false}}
  webhook: {{enabled: true}}
  x509: {{clientCAFile: {self.pki.ca_cert}}}
authorization: {{mode: Webhook}}
# These machines have cgroup v1 and no systemd as PID 1.
cgroupDriver: cgroupfs
failCgroupV1: false
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
failSwapOn: false
podCIDR: {POD_SUBNET}
# The build machine's disk may be fuller than the defaults allow: never evict test pods.
evictionHard: {{"memory.available": "1Mi", "nodefs.available": "1%", "imagefs.available": "1%"}}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
# The suite's images are imported, not pulled.
serializeImagePulls: false
syncFrequency: 10s
nodeStatusUpdateFrequency: 4s
featureGates: {{ResourceHealthStatus: true}}
""")
        self.add("kubelet", [self.program("kubelet"), f"--config={config}",
                             f"--kubeconfig={kubelet_kubeconfig}", f"--node-ip={NODE_IP}",
                             f"--hostname-override={NODE_NAME}", "--v=2"]).start()
        wait_for("the node Ready", self.node_ready, 120)

    def node_ready(self):
        node = self.get_json("node", NODE_NAME)
        return any(c["type"] == "Ready" and c["status"] == "True"
                   for c in node.get("status", {}).get("conditions", []))

    # ---- clients ----------------------------------------------------------------------------

    def kubectl(self, *args, check=True, timeout=120, input_text=None):
        argv = [self.program("kubectl"), f"--kubeconfig={self.kubeconfig}", *args]
        return run(argv, check=check, timeout=timeout, input_text=input_text)

    def get_json(self, *args):
        return json.loads(self.kubectl("get", "-o", "json", *args))

    def helm(self, *args, timeout=300, check=True):
        return run([os.path.join(self.build_dir, "tools", "helm"), f"--kubeconfig={self.kubeconfig}", *args],
                   timeout=timeout, check=check)

    # ---- bookkeeping ------------------------------------------------------------------------

    def binary(self, relative):
        return os.path.join(self.build_dir, relative)

    def program(self, name):
        return os.path.join(self.programs, name)

    def add(self, name, argv, env=None, user=None):
        program = Program(name, argv, self.log_dir, env=env, user=user)
        self.components[name] = program
        return program

    def check_components(self):
        for program in self.components.values():
            program.check_running()

    def stop(self):
        # The kubelet first, so that it does not restart what the runtime is stopping; every
        # process left (containers, shims) dies with the PID namespace when the suite exits.
        for name in ["kubelet", "containerd", "kube-scheduler", "kube-controller-manager",
                     "kube-apiserver", "etcd", "xpud-api-proxy", "xpud", "dbus-daemon"]:
            if name in self.components:
                self.components[name].stop()

    def print_logs(self, names=None, lines=40):
        for name, program in self.components.items():
            if names is None or name in names:
                print(f"---- {name} ({program.log_path})", flush=True)
                print(program.tail(lines), flush=True)


CONTROL_PLANE = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"]


def privileged_pods_policy():
    """The policy and binding that refuse a pod with a privileged container, in any of its three
    lists, as --allow-privileged=false does (k8s.io/kubernetes pkg/apis/core/validation,
    ValidateSecurityContext: "disallowed by cluster policy")."""
    not_privileged = "!(has(c.securityContext) && has(c.securityContext.privileged) && c.securityContext.privileged)"
    expression = (f"object.spec.containers.all(c, {not_privileged})"
                  f" && (!has(object.spec.initContainers) || object.spec.initContainers.all(c, {not_privileged}))"
                  f" && (!has(object.spec.ephemeralContainers)"
                  f" || object.spec.ephemeralContainers.all(c, {not_privileged}))")
    api = "admissionregistration.k8s.io/v1"
    return [
        {"apiVersion": api, "kind": "ValidatingAdmissionPolicy", "metadata": {"name": PRIVILEGED_POLICY},
         "spec": {"failurePolicy": "Fail",
                  "matchConstraints": {"resourceRules": [{
                      "apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                      "resources": ["pods", "pods/ephemeralcontainers"]}]},
                  "validations": [{"expression": expression,
                                   "message": "privileged containers are disallowed on this node"}]}},
        {"apiVersion": api, "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": PRIVILEGED_POLICY},
         "spec": {"policyName": PRIVILEGED_POLICY, "validationActions": ["Deny"]}},
    ]
CGROUP_ROOT = "/sys/fs/cgroup"


def kill_all_but(keep):
    """SIGKILLs every process of the namespace but `keep`, reaping those that were (or became,
    as orphans of PID 1) this process's children; True when none is left."""
    left = [int(entry) for entry in os.listdir("/proc") if entry.isdigit() and int(entry) not in keep]
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            continue
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass  # not ours: its parent, killed too, leaves it to this PID 1
    return not left


def mounts_under(top):
    """Mount points strictly below `top` (which ends in /), as this namespace sees them."""
    points = []
    with open("/proc/self/mountinfo", encoding="utf-8") as f:
        for line in f:
            # Field 5 is the mount point, with space, tab, newline and backslash octal-escaped.
            point = line.split()[4].encode().decode("unicode_escape")
            if point.startswith(top):
                points.append(point)
    return points


def remove_kubepods_cgroups():
    """The kubelet's cgroupfs driver makes kubepods under every v1 controller; cgroups outlive
    the processes in them (and, on this machine, the node's namespaces), so remove them deepest
    first, as a reboot and the suite's end do."""
    if not os.path.isdir(CGROUP_ROOT):
        return
    for controller in os.listdir(CGROUP_ROOT):
        top = os.path.join(CGROUP_ROOT, controller, "kubepods")
        if not os.path.isdir(top) or os.path.islink(os.path.join(CGROUP_ROOT, controller)):
            continue
        for directory, _, _ in sorted(os.walk(top), key=lambda entry: -entry[0].count("/")):
            for _ in range(50):
                try:
                    os.rmdir(directory)
                    break
                except OSError:
                    time.sleep(0.1)  # a process that was killed may still be leaving it


def remove_tree(path):
    shutil.rmtree(path, ignore_errors=True)


def now():
    return time.strftime("%H:%M:%S")
