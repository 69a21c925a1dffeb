"""The operator's scenarios on the real node (run inside the suite's namespaces).

Each scenario asserts with a deadline what an operator would see (kubectl, the pods' own output,
the exporter's /metrics, a real Prometheus) and prints its figures. They run in order on one
cluster: later ones build on the chart and pods the earlier ones left."""

import calendar
import json
import os
import sys
import time
import shutil
import signal
import subprocess
import traceback
import urllib.parse
import urllib.request

import images
from node import CDI_DIR, NODE_IP, NODE_NAME, Node
from processes import Deadline, run, timed, wait_for

CHART_NAMESPACE = "kube-system"
RELEASE = "xpu"
RESOURCE = "kunlunxin.com/xpu"
NODE_LABEL = "kunlun-device-enable"
DAEMONSETS = ["xpu-device-plugin-daemonset", "xpu-exporter", "xpu-rbac-token-gen"]
FIGURES = []


def figure(name, seconds):
    FIGURES.append((name, seconds))
    print(f"  figure: {name}: {seconds:.1f} s", flush=True)


class Suite:
    def __init__(self, node, source_dir, archives):
        self.node = node
        self.source_dir = source_dir
        self.archives = archives
        self.chart = os.path.join(source_dir, "charts", "xpu-k8s-shim")
        self.shim_reference = None

    # ---- views an operator has -------------------------------------------------------------

    def node_resources(self):
        status = self.node.get_json("node", NODE_NAME)["status"]
        return status.get("capacity", {}), status.get("allocatable", {})

    def allocatable(self, resource=RESOURCE):
        return int(self.node_resources()[1].get(resource, "0"))

    def wait_allocatable(self, count, timeout, resource=RESOURCE):
        return wait_for(f"allocatable {resource} == {count}",
                        lambda: self.allocatable(resource) == count or None, timeout)

    def daemonsets_ready(self, expected=1):
        for name in DAEMONSETS:
            status = self.node.get_json("daemonset", "-n", CHART_NAMESPACE, name)["status"]
            if status.get("desiredNumberScheduled") != expected or status.get("numberReady", 0) != expected:
                return False
            if status.get("updatedNumberScheduled", 0) != expected:
                return False
        return True

    def shim_pods(self):
        pods = self.node.get_json("pods", "-n", CHART_NAMESPACE,
                                  "-l", "app.kubernetes.io/name=xpu-k8s-shim")["items"]
        return [pod for pod in pods if pod["metadata"].get("deletionTimestamp") is None]

    def pod(self, name, namespace="default"):
        return self.node.get_json("pod", "-n", namespace, name)

    def wait_pod_running(self, name, namespace="default", timeout=90):
        def running():
            status = self.pod(name, namespace)["status"]
            return status.get("phase") == "Running" and all(
                c.get("ready") for c in status.get("containerStatuses", [{}]))
        return wait_for(f"pod {namespace}/{name} running", running, timeout)

    def pod_log(self, name, namespace="default"):
        return self.node.kubectl("logs", "-n", namespace, name)

    def exporter_metrics(self):
        exporter = [p for p in self.shim_pods() if p["metadata"]["name"].startswith("xpu-exporter")]
        if not exporter or not exporter[0]["status"].get("podIP"):
            raise RuntimeError("no exporter pod with an IP")
        url = f"http://{exporter[0]['status']['podIP']}:9507/metrics"
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.read().decode()

    def devices(self):
        return json.loads(self.node.xpuctl("list", "--json"))["devices"]

    def kubelet_checkpoint(self):
        with open("/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint", encoding="utf-8") as f:
            return json.load(f)["Data"]

    def allocated_ids(self, pod_uid, resource=RESOURCE):
        ids = []
        for entry in self.kubelet_checkpoint().get("PodDeviceEntries") or []:
            if entry["PodUID"] == pod_uid and entry["ResourceName"] == resource:
                for per_numa in entry["DeviceIDs"].values():
                    ids += per_numa
        return sorted(ids)

    def helm_install(self, *values):
        return self.node.helm("upgrade", "--install", RELEASE, self.chart, "--namespace", CHART_NAMESPACE,
                              "--set", "global.image.pullPolicy=Never", *values)

    def workload(self, name, count, resource=RESOURCE):
        """A pod as in the replaced add-on's documentation: it asks for cards in its limits and
        prints what it got, then stays to hold them."""
        manifest = {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "restartPolicy": "Never",
                "terminationGracePeriodSeconds": 1,
                "containers": [{
                    "name": "main", "image": images.BUSYBOX, "imagePullPolicy": "Never",
                    "command": ["sh", "-c",
                                "echo XPU_VISIBLE_DEVICES=$XPU_VISIBLE_DEVICES; "
                                "echo KUNLUNXIN_XPU_UUIDS=$KUNLUNXIN_XPU_UUIDS; "
                                "echo NODES=$(ls /dev | grep xpu | sort | tr '\\n' ' '); "
                                "exec sleep 100000"],
                    "resources": {"limits": {resource: str(count)}},
                }],
            },
        }
        self.node.kubectl("apply", "-f", "-", input_text=json.dumps(manifest))
        self.wait_pod_running(name)
        return self.pod(name)

    def workload_view(self, name):
        """What the container printed: {'XPU_VISIBLE_DEVICES': ..., 'KUNLUNXIN_XPU_UUIDS': ..., 'NODES': ...}"""
        def printed():
            lines = dict(line.split("=", 1) for line in self.pod_log(name).splitlines() if "=" in line)
            return lines if "NODES" in lines else None
        return wait_for(f"pod {name}'s output", printed, 30)

    def delete_pods(self, *names):
        if names:
            self.node.kubectl("delete", "pod", "-n", "default", "--wait=true", "--timeout=60s", *names)

    # ---- scenarios ---------------------------------------------------------------------------

    def s1_install(self):
        """helm install with defaults and the local image: three DaemonSets ready on the labelled
        node; removing the label removes the pods."""
        self.node.kubectl("label", "node", NODE_NAME, f"{NODE_LABEL}=enable")
        started = time.monotonic()
        self.helm_install()
        wait_for("three DaemonSets ready", self.daemonsets_ready, 180)
        figure("helm install to three DaemonSets ready", time.monotonic() - started)
        plugin = [p for p in self.shim_pods() if p["metadata"]["name"].startswith("xpu-device-plugin")][0]
        images_used = {c["image"] for p in self.shim_pods() for c in p["spec"]["containers"]}
        print(f"  images: {sorted(images_used)}")
        self.wait_allocatable(8, 60)
        started_at = plugin["status"]["containerStatuses"][0]["state"]["running"]["startedAt"]
        started_epoch = calendar.timegm(time.strptime(started_at, "%Y-%m-%dT%H:%M:%SZ"))
        # startedAt has whole seconds: the figure is good to a second.
        figure("device plugin container start to node capacity 8 (±1 s)", time.time() - started_epoch)
        self.node.kubectl("label", "node", NODE_NAME, f"{NODE_LABEL}-")
        _, seconds = timed(lambda: wait_for("shim pods gone after unlabelling", lambda: not self.shim_pods(), 90))
        figure("label removed to shim pods gone", seconds)
        self.node.kubectl("label", "node", NODE_NAME, f"{NODE_LABEL}=enable")
        wait_for("three DaemonSets ready again", self.daemonsets_ready, 120)
        # A ready pod is not yet a registered plugin, and the node's status lags the kubelet's
        # own view: wait for the new plugin to have sent its cards.
        self.wait_plugin_serving()
        self.wait_allocatable(8, 60)

    def s2_capacity(self):
        """kubectl describe node shows kunlunxin.com/xpu: 8 in capacity and allocatable."""
        described = wait_for("describe node with 8 cards in both sections", lambda: (
            (text := self.node.kubectl("describe", "node", NODE_NAME))
            and text.count(f"{RESOURCE}:") >= 2
            and all(f"  {RESOURCE}:  8" in section for section in sections(text, ["Capacity:", "Allocatable:"]))
            and text), 60)
        for line in described.splitlines():
            if RESOURCE in line:
                print(f"  describe node: {line.strip()}")

    def s3_allocation(self):
        """The add-on's demo pod runs with one card; a pod asking 4 while one NUMA half is partly
        taken gets a fully linked set; in each container the environment and device nodes are
        what the kubelet recorded as allocated."""
        devices = {d["uuid"]: d for d in self.devices()}
        demo = self.workload("xpu-demo", 1)
        quad = self.workload("xpu-quad", 4)
        for pod in (demo, quad):
            name = pod["metadata"]["name"]
            uuids = self.allocated_ids(pod["metadata"]["uid"])
            indices = sorted(devices[u]["index"] for u in uuids)
            view = self.workload_view(name)
            shown = sorted(int(i) for i in view["XPU_VISIBLE_DEVICES"].split(",") if i)
            expect(shown == indices, f"{name}: XPU_VISIBLE_DEVICES {view['XPU_VISIBLE_DEVICES']} "
                                     f"but the kubelet allocated {indices}")
            expect(sorted(view["KUNLUNXIN_XPU_UUIDS"].split(",")) == uuids,
                   f"{name}: KUNLUNXIN_XPU_UUIDS {view['KUNLUNXIN_XPU_UUIDS']} but allocated {uuids}")
            nodes = view["NODES"].split()
            expected_nodes = sorted([f"xpu{i}" for i in indices] + ["xpuctrl"])
            expect(sorted(nodes) == expected_nodes, f"{name}: device nodes {nodes}, expected {expected_nodes}")
            print(f"  {name}: cards {indices}, nodes {' '.join(nodes)}")
        quad_indices = [int(i) for i in self.workload_view("xpu-quad")["XPU_VISIBLE_DEVICES"].split(",")]
        by_index = {d["index"]: d for d in devices.values()}
        for index in quad_indices:
            linked = set(by_index[index]["linked_devices"]) | {index}
            expect(set(quad_indices) <= linked,
                   f"xpu-quad got {quad_indices}, but card {index} links only {sorted(linked)}")
        print(f"  xpu-quad's cards {quad_indices} are all linked to each other")

    def s4_fault(self):
        """A fault injected on xpud takes allocatable to 7; recovery brings it back to 8."""
        self.wait_allocatable(8, 30)
        started = time.monotonic()
        self.node.set_health(5, False)
        self.wait_allocatable(7, 60)
        figure("fault injected to allocatable 7", time.monotonic() - started)
        started = time.monotonic()
        self.node.set_health(5, True)
        self.wait_allocatable(8, 60)
        figure("recovery to allocatable 8", time.monotonic() - started)

    def s5_kubelet_restart(self):
        """Restarting the kubelet: the plugin registers again, running pods are untouched, and the
        exporter's pod-resources connection comes back."""
        before = {name: container_identity(self.pod(name)) for name in ("xpu-demo", "xpu-quad")}
        log_before = os.path.getsize(self.node.components["kubelet"].log_path)
        started = time.monotonic()
        self.node.components["kubelet"].restart()

        def registered_again():
            with open(self.node.components["kubelet"].log_path, "rb") as log:
                log.seek(log_before)
                return b"Got registration request from device plugin with resource" in log.read()
        wait_for("the device plugin registered with the new kubelet", registered_again, 90)
        figure("kubelet restart to the plugin's registration", time.monotonic() - started)
        self.wait_allocatable(8, 60)
        figure("kubelet restart to allocatable 8", time.monotonic() - started)
        after = {name: container_identity(self.pod(name)) for name in before}
        expect(after == before, f"pods changed across the kubelet restart: {before} -> {after}")
        wait_for("xpu_exporter_podresources_up 1",
                 lambda: "xpu_exporter_podresources_up 1" in self.exporter_metrics(), 90)
        figure("kubelet restart to podresources_up 1", time.monotonic() - started)

    def s6_xpud_killed(self):
        """Killing xpud: after the grace period every card is unhealthy; xpud back: all healthy."""
        started = time.monotonic()
        self.node.components["xpud"].kill()
        self.wait_allocatable(0, 90)
        figure("xpud killed to allocatable 0 (grace period included)", time.monotonic() - started)
        started = time.monotonic()
        self.node.components["xpud"].start()
        self.wait_allocatable(8, 90)
        figure("xpud restarted to allocatable 8", time.monotonic() - started)

    def s8_token(self):
        """The token token-sync writes to /xpu-runtime/auth works against the real API server
        with exactly klx-xpu-clusterrole's rights."""
        token_file = "/xpu-runtime/auth/token"
        wait_for("token-sync's token", lambda: os.path.getsize(token_file) > 0, 60)
        token = open(token_file, encoding="utf-8").read().strip()
        base = [self.node.program("kubectl"), f"--server=https://{NODE_IP}:6443",
                "--certificate-authority=/xpu-runtime/auth/ca.crt", f"--token={token}"]
        nodes = run(base + ["get", "nodes", "-o", "name"])
        expect(f"node/{NODE_NAME}" in nodes, f"listing nodes with the synced token gave {nodes!r}")
        can_create = run(base + ["auth", "can-i", "create", "pods"], check=False)
        expect(can_create.stdout.strip() == "no", f"can-i create pods: {can_create.stdout!r}")
        created = run(base + ["run", "intruder", "--image=" + images.BUSYBOX, "--restart=Never"], check=False)
        expect(created.returncode != 0 and "forbidden" in created.stderr.lower(),
               f"creating a pod with the synced token: {created.returncode} {created.stderr!r}")
        print("  synced token: get nodes works; creating a pod is forbidden")

    def s10_bus_boundary(self):
        """What the shim's pods can reach on the host: their mounts, and that calls outside xpud's
        read-only API are refused on the socket they see."""
        tasks = container_pids(self.node)
        checked = 0
        for pod in self.shim_pods():
            for status in pod["status"].get("containerStatuses", []):
                container_id = status["containerID"].split("://")[-1]
                pid = tasks[container_id]
                root = f"/proc/{pid}/root"
                expect(not os.path.exists(f"{root}/run/dbus/system_bus_socket"),
                       f"{pod['metadata']['name']} sees the host's system bus")
                mounts = [line.split()[4] for line in open(f"/proc/{pid}/mountinfo", encoding="utf-8")]
                host_paths = [m for m in mounts if m.startswith(("/run", "/var/lib/kubelet", "/xpu-runtime"))]
                print(f"  {pod['metadata']['name']}: host paths mounted: {host_paths}")
                if os.path.exists(f"{root}/run/xpud-api/bus.sock"):
                    check_refusals(f"{root}/run/xpud-api/bus.sock")
                    checked += 1
        expect(checked >= 2, f"only {checked} shim containers reach xpud's socket")


    def s7_prometheus_labels(self):
        """A real Prometheus scraping the exporter pod sees the pods' namespace, pod and container
        on the cards they hold: with defaults, in shared mode and under a customised resource name."""
        self.expect_pod_labels("xpu-demo", "defaults")
        try:
            self.helm_install("--reuse-values", "--set", "devicePlugin.enableXpuShare=true")
            self.wait_rolled_out()
            shared = "kunlunxin.com/xpu-shared"
            wait_for(f"{shared} allocatable", lambda: self.allocatable(shared) > 0, 90)
            self.workload("xpu-shared", 1, resource=shared)
            self.expect_pod_labels("xpu-shared", "shared mode", resource=shared)
            self.delete_pods("xpu-shared")
            custom = "example.com/card"
            self.helm_install("--reuse-values", "--set", "devicePlugin.enableXpuShare=false",
                              "--set", f"devicePlugin.customizedResourceName={custom}")
            self.wait_rolled_out()
            wait_for(f"{custom} allocatable", lambda: self.allocatable(custom) > 0, 90)
            self.workload("xpu-custom", 1, resource=custom)
            self.expect_pod_labels("xpu-custom", "customised resource name", resource=custom)
            self.delete_pods("xpu-custom")
        finally:
            self.helm_install("--reuse-values", "--set", "devicePlugin.enableXpuShare=false",
                              "--set", "devicePlugin.customizedResourceName=")
            self.wait_rolled_out()

    def expect_pod_labels(self, pod_name, mode, resource=RESOURCE):
        pod = self.pod(pod_name)
        ids = self.allocated_ids(pod["metadata"]["uid"], resource)
        expect(ids, f"{pod_name}: the kubelet recorded no {resource} for it")
        by_uuid = {d["uuid"]: d["index"] for d in self.devices()}
        indices = sorted({by_uuid[i.split("::")[0]] for i in ids})
        with PrometheusServer(self.node, self.exporter_address()) as prometheus:
            query = f'xpu_healthy{{namespace="default",pod="{pod_name}",container="main"}}'
            series = wait_for(f"{mode}: Prometheus series for {pod_name}",
                              lambda: prometheus.query(query), 60)
        labelled = sorted(int(s["metric"]["xpu"]) for s in series)
        expect(labelled == indices, f"{mode}: series with pod {pod_name} are for cards {labelled}, "
                                    f"the kubelet allocated {indices}")
        print(f"  {mode}: Prometheus has {pod_name}'s labels on cards {labelled}")

    def exporter_address(self):
        exporter = [p for p in self.shim_pods() if p["metadata"]["name"].startswith("xpu-exporter")]
        return f"{exporter[0]['status']['podIP']}:9507"

    def wait_plugin_serving(self, timeout=90):
        def serving():
            plugins = [p for p in self.shim_pods() if p["metadata"]["name"].startswith("xpu-device-plugin")]
            if len(plugins) != 1:
                return False
            log = self.node.kubectl("logs", "-n", CHART_NAMESPACE, plugins[0]["metadata"]["name"], check=False)
            return "ListAndWatch opened" in log.stdout
        wait_for("the device plugin serving the kubelet", serving, timeout)

    def wait_rolled_out(self):
        wait_for("the DaemonSets rolled out", self.daemonsets_ready, 180)
        wait_for("one pod per DaemonSet", lambda: len(self.shim_pods()) == len(DAEMONSETS), 120)

    def s9_upgrades(self):
        """helm upgrade to useDetailResName, to enableXpuShare, to rbac.minimal=true, and helm
        uninstall: each lands cleanly."""
        model = self.devices()[0]["model"]
        steps = [
            ("useDetailResName", ["--set", "devicePlugin.useDetailResName=true"], f"kunlunxin.com/{model}"),
            ("enableXpuShare", ["--set", "devicePlugin.useDetailResName=false",
                                "--set", "devicePlugin.enableXpuShare=true"], "kunlunxin.com/xpu-shared"),
            ("rbac.minimal", ["--set", "devicePlugin.enableXpuShare=false", "--set", "rbac.minimal=true"],
             RESOURCE),
        ]
        for name, values, resource in steps:
            started = time.monotonic()
            self.helm_install("--reuse-values", *values)
            self.wait_rolled_out()
            wait_for(f"{name}: {resource} allocatable", lambda: self.allocatable(resource) > 0, 90)
            figure(f"helm upgrade to {name}, rolled out and advertised", time.monotonic() - started)
        tokens = self.node.get_json("pods", "-n", CHART_NAMESPACE, "-l",
                                    "app.kubernetes.io/component=device-plugin")["items"][0]["spec"]
        expect(tokens.get("automountServiceAccountToken") is False,
               "rbac.minimal: the device plugin still mounts a service-account token")
        started = time.monotonic()
        self.node.helm("uninstall", RELEASE, "--namespace", CHART_NAMESPACE, "--wait")
        wait_for("shim pods gone", lambda: not self.shim_pods(), 90)
        left = sorted(set(os.listdir("/var/lib/kubelet/device-plugins"))
                      - {"kubelet.sock", "kubelet_internal_checkpoint", "DEPRECATION"})
        expect(not left, f"left behind in the kubelet's device-plugins directory: {left}")
        self.wait_allocatable(0, 90)
        figure("helm uninstall to allocatable 0", time.monotonic() - started)

    def s13_cdi(self):
        """xpud's CDI spec is on the node; with devicePlugin.cdi=true the plugin hands out the
        card's CDI name and no raw device nodes, and containerd injects the same nodes and
        environment from the spec."""
        spec_path = os.path.join(CDI_DIR, "kunlunxin-xpu.json")
        with open(spec_path, encoding="utf-8") as f:
            spec = json.load(f)
        names = {d["name"] for d in spec["devices"]}
        expect(spec["kind"] == "kunlunxin.com/xpu", f"{spec_path}: kind {spec['kind']}")
        expect({str(i) for i in range(8)} | {"all"} <= names, f"{spec_path}: devices {sorted(names)}")
        print(f"  {spec_path}: cdiVersion {spec['cdiVersion']}, {len(names)} device names")
        started = time.monotonic()
        self.helm_install("--reuse-values", "--set", "devicePlugin.cdi=true")
        self.wait_rolled_out()
        self.wait_plugin_serving()
        self.wait_allocatable(8, 90)
        figure("helm upgrade to devicePlugin.cdi=true, rolled out and serving", time.monotonic() - started)
        args = [c.get("args", []) for p in self.shim_pods() if p["metadata"]["name"].startswith("xpu-device-plugin")
                for c in p["spec"]["containers"]]
        expect(any("--cdi=true" in a for a in args), f"the device plugin's arguments: {args}")
        devices = {d["uuid"]: d for d in self.devices()}
        try:
            pod = self.workload("xpu-cdi", 1)
            uuids = self.allocated_ids(pod["metadata"]["uid"])
            indices = [devices[u]["index"] for u in uuids]
            view = self.workload_view("xpu-cdi")
            expect(view["XPU_VISIBLE_DEVICES"] == ",".join(map(str, indices)),
                   f"xpu-cdi: XPU_VISIBLE_DEVICES {view['XPU_VISIBLE_DEVICES']}, allocated {indices}")
            nodes = sorted(view["NODES"].split())
            expected = sorted([f"xpu{i}" for i in indices] + ["xpuctrl"])
            expect(nodes == expected, f"xpu-cdi: device nodes {nodes}, expected {expected} (from the CDI spec only)")
            print(f"  xpu-cdi: card {indices} by its CDI name, nodes {' '.join(nodes)}")
        finally:
            self.delete_pods("xpu-cdi")
            self.helm_install("--reuse-values", "--set", "devicePlugin.cdi=auto")
            self.wait_rolled_out()
            self.wait_plugin_serving()
            self.wait_allocatable(8, 90)

    def s11_pod_security(self):
        """The chart's README says its namespace needs the privileged Pod Security level; the API
        server agrees: baseline warns about the hostPath volumes, privileged does not."""
        readme = open(os.path.join(self.chart, "README.md"), encoding="utf-8").read()
        expect("Pod Security" in readme and "privileged" in readme,
               "the chart's README does not say which Pod Security level it needs")
        rendered = self.node.helm("template", RELEASE, self.chart, "--namespace", "psa-test")
        daemonsets = "\n---\n".join(doc for doc in rendered.split("\n---\n") if "kind: DaemonSet" in doc)
        for level, warns in (("baseline", True), ("privileged", False)):
            self.node.kubectl("create", "namespace", "psa-test")
            try:
                self.node.kubectl("label", "namespace", "psa-test", f"pod-security.kubernetes.io/warn={level}")
                result = self.node.kubectl("apply", "--dry-run=server", "-n", "psa-test", "-f", "-",
                                           input_text=daemonsets, check=False)
                warned = "would violate PodSecurity" in result.stderr and "hostPath" in result.stderr
                expect(warned == warns, f"{level}: warning {'expected' if warns else 'not expected'}, "
                                        f"got: {result.stderr.strip()!r}")
                print(f"  {level}: {'hostPath warning' if warned else 'no warning'}")
            finally:
                self.node.kubectl("delete", "namespace", "psa-test", "--wait=false")
                wait_for("namespace psa-test gone", lambda: self.node.kubectl(
                    "get", "namespace", "psa-test", check=False).returncode != 0, 60)


    def s12_readme(self):
        """The README's "Try it on a real node" block, as written, on this node."""
        readme = open(os.path.join(self.source_dir, "README.md"), encoding="utf-8").read()
        block = readme.split("### Try it on a real node", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
        script = block.replace("<node>", NODE_NAME)
        if os.path.realpath(self.node.build_dir) != os.path.realpath(os.path.join(self.source_dir, "build")):
            script = script.replace(" build/", f" {self.node.build_dir}/")
        # A node as the README finds it: no release, no label, no pods of the other scenarios.
        self.node.helm("uninstall", RELEASE, "--namespace", CHART_NAMESPACE, "--wait", check=False)
        self.node.kubectl("label", "node", NODE_NAME, f"{NODE_LABEL}-", check=False)
        self.node.kubectl("delete", "pods", "--all", "-n", "default", "--wait=true", "--timeout=90s")
        self.wait_allocatable(0, 90)
        # This node's stand-in for a registry: the busybox the README names is the test's own.
        self.node.ctr("images", "tag", "--force", images.BUSYBOX, "docker.io/library/busybox:latest")
        env = {"KUBECONFIG": self.node.kubeconfig,
               "PATH": f"{self.node.programs}:{os.path.join(self.node.build_dir, 'tools')}:{os.environ['PATH']}"}
        try:
            result = subprocess.run(["sh", "-e", "-x", "-c", script], cwd=self.source_dir, env={**os.environ, **env},
                                    capture_output=True, text=True, timeout=600)
            output = result.stdout
            expect(result.returncode == 0, f"the README's block stopped ({result.returncode}):\n"
                                           f"{result.stderr[-3000:]}")
            for wanted in ["xpu-device-plugin-daemonset", "xpu-exporter", "xpu-rbac-token-gen",
                           "XPU_VISIBLE_DEVICES=", "KUNLUNXIN_XPU_UUIDS=", "/dev/xpu"]:
                expect(wanted in output, f"the README's block printed no {wanted!r}:\n{output}")
            # kubectl aligns the column to the longest resource name the node has had.
            capacity = [line for line in output.splitlines() if line.split() == [f"{RESOURCE}:", "8"]]
            expect(len(capacity) == 2, f"describe node | grep: {output}")
            print("  " + "\n  ".join(line for line in output.splitlines() if "XPU" in line or "/dev/xpu" in line))
        finally:
            self.node.kubectl("delete", "pod", "xpu-demo", "--ignore-not-found", "--wait=true", check=False)
            self.node.helm("uninstall", RELEASE, "--namespace", CHART_NAMESPACE, "--wait", check=False)
            self.node.kubectl("label", "node", NODE_NAME, f"{NODE_LABEL}-", check=False)
            shutil.rmtree("/tmp/xpu-image", ignore_errors=True)  # where the block builds the image

class PrometheusServer:
    """Debian's Prometheus scraping one target every second, queried over its HTTP API."""

    def __init__(self, node, target):
        self.node = node
        self.target = target

    def __enter__(self):
        directory = os.path.join(self.node.run_dir, "prometheus")
        os.makedirs(directory, exist_ok=True)
        config = os.path.join(directory, "prometheus.yml")
        with open(config, "w", encoding="utf-8") as f:
            f.write(f"global: {{scrape_interval: 1s, evaluation_interval: 1s}}\n"
                    f"scrape_configs:\n- job_name: xpu-exporter\n  static_configs:\n"
                    f"  - targets: ['{self.target}']\n")
        self.program = self.node.add("prometheus", [
            "prometheus", f"--config.file={config}", f"--storage.tsdb.path={directory}/data",
            "--web.listen-address=127.0.0.1:9090"])
        self.program.start()
        wait_for("Prometheus ready", lambda: urllib.request.urlopen(
            "http://127.0.0.1:9090/-/ready", timeout=2).status == 200, 60)
        return self

    def query(self, expression):
        url = "http://127.0.0.1:9090/api/v1/query?" + urllib.parse.urlencode({"query": expression})
        with urllib.request.urlopen(url, timeout=5) as response:
            return json.load(response)["data"]["result"]

    def __exit__(self, *exc):
        self.program.stop()
        del self.node.components["prometheus"]
        shutil.rmtree(os.path.join(self.node.run_dir, "prometheus"), ignore_errors=True)
        return False

def check_refusals(socket_path):
    address = f"--address=unix:path={socket_path}"
    allowed = run(["busctl", address, "call", "com.kunlunxin.xpud1", "/com/kunlunxin/xpud1",
                   "com.kunlunxin.xpud1.Manager", "ListDevices"], check=False)
    expect(allowed.returncode == 0, f"ListDevices through the pod's socket failed: {allowed.stderr}")
    refused = {
        "systemd StartTransientUnit": ["call", "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                       "org.freedesktop.systemd1.Manager", "StartTransientUnit",
                                       "ssa(sv)a(sa(sv))", "x.service", "fail", "0", "0"],
        "login1 PowerOff": ["call", "org.freedesktop.login1", "/org/freedesktop/login1",
                            "org.freedesktop.login1.Manager", "PowerOff", "b", "false"],
        "RequestName com.kunlunxin.xpud1": ["call", "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                            "org.freedesktop.DBus", "RequestName", "su",
                                            "com.kunlunxin.xpud1", "0"],
        "Simulator.SetHealth": ["call", "com.kunlunxin.xpud1", "/com/kunlunxin/xpud1",
                                "com.kunlunxin.xpud1.Simulator", "SetHealth", "uss", "0", "Unhealthy", "x"],
    }
    for what, argv in refused.items():
        result = run(["busctl", address, *argv], check=False)
        expect(result.returncode != 0, f"{what} was allowed through the pod's socket")


def container_pids(node):
    """containerd's task list: container ID -> host PID."""
    listing = node.ctr("task", "ls").stdout.splitlines()[1:]
    return {fields[0]: int(fields[1]) for fields in (line.split() for line in listing) if len(fields) >= 2}


def container_identity(pod):
    status = pod["status"]["containerStatuses"][0]
    return (pod["metadata"]["uid"], status["containerID"], status["restartCount"],
            "running" in status["state"])


def sections(text, headings):
    """The indented block under each heading of kubectl describe."""
    blocks = []
    for heading in headings:
        lines = text.splitlines()
        start = next(i for i, line in enumerate(lines) if line.startswith(heading))
        block = []
        for line in lines[start + 1:]:
            if not line.startswith(" "):
                break
            block.append(line)
        blocks.append("\n".join(block))
    return blocks


def expect(condition, message):
    if not condition:
        raise AssertionError(message)


SCENARIOS = [
    (1, "s1_install"), (2, "s2_capacity"), (3, "s3_allocation"), (4, "s4_fault"),
    (5, "s5_kubelet_restart"), (6, "s6_xpud_killed"), (7, "s7_prometheus_labels"), (8, "s8_token"),
    (10, "s10_bus_boundary"), (11, "s11_pod_security"), (13, "s13_cdi"), (9, "s9_upgrades"),
    (12, "s12_readme"),
]


def run_inside(source_dir, build_dir, run_dir, only):
    with open(os.path.join(run_dir, "images.json"), encoding="utf-8") as f:
        archives = json.load(f)
    programs = os.path.join(build_dir, "cluster", "programs")
    node = Node(source_dir, build_dir, programs, run_dir)
    # As the namespace's PID 1 this process gets no signal it has no handler for.
    signal.signal(signal.SIGTERM, stopped)
    failed = []
    started = time.monotonic()
    try:
        node.prepare_namespace()
        node.start_host_services()
        node.start_control_plane()
        node.start_runtime()
        for archive in archives.values():
            node.import_image(archive)
        node.start_kubelet()
        figure("node up (etcd to kubelet Ready, images imported)", time.monotonic() - started)
        suite = Suite(node, source_dir, archives)
        for number, method in SCENARIOS:
            if only and number not in only and number != 1:
                continue
            scenario = getattr(suite, method)
            print(f"== scenario {number}: {scenario.__doc__.split(chr(10))[0]}", flush=True)
            scenario_start = time.monotonic()
            try:
                node.check_components()
                scenario()
                print(f"   PASS ({time.monotonic() - scenario_start:.0f} s)", flush=True)
            except Stopped:
                raise
            except Exception as error:  # any failure of a scenario is reported and the next runs
                failed.append(number)
                print(f"   FAIL: {error}", flush=True)
                traceback.print_exc()
                node.print_logs(["kubelet", "xpud"], lines=30)
                print_shim_logs(node)
                if number in (1,):
                    break  # everything after needs the chart installed
    except Exception:
        traceback.print_exc()
        node.print_logs(lines=60)
        failed.append("setup")
    finally:
        node.stop()
    print("== figures")
    for name, seconds in FIGURES:
        print(f"  {name}: {seconds:.1f} s")
    if failed:
        print(f"FAIL: scenarios {failed}; logs in {node.log_dir} (kept with --keep)")
        return 1
    print(f"PASS: all scenarios ({time.monotonic() - started:.0f} s)")
    return 0


class Stopped(Exception):
    pass


def stopped(signal_number, frame):
    raise Stopped(f"signal {signal_number}")


def print_shim_logs(node):
    result = node.kubectl("logs", "-n", CHART_NAMESPACE, "--all-containers", "--prefix", "--tail=20",
                          "-l", "app.kubernetes.io/name=xpu-k8s-shim", check=False)
    print(result.stdout if hasattr(result, "stdout") else result)


if __name__ == "__main__":
    sys.exit("run through cluster_test.py")
