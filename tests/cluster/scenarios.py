"""The operator's scenarios on the real node (run inside the suite's namespaces).

Each scenario asserts with a deadline what an operator would see (kubectl, the pods' own output,
the exporter's /metrics, a real Prometheus) and prints its figures. They run in order on one
cluster: later ones build on the chart and pods the earlier ones left."""

import base64
import calendar
import json
import os
import re
import socket
import ssl
import stat
import sys
import threading
import time
import shutil
import signal
import subprocess
import traceback
import urllib.error
import urllib.parse
import urllib.request

import yaml

import footprint
import hami_specs
from arrivals import Arrivals, LABEL as ARRIVALS_KEY, LABEL_VALUE as ARRIVALS_VALUE
import images
from node import CDI_DIR, NODE_IP, NODE_NAME, Node
from processes import Deadline, run, timed, wait_for
from registry import USER, Registry, relabelled_archive

CHART_NAMESPACE = "kube-system"
RELEASE = "xpu"
RESOURCE = "kunlunxin.com/xpu"
NODE_LABEL = "kunlun-device-enable"
# The label that moves a node between the device plugin and the DRA driver with allocation=both.
SWITCH_LABEL = "kunlunxin.com/allocation"
ARRIVALS_LABEL = f"{ARRIVALS_KEY}={ARRIVALS_VALUE}"
# The device plugin's hand-over taint (k8s-shim/node_status/handover_taint.h).
HANDOVER_TAINT = "kunlunxin.com/xpu-handover"
DAEMONSETS = ["xpu-device-plugin-daemonset", "xpu-exporter", "xpu-rbac-token-gen"]
FIGURES = []


def figure(name, value, unit="s"):
    FIGURES.append((name, value, unit))
    print(f"  figure: {name}: {value:.1f} {unit}", flush=True)


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
        seen = {}

        def running():
            status = seen["status"] = self.pod(name, namespace)["status"]
            return status.get("phase") == "Running" and all(
                c.get("ready") for c in status.get("containerStatuses", [{}]))
        try:
            return wait_for(f"pod {namespace}/{name} running", running, timeout)
        except Deadline as error:
            # Where it stuck: unscheduled (and the scheduler's reason), or which container state.
            status = seen.get("status", {})
            summary = {"phase": status.get("phase"), "conditions": [
                {k: c.get(k) for k in ("type", "status", "reason", "message") if c.get(k)}
                for c in status.get("conditions", [])],
                "containers": [c.get("state") for c in status.get("containerStatuses", [])]}
            raise Deadline(f"{error}; its status: {json.dumps(summary)}") from None

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

    def helm_install(self, *values, check=True):
        return self.node.helm("upgrade", "--install", RELEASE, self.chart, "--namespace", CHART_NAMESPACE,
                              "--set", "global.image.pullPolicy=Never", *values, check=check)

    def workload(self, name, count, resource=RESOURCE):
        """A pod as in the replaced add-on's documentation: it asks for cards in its limits and
        prints what it got, then stays to hold them."""
        manifest = {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "restartPolicy": "Never",
                "terminationGracePeriodSeconds": 1,
                "containers": [workload_container({"limits": {resource: str(count)}})],
            },
        }
        self.node.kubectl("apply", "-f", "-", input_text=json.dumps(manifest))
        self.wait_pod_running(name)
        return self.pod(name)

    def workload_view(self, name):
        """What the container printed: {'XPU_VISIBLE_DEVICES': ..., 'CXPU_VISIBLE_DEVICES': ...,
        'KUNLUNXIN_XPU_UUIDS': ..., 'NODES': ...}"""
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
        started = time.monotonic()
        demo = self.workload("xpu-demo", 1)
        figure("the add-on's demo pod created to running (device plugin)", time.monotonic() - started)
        quad = self.workload("xpu-quad", 4)
        for pod in (demo, quad):
            name = pod["metadata"]["name"]
            uuids = self.allocated_ids(pod["metadata"]["uid"])
            indices = sorted(devices[u]["index"] for u in uuids)
            view = self.workload_view(name)
            shown = sorted(int(i) for i in view["XPU_VISIBLE_DEVICES"].split(",") if i)
            expect(shown == indices, f"{name}: XPU_VISIBLE_DEVICES {view['XPU_VISIBLE_DEVICES']} "
                                     f"but the kubelet allocated {indices}")
            # The vendor's runtime (xpu-container-runtime) injects what this names.
            expect(view["CXPU_VISIBLE_DEVICES"] == view["XPU_VISIBLE_DEVICES"],
                   f"{name}: CXPU_VISIBLE_DEVICES {view['CXPU_VISIBLE_DEVICES']}, "
                   f"XPU_VISIBLE_DEVICES {view['XPU_VISIBLE_DEVICES']}")
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

    def helm_test(self, timeout):
        """helm test with the validator's log; returns (passed, what helm printed)."""
        result = self.node.helm("test", RELEASE, "--namespace", CHART_NAMESPACE, "--logs",
                                "--timeout", f"{timeout}s", timeout=timeout + 60, check=False)
        return result.returncode == 0, (result.stdout + result.stderr).strip()

    def validator_passes(self, mode):
        started = time.monotonic()
        passed, output = self.helm_test(120)
        expect(passed, f"helm test on a healthy node ({mode}) failed:\n{output}")
        expect("xpu validation passed" in output and "ok: XPU_VISIBLE_DEVICES=" in output,
               f"helm test ({mode}) passed without the validator's report:\n{output}")
        figure(f"helm test on a healthy node, {mode}", time.monotonic() - started)
        report = [line for line in output.splitlines() if line.startswith(("ok: ", "FAILED: ", "xpu validation"))]
        for line in dict.fromkeys(report):  # helm prints the log once per hook it ran
            print(f"  {mode}: {line}")

    def s21_validator(self):
        """helm test: the validator pod gets a card through the device plugin and passes; on a
        node whose cards are all unhealthy it gets none and helm test fails; with allocation=dra
        it gets its card through a ResourceClaim and passes."""
        self.reset_to_device_plugin()
        self.validator_passes("devicePlugin")
        for index in range(8):
            self.node.set_health(index, False, "validator test")
        try:
            self.wait_allocatable(0, 60)
            started = time.monotonic()
            passed, output = self.helm_test(20)
            expect(not passed, f"helm test passed on a node without a healthy card:\n{output}")
            pod = self.pod("xpu-validator", CHART_NAMESPACE)
            conditions = {c["type"]: c for c in pod["status"].get("conditions", [])}
            scheduled = conditions.get("PodScheduled", {})
            expect(pod["status"]["phase"] == "Pending" and scheduled.get("status") == "False",
                   f"the validator on a node without a healthy card: {pod['status']}")
            figure("helm test on a node without a healthy card, to its failure", time.monotonic() - started)
            print(f"  broken node: helm: {output.splitlines()[-1] if output else ''}")
            print(f"  broken node: the validator pod: Pending, {scheduled.get('message', '')}")
        finally:
            for index in range(8):
                self.node.set_health(index, True)
            self.wait_allocatable(8, 60)
        self.node.kubectl("delete", "pod", "-n", CHART_NAMESPACE, "xpu-validator", "--wait=true", "--timeout=60s")
        try:
            self.switch_to_dra()
            self.validator_passes("dra")
            # The claim made from the template goes with the finished pod; its name stays.
            statuses = self.pod("xpu-validator", CHART_NAMESPACE)["status"].get("resourceClaimStatuses", [])
            expect([c["name"] for c in statuses] == ["xpu"] and statuses[0].get("resourceClaimName"),
                   f"helm test with allocation=dra: the pod's claims {statuses}")
            print(f"  dra: the validator's claim {statuses[0]['resourceClaimName']}")
        finally:
            self.node.kubectl("delete", "pod", "-n", CHART_NAMESPACE, "xpu-validator", "--wait=true",
                              "--timeout=60s", check=False)
            self.node.kubectl("delete", "resourceclaimtemplate", "-n", CHART_NAMESPACE, "xpu-validator",
                              "--ignore-not-found", check=False)
            self.helm_install("--reuse-values", "--set", "allocation=devicePlugin")
            wait_for("three DaemonSets ready", self.daemonsets_ready, 120)
            self.wait_plugin_serving()
            self.wait_allocatable(8, 90)

    def s22_registry(self):
        """Installed the way users install: the image index and the packaged chart pushed to an OCI
        registry with TLS and a password; `helm install oci://...` with global.image.host at the
        registry and a pull secret: the pods pull their image from it and serve; a pod without
        the secret is refused the same image."""
        self.remove_chart_and_pods()
        registry = Registry(self.node, os.path.join(self.node.build_dir, "cluster", "tools", "registry"), NODE_IP)
        registry.start()
        helm_home = os.path.join(self.node.run_dir, "helm-home")
        # The README's block as an operator runs it: their registry's address and credentials in
        # the environment, its CA among those the tools trust (Go's SSL_CERT_FILE, which helm,
        # skopeo and kubectl read), helm's and skopeo's state in this run's directories.
        bundle = os.path.join(registry.directory, "ca-bundle.crt")
        with open(bundle, "w", encoding="utf-8") as out:
            for path in ("/etc/ssl/certs/ca-certificates.crt", self.node.pki.ca_cert):
                with open(path, encoding="utf-8") as f:
                    out.write(f.read())
        env = {"REGISTRY": registry.host, "REGISTRY_USER": USER, "REGISTRY_PASSWORD": registry.password,
               "SSL_CERT_FILE": bundle, "HELM_CACHE_HOME": f"{helm_home}/cache",
               "HELM_CONFIG_HOME": f"{helm_home}/config", "HELM_DATA_HOME": f"{helm_home}/data"}
        image_dir = os.path.join(registry.directory, "image")
        os.makedirs(image_dir, exist_ok=True)
        relabelled_archive(self.archives["shim"], os.path.join(image_dir, os.path.basename(self.archives["shim"])),
                           "com.kunlunxin.xpu-test", "registry scenario")
        try:
            with open(os.path.join(self.chart, "Chart.yaml"), encoding="utf-8") as f:
                tag = str(yaml.safe_load(f)["appVersion"])
            self.node.kubectl("label", "node", NODE_NAME, f"{NODE_LABEL}=enable", "--overwrite")
            started = time.monotonic()
            output = self.run_readme_block("### Installing from your own registry", env=env,
                                           replace={"/tmp/xpu-image/": f"{image_dir}/",
                                                    "/tmp/xpu-chart": os.path.join(registry.directory, "chart")})
            for line in output.splitlines():
                if line.startswith(("Login Succeeded", "Writing manifest", "Pushed:", "Digest:", "STATUS:",
                                    "secret/", "Successfully packaged")):
                    print(f"  README block: {line}")
            wait_for("three DaemonSets ready from the registry's image", self.daemonsets_ready, 180)
            self.wait_plugin_serving()
            self.wait_allocatable(8, 90)
            figure("the README's registry block (push, helm install oci://) to 8 cards allocatable",
                   time.monotonic() - started)
            wanted = f"{registry.host}/kunlunxin/xpu-k8s-shim:{tag}"
            for pod in self.shim_pods():
                status = pod["status"]["containerStatuses"][0]
                expect(status["image"] == wanted and status["imageID"].startswith(f"{registry.host}/kunlunxin/xpu-k8s-shim@sha256:"),
                       f"{pod['metadata']['name']}: image {status['image']}, id {status['imageID']}, expected {wanted}")
            # The node's pulls: containerd's GETs of the manifest, as the pull secret's user.
            pulls = [line for line in registry.log_lines("http.request.method=GET")
                     if f"auth.user.name={USER} " in line and "/v2/kunlunxin/xpu-k8s-shim/manifests/" in line
                     and "http.request.useragent=containerd/" in line and "http.response.status=200" in line]
            expect(pulls, "the registry's log shows no manifest fetched by containerd with the pull secret's user")
            print(f"  pods run {wanted} ({self.shim_pods()[0]['status']['containerStatuses'][0]['imageID'].split('@')[1][:19]}...)")

            # The same image without the pull secret: the registry refuses it.
            # Always: the image is on the node now, and IfNotPresent would not ask the registry.
            self.node.kubectl("run", "xpu-no-secret", "-n", "default", f"--image={wanted}", "--restart=Never",
                              "--image-pull-policy=Always", "--command", "--", "/usr/bin/xpu-k8s-shim", "--version")
            def refused():
                statuses = self.pod("xpu-no-secret").get("status", {}).get("containerStatuses", [])
                waiting = statuses[0]["state"].get("waiting", {}) if statuses else {}
                return waiting if waiting.get("reason") in ("ErrImagePull", "ImagePullBackOff") else None
            waiting = wait_for("the pod without the pull secret refused its image", refused, 90)
            print(f"  without the secret: {waiting['reason']}: {waiting.get('message', '')[:160]}")
        finally:
            self.node.kubectl("delete", "pod", "-n", "default", "xpu-no-secret", "--ignore-not-found", "--wait=true",
                              check=False)
            self.node.helm("uninstall", RELEASE, "--namespace", CHART_NAMESPACE, "--wait", check=False)
            self.node.kubectl("delete", "secret", "-n", CHART_NAMESPACE, "xpu-registry", "--ignore-not-found",
                              check=False)
            registry.stop()
            self.node.kubectl("label", "node", NODE_NAME, f"{NODE_LABEL}=enable", "--overwrite")
            self.helm_install()
            wait_for("three DaemonSets ready", self.daemonsets_ready, 180)
            self.wait_plugin_serving()
            self.wait_allocatable(8, 90)

    def reset_to_device_plugin(self):
        """Whatever the scenarios before left: the release in devicePlugin mode, every card free."""
        self.node.kubectl("delete", "pod", "-n", "default", "--all", "--wait=true", "--timeout=90s")
        self.node.kubectl("label", "node", NODE_NAME, f"{NODE_LABEL}=enable", "--overwrite")
        self.helm_install("--reuse-values", "--set", "allocation=devicePlugin")
        wait_for("three DaemonSets ready", self.daemonsets_ready, 180)
        self.wait_plugin_serving()
        self.wait_allocatable(8, 90)

    def switch_to_dra(self):
        """helm upgrade to allocation=dra, until the driver serves and publishes the 8 cards."""
        self.helm_install("--reuse-values", "--set", "allocation=dra")
        wait_for("the DRA driver ready", self.dra_driver_ready, 120)
        wait_for("a ResourceSlice with the node's 8 cards", lambda: len(self.dra_devices()) == 8, 90)

    def role_pods(self):
        """{role: pod} of the chart's running pods, the role named by the pod's component label."""
        return {p["metadata"]["labels"]["app.kubernetes.io/component"]: p for p in self.shim_pods()
                if p["status"].get("phase") == "Running"}

    def scrape_for(self, seconds, workers=4):
        """`workers` clients scraping /metrics back to back for `seconds`; returns the count."""
        url = f"http://{self.exporter_address()}/metrics"
        deadline = time.monotonic() + seconds
        counts = []

        def scrape():
            done = 0
            while time.monotonic() < deadline:
                with urllib.request.urlopen(url, timeout=10) as response:
                    response.read()
                done += 1
            counts.append(done)
        threads = [threading.Thread(target=scrape) for _ in range(workers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return sum(counts)

    def s23_footprint(self):
        """What a node costs: each role's memory from its pod's cgroup (the working set, as the
        kubelet counts it, and the peak since the pod started and through a 30 s scrape storm)
        and xpud's and the proxy's (VmRSS, VmHWM); the chart's requests and limits of the roles
        the replaced add-on did not size keep their stated margin over the peaks (README: "What a
        node costs")."""
        self.reset_to_device_plugin()
        with open(os.path.join(self.chart, "values.yaml"), encoding="utf-8") as f:
            values = yaml.safe_load(f)
        sized = {"device-plugin": values["devicePlugin"]["resources"],
                 "token-sync": values["rbacTokenGen"]["resources"],
                 "dra-driver": values["dra"]["resources"],
                 "exporter": values["exporter"]["resources"]}
        rows = {}  # name: (idle, through the storm, peak), bytes
        pods = self.role_pods()
        started_peak = {role: footprint.pod_memory(pod["metadata"]["uid"])["peak"] for role, pod in pods.items()}
        idle = {role: footprint.pod_memory(pod["metadata"]["uid"])["working_set"] for role, pod in pods.items()}
        for pod in pods.values():
            footprint.reset_pod_peak(pod["metadata"]["uid"])
        started = time.monotonic()
        scrapes = self.scrape_for(30)
        figure("scrapes in the storm (4 clients, back to back)", scrapes / (time.monotonic() - started), "per s")
        for role, pod in pods.items():
            loaded = footprint.pod_memory(pod["metadata"]["uid"])
            rows[role] = (idle[role], loaded["working_set"], max(started_peak[role], loaded["peak"]))
        for name in ("xpud", "xpud-api-proxy"):
            memory = footprint.process_memory(self.node.components[name].process.pid)
            rows[name] = (memory["rss"], memory["rss"], memory["peak"])

        try:
            self.switch_to_dra()
            driver = footprint.pod_memory(self.role_pods()["dra-driver"]["metadata"]["uid"])
            rows["dra-driver"] = (driver["working_set"], driver["working_set"], driver["peak"])
        finally:
            self.reset_to_device_plugin()

        mib = footprint.MIB
        print(f"  {'MiB':16} {'idle':>8} {'scraped':>8} {'peak':>8}  chart request / limit")
        for name, (steady, scraped, peak) in rows.items():
            chart = sized.get(name)
            print(f"  {name:16} {steady / mib:8.1f} {scraped / mib:8.1f} {peak / mib:8.1f}  " +
                  (f"{chart['requests']['memory']} / {chart['limits']['memory']}" if chart else "(host)"))
            figure(f"memory of {name}, idle", steady / mib, "MiB")
            figure(f"memory of {name}, peak", peak / mib, "MiB")
        total = sum(row[1] for name, row in rows.items() if name != "dra-driver")
        figure("the node's total in device-plugin mode, scraped", total / mib, "MiB")
        # The margins the chart's README states: a request of at least twice the peak and a limit
        # of at least eight times it (the exporter keeps the replaced add-on's sizes, far above).
        for role, resources in sized.items():
            peak = rows[role][2]
            request = parse_quantity(resources["requests"]["memory"])
            limit = parse_quantity(resources["limits"]["memory"])
            expect(request >= 2 * peak and limit >= 8 * peak,
                   f"{role}: peak {peak / mib:.1f} MiB, chart request {resources['requests']['memory']} "
                   f"(needs 2x) and limit {resources['limits']['memory']} (needs 8x)")

    def s27_device_metadata(self):
        """Device metadata (KEP-5304) with allocation=dra: a pod with a claim of its own and one
        from a template reads each claim's file at the path k8s.io/dynamic-resource-allocation
        v0.37.2 gives it (api/metadata: resourceclaims/<claim>/<request>/ and
        resourceclaimtemplates/<pod's claim name>/<request>/, xpu.kunlunxin.com-metadata.json):
        a stream of the v1beta1 then the v1alpha1 DeviceMetadata, naming the claim (its UID, the
        pod's name for the template's claim), the device the scheduler allocated and its
        attributes as the ResourceSlice publishes them (pciBusID, model, uuid, index, ...; not
        healthy) with the card's memory; the file is read-only in the container; on the node it
        is under the plugin directory while the pod runs and gone once the claim is unprepared."""
        self.reset_to_device_plugin()
        template = claim_template("xpu-metadata-tpl", 1)
        direct = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                  "metadata": {"name": "xpu-metadata", "namespace": "default"},
                  "spec": template["spec"]["spec"]}
        paths = {"mine": f"{METADATA_CONTAINER_DIR}/resourceclaims/xpu-metadata/xpus/{DRA_DRIVER}-metadata.json",
                 "inline": f"{METADATA_CONTAINER_DIR}/resourceclaimtemplates/inline/xpus/{DRA_DRIVER}-metadata.json"}
        script = "".join(f"echo '--- {name}'; cat {path}; echo '--- {name} write'; "
                         f"(echo x >> {path}) 2>&1 || echo refused; "
                         for name, path in paths.items())
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "xpu-metadata", "namespace": "default"},
               "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 1,
                        "resourceClaims": [{"name": "mine", "resourceClaimName": "xpu-metadata"},
                                           {"name": "inline", "resourceClaimTemplateName": "xpu-metadata-tpl"}],
                        "containers": [{"name": "main", "image": images.BUSYBOX, "imagePullPolicy": "Never",
                                        "command": ["sh", "-c", script + "echo '--- end'; exec sleep 100000"],
                                        "resources": {"claims": [{"name": "mine"}, {"name": "inline"}]}}]}}
        try:
            self.switch_to_dra()
            devices = self.dra_devices()
            for document in (template, direct, pod):
                self.node.kubectl("apply", "-f", "-", input_text=json.dumps(document))
            self.wait_pod_running("xpu-metadata")
            log = wait_for("the pod's output", lambda: text if "--- end" in (
                text := self.pod_log("xpu-metadata")) else None, 30)
            parts = dict(re.findall(r"^--- (\S+(?: write)?)\n(.*?)(?=^--- )", log, re.M | re.S))
            statuses = self.pod("xpu-metadata")["status"]["resourceClaimStatuses"]
            generated = next(c["resourceClaimName"] for c in statuses if c["name"] == "inline")
            host_files = {}
            for name, claim_name in (("mine", "xpu-metadata"), ("inline", generated)):
                claim = self.node.get_json("resourceclaim", "-n", "default", claim_name)
                results = claim["status"]["allocation"]["devices"]["results"]
                expect(len(results) == 1, f"claim {claim_name}: {results}")
                device = results[0]["device"]
                objects = metadata_objects(parts.get(name, ""))
                expect([o.get("apiVersion") for o in objects] == METADATA_VERSIONS,
                       f"{paths[name]}: versions {[o.get('apiVersion') for o in objects]}:\n{parts.get(name)}")
                expect(all({k: v for k, v in o.items() if k != "apiVersion"} ==
                           {k: v for k, v in objects[0].items() if k != "apiVersion"} for o in objects),
                       f"{paths[name]}: the versions differ:\n{parts.get(name)}")
                got = objects[0]
                expect(got["kind"] == "DeviceMetadata" and got["metadata"] == {
                    "name": claim_name, "namespace": "default", "uid": claim["metadata"]["uid"], "generation": 1},
                       f"{paths[name]}: metadata {got.get('kind')} {got.get('metadata')}")
                expect(got.get("podClaimName") == (None if name == "mine" else "inline"),
                       f"{paths[name]}: podClaimName {got.get('podClaimName')}")
                requests = got["requests"]
                expect(len(requests) == 1 and requests[0]["name"] == "xpus" and len(requests[0]["devices"]) == 1,
                       f"{paths[name]}: requests {requests}")
                entry = requests[0]["devices"][0]
                expect((entry["driver"], entry["pool"], entry["name"]) == (DRA_DRIVER, NODE_NAME, device),
                       f"{paths[name]}: device {entry}, allocated {device} in {NODE_NAME}")
                published = devices[device]
                wanted = {k: v for k, v in published["attributes"].items() if k != "healthy"}
                wanted["memory"] = {"int": parse_quantity(published["capacity"]["memory"]["value"])}
                expect(entry.get("attributes") == wanted,
                       f"{paths[name]}: attributes {entry.get('attributes')}, the slice's {wanted}")
                expect(all(k in wanted for k in (PCI_BUS_ID, "model", "uuid", "index")),
                       f"{device}: the slice lacks an attribute the scenario reads: {sorted(wanted)}")
                write = parts.get(f"{name} write", "")
                expect("refused" in write and "Read-only file system" in write,
                       f"{paths[name]}: a write in the container: {write!r}")
                host_files[name] = os.path.join(DRA_PLUGIN_DIR, "dra-device-metadata", f"default_{claim_name}",
                                                "xpus", "metadata.json")
                expect(os.path.isfile(host_files[name]), f"{host_files[name]} missing while the pod runs")
                print(f"  {paths[name]}: {device} {dra_attribute(entry, PCI_BUS_ID)} "
                      f"{dra_attribute(entry, 'model')} {dra_attribute(entry, 'uuid')}, "
                      f"{len(entry['attributes'])} attributes as the slice's, {len(objects)} versions, read-only")
            started = time.monotonic()
            self.delete_pods("xpu-metadata")
            wait_for("both claims' metadata files removed",
                     lambda: not any(os.path.exists(os.path.dirname(os.path.dirname(f))) for f in host_files.values()),
                     60)
            figure("device metadata pod deleted to its files removed", time.monotonic() - started)
        finally:
            self.node.kubectl("delete", "pod", "-n", "default", "xpu-metadata", "--ignore-not-found",
                              "--wait=true", "--timeout=60s", check=False)
            self.node.kubectl("delete", "resourceclaim", "-n", "default", "xpu-metadata", "--ignore-not-found",
                              check=False)
            self.node.kubectl("delete", "resourceclaimtemplate", "-n", "default", "xpu-metadata-tpl",
                              "--ignore-not-found", check=False)
            self.reset_to_device_plugin()

    def upgrade_xpud(self, watch):
        """xpud replaced as a package upgrade replaces it (systemd stops the old one with SIGTERM
        and starts the new): returns the seconds xpud was away; `watch` runs until the shim's
        grace period after it is over."""
        started = time.monotonic()
        self.node.components["xpud"].stop()
        self.node.components["xpud"].start()
        wait_for("xpud back on the bus",
                 lambda: run([self.node.binary("xpuctl/xpuctl"), "list"], check=False).returncode == 0, 30)
        away = time.monotonic() - started
        # The roles keep the last view for their grace period (10 s): watch past it.
        watch(time.monotonic() + 15)
        return away

    def upgrade_chart(self, verbosity):
        """helm upgrade with a changed pod template (as a new chart or image does): the
        DaemonSets roll; returns the seconds to the plugin serving 8 cards again."""
        started = time.monotonic()
        self.helm_install("--reuse-values", "--set", f"config.logVerbose={verbosity}")
        wait_for("the DaemonSets rolled out", self.daemonsets_ready, 180)
        self.wait_plugin_serving()
        self.wait_allocatable(8, 90)
        return time.monotonic() - started

    def s24_upgrades_under_pods(self):
        """Upgrading under running pods, in both orders (xpud's package then the chart, and the
        chart then xpud's package): the pods' containers run on untouched with their cards, the
        node advertises every card while xpud is replaced, and a pod created after each step gets
        a card."""
        self.reset_to_device_plugin()
        devices = {d["uuid"]: d for d in self.devices()}
        holders = {"xpu-upgrade-one": 1, "xpu-upgrade-two": 2}
        for name, count in holders.items():
            self.workload(name, count)
        before = {name: (container_identity(self.pod(name)),
                         self.allocated_ids(self.pod(name)["metadata"]["uid"])) for name in holders}
        lowest = [8]

        def watch(until):
            while time.monotonic() < until:
                lowest[0] = min(lowest[0], self.allocatable())
                time.sleep(0.5)  # a sampling interval, not a wait for a condition

        def expect_pods_untouched(step):
            for name in holders:
                identity, cards = before[name]
                now = container_identity(self.pod(name))
                expect(now == identity, f"after {step}: {name}'s container {identity} became {now}")
                expect(self.allocated_ids(self.pod(name)["metadata"]["uid"]) == cards,
                       f"after {step}: {name}'s cards in the kubelet's checkpoint changed")
                self.expect_cards_shown(name, cards, devices)
            expect(lowest[0] == 8, f"after {step}: the node advertised {lowest[0]} cards at its lowest "
                                   "while xpud was replaced")
            newcomer = f"xpu-after-{step.replace(' ', '-')}"
            self.workload(newcomer, 1)
            self.delete_pods(newcomer)

        try:
            for order in (("xpud", "chart"), ("chart", "xpud")):
                for step in order:
                    if step == "xpud":
                        away = self.upgrade_xpud(watch)
                        figure(f"xpud upgraded ({' then '.join(order)}): away", away)
                    else:
                        seconds = self.upgrade_chart(4 if order[0] == "xpud" else 5)
                        figure(f"chart upgraded ({' then '.join(order)}): rolled out to 8 cards", seconds)
                    expect_pods_untouched(f"{step} in {'-'.join(order)}")
                print(f"  {' then '.join(order)}: pods untouched, 8 cards advertised throughout, a new pod served")
            self.surge_rollout()
            expect_pods_untouched("surge rollout")
            print("  surge rollout: pods untouched, a new pod served")
        finally:
            self.delete_pods(*holders)

    def surge_rollout(self):
        """A rolling update of the device plugin whose new pod starts beside the old one
        (maxSurge 1, as an operator may patch the DaemonSet): the new plugin takes the socket over
        and registers once the old one's server has stopped (a 1.37 kubelet refuses a Register
        while the old stream is open, or loses track of the path: the refusal check after the
        scenario catches both), and the node keeps its ready label and carries no hand-over taint
        after it (the displaced plugin leaves both to the one that serves)."""
        daemonset = DAEMONSETS[0]

        def strategy(surge, unavailable):
            return json.dumps({"spec": {"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {
                "maxSurge": surge, "maxUnavailable": unavailable}}}})

        def plugin_pods():
            return [p["metadata"]["name"] for p in self.shim_pods()
                    if p["metadata"]["name"].startswith("xpu-device-plugin")]
        wait_for(f"{READY_LABEL}=true before the rollout", lambda: self.ready_label() == "true", 60)
        before = set(plugin_pods())
        self.node.kubectl("patch", "daemonset", "-n", CHART_NAMESPACE, daemonset, "--type=merge",
                          "-p", strategy(1, 0))
        try:
            self.node.kubectl("rollout", "restart", "daemonset", "-n", CHART_NAMESPACE, daemonset)
            self.wait_rolled_out()
            after = plugin_pods()
            expect(len(after) == 1 and after[0] not in before, f"the plugin pods {before} became {after}")
            self.wait_plugin_serving()
            self.wait_allocatable(8, 90)
            log = self.node.kubectl("logs", "-n", CHART_NAMESPACE, after[0])
            took_over = "in place of another process's server" in log
            print(f"  surge rollout: the new plugin {'took the socket over from the old one, which still served' if took_over else 'started after the old one had stopped serving'}")
            wait_for("no hand-over taint after the surge rollout", lambda: not [
                t for t in self.node.get_json("node", NODE_NAME)["spec"].get("taints") or []
                if t["key"] == HANDOVER_TAINT], 60)
            expect(self.ready_label() == "true",
                   f"after the surge rollout the node's {READY_LABEL} is {self.ready_label()!r}")
        finally:
            self.node.kubectl("patch", "daemonset", "-n", CHART_NAMESPACE, daemonset, "--type=merge",
                              "-p", strategy(0, 1))

    def s26_mode_switches(self):
        """Pods of the add-on's spec (limits kunlunxin.com/xpu: 1, no controller) arriving one a
        second, each holding its card 3 s, through every way a node changes hands: devicePlugin to
        dra and back, a rolling update of the device plugin, and allocation=both with the node
        relabelled to the DRA driver and back. None is rejected at admission, no card is held by
        two pods at once, all finish, and every one can be deleted."""
        self.reset_to_device_plugin()
        both = ["--set", "allocation=both", "--set", f"dra.nodeSelector.{SWITCH_LABEL.replace('.', chr(92) + '.')}=dra"]
        with Arrivals(self.node, RESOURCE) as arrivals:
            def hold(seconds):
                deadline = time.monotonic() + seconds
                while time.monotonic() < deadline:
                    time.sleep(0.5)  # pods keep arriving meanwhile; nothing to wait for

            def timed_step(name, action):
                arrivals.during(name)
                started = time.monotonic()
                action()
                figure(f"mode switch: {name}", time.monotonic() - started)
                hold(10)

            def to_dra():
                self.helm_install("--reuse-values", "--set", "allocation=dra")
                wait_for("the DRA driver ready", self.dra_driver_ready, 120)
                wait_for("the device plugin gone", lambda: not any(
                    p["metadata"]["name"].startswith("xpu-device-plugin") for p in self.all_shim_pods()), 120)

            def to_device_plugin(*extra):
                self.helm_install("--reuse-values", "--set", "allocation=devicePlugin", *extra)
                wait_for("the DaemonSets ready", self.daemonsets_ready, 180)
                self.wait_plugin_serving()

            def rolling_update():
                self.node.kubectl("rollout", "restart", "daemonset", "-n", CHART_NAMESPACE, DAEMONSETS[0])
                self.wait_rolled_out()
                self.wait_plugin_serving()

            def label(value):
                def relabel():
                    if value:
                        self.node.kubectl("label", "node", NODE_NAME, f"{SWITCH_LABEL}={value}", "--overwrite")
                    else:
                        self.node.kubectl("label", "node", NODE_NAME, f"{SWITCH_LABEL}-")
                    if value == "dra":
                        wait_for("the DRA driver ready", self.dra_driver_ready, 120)
                    else:
                        self.wait_plugin_serving(120)
                return relabel

            try:
                hold(5)
                timed_step("devicePlugin to dra", to_dra)
                timed_step("dra to devicePlugin", to_device_plugin)
                timed_step("rolling update of the device plugin", rolling_update)
                timed_step("devicePlugin to both (the node stays with the device plugin)",
                           lambda: (self.helm_install("--reuse-values", *both), self.wait_rolled_out(),
                                    self.wait_plugin_serving()))
                timed_step("both: node relabelled to the DRA driver", label("dra"))
                timed_step("both: node relabelled back to the device plugin", label(None))
                arrivals.during("after the switches")
                arrivals.stop_arriving()
                started = time.monotonic()
                arrivals.wait_all_finished(240)
                figure("mode switch: the last arrivals finished", time.monotonic() - started)
            finally:
                arrivals.stop_arriving()
                self.node.kubectl("label", "node", NODE_NAME, f"{SWITCH_LABEL}-", check=False)
                started = time.monotonic()
                self.node.kubectl("delete", "pod", "-n", "default", "-l", f"{ARRIVALS_LABEL}", "--wait=true",
                                  "--timeout=120s", check=False, timeout=150)
                left = self.node.get_json("pods", "-n", "default", "-l", ARRIVALS_LABEL)["items"]
                figure("mode switch: every arrival deleted", time.monotonic() - started)
                # The chart's defaults again: with --reuse-values a `dra.nodeSelector=null` leaves
                # the release's selector in place (Helm 3 coalesces the old values first).
                self.helm_install("--reset-values", "--set", "allocation=devicePlugin")
                wait_for("the DaemonSets ready", self.daemonsets_ready, 180)
                self.wait_plugin_serving()
            print(f"  {arrivals.created} pods arrived: {arrivals.by_step()}")
            expect(not arrivals.failures, f"the arrivals' own errors: {arrivals.failures[:5]}")
            rejected = arrivals.rejected()
            expect(not rejected, f"{len(rejected)} of {arrivals.created} pods failed: " + "; ".join(
                f"{name} ({r['step']}): {r['reason']} {r['message'][:120]}" for name, r in sorted(rejected.items())[:8]))
            twice = arrivals.cards_held_twice()
            expect(not twice, f"{len(twice)} times a card was held by two pods at once: " + "; ".join(
                f"card {card}: {arrivals.describe(first)} and {arrivals.describe(second)}"
                for card, first, second in twice[:4]))
            expect(not left, f"pods that could not be deleted: {[p['metadata']['name'] for p in left]}")

    def all_shim_pods(self):
        """The chart's pods, terminating ones included."""
        return self.node.get_json("pods", "-n", CHART_NAMESPACE)["items"]

    def s5_kubelet_restart(self):
        """Restarting the kubelet: the plugin registers again, once, running pods are untouched,
        and the exporter's pod-resources connection comes back."""
        before = {name: container_identity(self.pod(name)) for name in ("xpu-demo", "xpu-quad")}
        # Three times: registering twice with one kubelet is a race (the kubelet cleans the
        # directory and listens while the plugin registers), and a 1.37 kubelet refuses the
        # second and then never lets the plugin's socket go (scenario 13 found it wedged).
        for restart in range(3):
            log_before = os.path.getsize(self.node.components["kubelet"].log_path)
            started = time.monotonic()
            self.node.components["kubelet"].restart()

            def kubelet_log_since():
                with open(self.node.components["kubelet"].log_path, "rb") as log:
                    log.seek(log_before)
                    return log.read()
            wait_for("the device plugin registered with the new kubelet",
                     lambda: b"Got registration request from device plugin with resource" in kubelet_log_since(), 90)
            figure("kubelet restart to the plugin's registration", time.monotonic() - started)
            self.wait_allocatable(8, 60)
            figure("kubelet restart to allocatable 8", time.monotonic() - started)
            after = {name: container_identity(self.pod(name)) for name in before}
            expect(after == before, f"pods changed across the kubelet restart: {before} -> {after}")
            wait_for("xpu_exporter_podresources_up 1",
                     lambda: "xpu_exporter_podresources_up 1" in self.exporter_metrics(), 90)
            figure("kubelet restart to podresources_up 1", time.monotonic() - started)
            log = kubelet_log_since()
            registrations = log.count(b"Got registration request from device plugin with resource")
            expect(registrations == 1 and b"device plugin already connected" not in log,
                   f"restart {restart + 1}: the plugin registered {registrations} times with one kubelet:\n"
                   + "\n".join(line.decode(errors="replace") for line in log.splitlines()
                                if b"registration request" in line or b"already connected" in line))

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
        # Refused by the API server's authorizer for want of nodes/proxy, which its answer names:
        # not a malformed request that no rights would let through.
        exec_status, exec_body = self.exec_through_nodes_proxy(token)
        expect(exec_status == 403 and 'cannot get resource "nodes/proxy"' in status_message(exec_body),
               f"a WebSocket exec through nodes/{NODE_NAME}/proxy with the synced token answered "
               f"{exec_status}: {exec_body[:300]!r}")
        can_proxy = run(base + ["auth", "can-i", "get", "nodes", "--subresource=proxy"], check=False)
        expect(can_proxy.stdout.strip() == "no", f"can-i get nodes/proxy: {can_proxy.stdout!r}")
        print("  synced token: a WebSocket exec through nodes/<node>/proxy is refused (403)")

        # /xpu-runtime as the kubelet mounts it, but writable by others or owned by another user:
        # either could swap auth/ for a directory with their own kubeconfig, so token-sync writes
        # nothing and says why; once the directory is root's 0755 again, the new pod's token lands.
        def token_sync_pod():
            pods = [p for p in self.shim_pods() if p["metadata"]["name"].startswith("xpu-rbac-token-gen")]
            return pods[0]["metadata"]["name"] if pods else None
        tamperings = [
            ("mode 0777", lambda: os.chmod("/xpu-runtime", 0o777),
             "/host/xpu-runtime: is writable by its group or by others (mode 0777)"),
            ("owned by uid 1000", lambda: os.chown("/xpu-runtime", 1000, 1000),
             "/host/xpu-runtime: is owned by uid 1000, who could replace"),
        ]
        for name, tamper, refusal in tamperings:
            token = open(token_file, encoding="utf-8").read().strip()
            old_pod = token_sync_pod()
            tamper()
            try:
                self.node.kubectl("delete", "pod", "-n", CHART_NAMESPACE, "--wait=true", "--timeout=60s", old_pod)

                def refused():
                    pod_name = token_sync_pod()
                    if pod_name is None or pod_name == old_pod:
                        return False
                    log = self.node.kubectl("logs", "-n", CHART_NAMESPACE, pod_name, check=False).stdout
                    return refusal in log
                wait_for(f"token-sync refusing /xpu-runtime {name}", refused, 90)
                expect(open(token_file, encoding="utf-8").read().strip() == token,
                       f"token-sync wrote into /xpu-runtime/auth while /xpu-runtime was {name}")
            finally:
                os.chown("/xpu-runtime", 0, 0)
                os.chmod("/xpu-runtime", 0o755)
            wait_for(f"the new pod's token once /xpu-runtime is root's 0755 again (after {name})",
                     lambda: open(token_file, encoding="utf-8").read().strip() != token, 60)
            print(f"  /xpu-runtime {name}: token-sync refused to write; root's 0755 again: the new token landed")

    def s10_bus_boundary(self):
        """What the shim's pods can reach on the host: their mounts, and that calls outside xpud's
        read-only API are refused on the socket they see (ConfigureVirtualFunctions too, even to
        root); the proxy's SR-IOV socket is root's alone on the node and in no pod."""
        check_sriov_socket_on_the_node()
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
                # An API token only where the role calls the API server (the chart's default RBAC;
                # the device plugin writes its node's status, nodeStatus.enabled).
                component = pod["metadata"]["labels"]["app.kubernetes.io/component"]
                has_token = os.path.exists(
                    in_container(root, "/var/run/secrets/kubernetes.io/serviceaccount/token"))
                expect(has_token == (component in ("token-sync", "dra-driver", "device-plugin")),
                       f"{pod['metadata']['name']} ({component}): API token in the container: {has_token}")
                # The chart's defaults: no devicePlugin.reconfigVxpu, so no pod has the socket
                # that carries ConfigureVirtualFunctions.
                expect(not os.path.exists(f"{root}{API_PROXY_SRIOV_DIR}"),
                       f"{pod['metadata']['name']} sees {API_PROXY_SRIOV_DIR} without reconfigVxpu")
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

    def wait_shim_pods_gone(self):
        # Gone, terminating ones too (shim_pods() leaves those out): a plugin removes its socket as
        # it stops, which is after its pod was marked for deletion.
        wait_for("shim pods gone", lambda: not self.node.get_json(
            "pods", "-n", CHART_NAMESPACE, "-l", "app.kubernetes.io/name=xpu-k8s-shim")["items"], 90)

    def remove_chart_and_pods(self):
        """No release and no workload pods; allocatable 0, since the node's status lags the
        plugin's going (a plugin started next could otherwise be taken as serving). Once the
        release's pods are gone, the node carries no hand-over taint: a plugin that stops with no
        DaemonSet left to serve after it raises none (an uninstall takes its rights to remove it
        a moment later, and a node left so takes no pod that does not tolerate it)."""
        self.node.helm("uninstall", RELEASE, "--namespace", CHART_NAMESPACE, "--wait", check=False)
        self.node.kubectl("delete", "pods", "--all", "-n", "default", "--wait=true", "--timeout=90s")
        self.wait_allocatable(0, 90)
        self.wait_shim_pods_gone()
        taints = self.node.get_json("node", NODE_NAME)["spec"].get("taints") or []
        expect(not [t for t in taints if t["key"] == HANDOVER_TAINT],
               f"helm uninstall left the node tainted: {taints}")

    def wait_rolled_out(self):
        wait_for("the DaemonSets rolled out", self.daemonsets_ready, 180)
        wait_for("one pod per DaemonSet", lambda: len(self.shim_pods()) == len(DAEMONSETS), 120)

    def exec_through_nodes_proxy(self, token):
        """A WebSocket exec into the token-sync pod through the API server's nodes/<node>/proxy
        with the given bearer token: the answer's status (403 when the API server's authorizer
        refuses it) and body."""
        pods = [p for p in self.shim_pods() if p["metadata"]["name"].startswith("xpu-rbac-token-gen")]
        expect(pods, "no xpu-rbac-token-gen pod to exec into")
        pod = pods[0]["metadata"]["name"]
        container = pods[0]["spec"]["containers"][0]["name"]
        return websocket_get(
            # The kubelet's own parameter names (output, not the API server's stdout).
            f"/api/v1/nodes/{NODE_NAME}/proxy/exec/{CHART_NAMESPACE}/{pod}/{container}?command=true&output=1",
            token, "/xpu-runtime/auth/ca.crt")

    def s9_upgrades(self):
        """helm upgrade to useDetailResName, to enableXpuShare, to rbac.compat=true, and helm
        uninstall: each lands cleanly."""
        model = self.devices()[0]["model"]
        steps = [
            ("useDetailResName", ["--set", "devicePlugin.useDetailResName=true"], f"kunlunxin.com/{model}"),
            ("enableXpuShare", ["--set", "devicePlugin.useDetailResName=false",
                                "--set", "devicePlugin.enableXpuShare=true"], "kunlunxin.com/xpu-shared"),
            ("rbac.compat", ["--set", "devicePlugin.enableXpuShare=false", "--set", "rbac.compat=true"],
             RESOURCE),
        ]
        for name, values, resource in steps:
            started = time.monotonic()
            output = self.helm_install("--reuse-values", *values)
            if name == "rbac.compat":
                expect("rbac.compat is set" in output, f"helm's notes do not warn about rbac.compat:\n{output}")
            self.wait_rolled_out()
            wait_for(f"{name}: {resource} allocatable", lambda: self.allocatable(resource) > 0, 90)
            figure(f"helm upgrade to {name}, rolled out and advertised", time.monotonic() - started)
        tokens = self.node.get_json("pods", "-n", CHART_NAMESPACE, "-l",
                                    "app.kubernetes.io/component=device-plugin")["items"][0]["spec"]
        expect(tokens.get("automountServiceAccountToken") is True,
               "rbac.compat: the device plugin mounts no service-account token")
        # The replaced chart's nodes/proxy is back for the synced token: the API server no longer
        # refuses its WebSocket exec (scenario 8's 403) for want of it.
        def synced_token():
            return open("/xpu-runtime/auth/token", encoding="utf-8").read().strip()

        def nodes_proxy_allowed():
            status, body = self.exec_through_nodes_proxy(synced_token())
            return status != 403 and 'cannot get resource "nodes/proxy"' not in status_message(body)
        wait_for("rbac.compat: the synced token's WebSocket exec through nodes/proxy past the authorizer",
                 nodes_proxy_allowed, 30)
        print("  rbac.compat: the synced token's WebSocket exec through nodes/<node>/proxy passes the API server")
        started = time.monotonic()
        self.node.helm("uninstall", RELEASE, "--namespace", CHART_NAMESPACE, "--wait")
        self.wait_shim_pods_gone()

        def holder(name):
            """Who accepts on a socket left behind (its pid and command line), or that nobody does."""
            try:
                with socket.socket(socket.AF_UNIX) as client:
                    client.connect(os.path.join("/var/lib/kubelet/device-plugins", name))
                    peer = client.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
                pid = int.from_bytes(peer[:4], sys.byteorder)
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    return f"{name}: served by pid {pid}, {f.read().split(bytes(1))}"
            except OSError as error:
                return f"{name}: nobody serves it ({error})"
        left = sorted(set(os.listdir("/var/lib/kubelet/device-plugins"))
                      - {"kubelet.sock", "kubelet_internal_checkpoint", "DEPRECATION"})
        expect(not left, "left behind in the kubelet's device-plugins directory: "
                         f"{[holder(name) for name in left]}")
        self.wait_allocatable(0, 90)
        figure("helm uninstall to allocatable 0", time.monotonic() - started)

    def s13_cdi(self):
        """xpud's CDI spec is on the node; with devicePlugin.cdi=true the plugin hands out the
        card's CDI name and no raw device nodes, and containerd injects the same nodes and
        environment from the spec."""
        readme = open(os.path.join(self.source_dir, "README.md"), encoding="utf-8").read()
        lines = readme.split("### CDI with containerd", 1)[1].split("```toml\n", 1)[1].split("```", 1)[0]
        config = open(self.node.containerd_config, encoding="utf-8").read()
        for line in lines.strip().splitlines():
            expect(line.strip() in config,
                   f"the README's containerd line {line.strip()!r} is not in the node's config")
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
            expect(view["CXPU_VISIBLE_DEVICES"] == ",".join(map(str, indices)),
                   f"xpu-cdi: CXPU_VISIBLE_DEVICES {view['CXPU_VISIBLE_DEVICES']}, allocated {indices}")
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

    # ---- Dynamic Resource Allocation ---------------------------------------------------------

    def dra_slices(self):
        return [s for s in self.node.get_json("resourceslices")["items"]
                if s["spec"]["driver"] == DRA_DRIVER and s["spec"].get("nodeName") == NODE_NAME]

    def dra_slice(self):
        slices = self.dra_slices()
        expect(len(slices) <= 1, f"{len(slices)} ResourceSlices of {DRA_DRIVER} for {NODE_NAME}")
        return slices[0] if slices else None

    def dra_devices(self):
        slice_ = self.dra_slice()
        return {d["name"]: d for d in slice_["spec"]["devices"]} if slice_ else {}

    def dra_driver_pod(self):
        pods = [p for p in self.shim_pods() if p["metadata"]["name"].startswith(DRA_DAEMONSET)]
        return pods[0] if pods else None

    def dra_driver_ready(self):
        status = self.node.get_json("daemonset", "-n", CHART_NAMESPACE, DRA_DAEMONSET)["status"]
        return status.get("numberReady") == 1 and status.get("updatedNumberScheduled") == 1

    def claim_of(self, pod_name):
        status = self.pod(pod_name)["status"]
        names = [c.get("resourceClaimName") for c in status.get("resourceClaimStatuses", [])]
        expect(names and names[0], f"{pod_name} has no generated ResourceClaim: {status}")
        return self.node.get_json("resourceclaim", "-n", "default", names[0])

    def s14_dra(self):
        """allocation=dra: the DRA driver publishes the node's 8 cards with their attributes,
        Kubernetes' standard ones among them; a claim for a card and another driver's device with
        matchAttribute on resource.kubernetes.io/pcieRoot gets a card behind that device's root; a
        claim for 2 cards of one model on one NUMA node gets them, with their nodes and
        environment; a held card's health shows in the pod's status and in the claim's
        status.devices; an over-ask stays pending;
        an unhealthy card is marked in the slice; the driver restarted keeps the claim; deleting
        the pod unprepares it."""
        devices = {d["index"]: d for d in self.devices()}
        # The device plugin's pods would keep cards the DRA driver is about to offer. The node may
        # come from scenario 12, which leaves it without the chart and without the label.
        self.node.kubectl("delete", "pod", "-n", "default", "--all", "--wait=true", "--timeout=60s")
        self.node.kubectl("label", "node", NODE_NAME, f"{NODE_LABEL}=enable", "--overwrite")
        started = time.monotonic()
        self.helm_install("--reuse-values", "--set", "allocation=dra")
        wait_for("the DRA driver ready", self.dra_driver_ready, 120)
        wait_for("the device plugin's DaemonSet gone", lambda: self.node.kubectl(
            "get", "daemonset", "-n", CHART_NAMESPACE, "xpu-device-plugin-daemonset", check=False).returncode != 0, 60)
        wait_for("a ResourceSlice with the node's 8 cards", lambda: len(self.dra_devices()) == 8, 90)
        figure("helm upgrade to allocation=dra, to the ResourceSlice with 8 cards", time.monotonic() - started)
        try:
            self.dra_check_slice(devices)
            self.dra_check_standard_attributes(devices)
            self.dra_check_admission()
            self.dra_claims(devices)
        finally:
            self.node.kubectl("delete", "pod", "-n", "default", "--all", "--wait=true", "--timeout=60s")
            self.node.kubectl("delete", "resourceclaimtemplate", "-n", "default", "--all", check=False)
            self.helm_install("--reuse-values", "--set", "allocation=devicePlugin")
            wait_for("three DaemonSets ready", self.daemonsets_ready, 120)
            self.wait_plugin_serving()
            self.wait_allocatable(8, 90)

    def s16_memory_shares(self):
        """dra.sharing: each card is also published as a share device with its memory under a
        request policy, both consuming the card's counter set; on one 32 GiB card, pods asking 8,
        8 and 16 GiB all run, each seeing CXPU_CONTAINER_MEMORY_LIMIT equal to its grant; a fourth
        asking 8 GiB waits, and so does a whole-card claim for that card; deleting an 8 GiB pod
        lets the fourth run and frees no more than its share."""
        if self.server_minor() < 36:
            print(f"  skipped: Kubernetes 1.{self.server_minor()} has no consumable capacity on by default")
            return
        devices = {d["index"]: d for d in self.devices()}
        card = 3
        expect(devices[card]["memory_total_bytes"] == 32 * GIB,
               f"card {card} has {devices[card]['memory_total_bytes']} bytes, the scenario wants 32 GiB")
        self.node.kubectl("delete", "pod", "-n", "default", "--all", "--wait=true", "--timeout=60s")
        self.node.kubectl("label", "node", NODE_NAME, f"{NODE_LABEL}=enable", "--overwrite")
        started = time.monotonic()
        self.helm_install("--reuse-values", "--set", "allocation=dra", "--set", "dra.sharing.enabled=true")
        wait_for("the DRA driver ready", self.dra_driver_ready, 120)
        wait_for("the pool with 8 cards, 8 shares and 8 counter sets",
                 lambda: self.dra_pool_sizes() == (16, 8), 90)
        figure("helm upgrade to dra.sharing, to the pool with shares", time.monotonic() - started)
        names = []
        try:
            self.dra_check_share_devices(devices)
            self.readme_share()
            for name, memory in (("share-a", "8Gi"), ("share-b", "8Gi"), ("share-c", "16Gi"),
                                 ("share-d", "8Gi"), ("share-e", "1Gi")):
                self.node.kubectl("apply", "-f", "-", input_text=json.dumps(share_template(name, memory, card)))
            self.node.kubectl("apply", "-f", "-", input_text=json.dumps(
                share_template("whole-card", None, card, device_class=DRA_DRIVER)))

            grants = {"share-a": 8 * GIB, "share-b": 8 * GIB, "share-c": 16 * GIB}
            for name in grants:
                started = time.monotonic()
                self.node.kubectl("apply", "-f", "-", input_text=json.dumps(dra_workload(name, name)))
                names.append(name)
                self.wait_pod_running(name)
                figure(f"share pod {name} created to running", time.monotonic() - started)
            for name, grant in grants.items():
                self.expect_share(name, card, grant)
            print(f"  share-a (8Gi), share-b (8Gi), share-c (16Gi) run on xpu-{card}-shared, "
                  f"each with CXPU_CONTAINER_MEMORY_LIMIT its grant")
            # xpud made each container's cXPU instance through the CDI hooks, with its grant.
            expected = {(card, self.instance_id(name), grant) for name, grant in grants.items()}
            expect(self.xpud_instances() == expected, f"xpud's instances {self.xpud_instances()}, expected {expected}")
            # Each knows its container, from the runtime's annotations.
            owners = {i["id"]: i["owner"] for i in json.loads(self.node.xpuctl("--json", "instances"))}
            for name in grants:
                expect(owners[self.instance_id(name)] == f"default/{name}/main",
                       f"{name}'s instance has owner {owners.get(self.instance_id(name))!r}")
            print(f"  xpud's cXPU instances (xpuctl instances): {sorted(expected)}")
            # The exporter shows each share's grant.
            def grants_exported():
                found = set()
                for line in self.exporter_metrics().splitlines():
                    if line.startswith("xpu_share_memory_limit_bytes{"):
                        labels = dict(part.split("=", 1) for part in line[line.index("{") + 1:line.index("}")].split(","))
                        found.add((int(labels["xpu"].strip('"')), labels["instance"].strip('"'),
                                   int(float(line.rsplit(" ", 1)[1]))))
                return found == expected
            wait_for("the exporter's xpu_share_memory_limit_bytes for the three shares", grants_exported, 60)
            print("  exporter: xpu_share_memory_limit_bytes gives each share's grant")
            prepared = self.dra_prepare_latencies()
            print(f"  NodePrepareResources of a share as the driver logged it: {prepared[-1][-60:]}")

            for name, template in (("share-d", "share-d"), ("whole-card", "whole-card")):
                self.node.kubectl("apply", "-f", "-", input_text=json.dumps(dra_workload(name, template)))
                names.append(name)
                message = wait_for(f"{name} unschedulable", lambda name=name: self.unschedulable(name), 60)
                print(f"  {name}: Pending, scheduler: {message[:140]}")
            # The whole-card class is kept off the share device, and the share device off the card.
            whole = self.node.get_json("deviceclass", DRA_DRIVER)["spec"]["selectors"][0]["cel"]["expression"]
            expect("!device.allowMultipleAllocations" in whole, f"the whole-card class: {whole}")

            started = time.monotonic()
            self.node.kubectl("delete", "pod", "-n", "default", "share-a", "--wait=true", "--timeout=60s")
            names.remove("share-a")
            self.wait_pod_running("share-d", timeout=120)
            figure("8 GiB share deleted to the waiting 8 GiB share running", time.monotonic() - started)
            self.expect_share("share-d", card, 8 * GIB)
            expected = {(card, self.instance_id(name), grant)
                        for name, grant in (("share-b", 8 * GIB), ("share-c", 16 * GIB), ("share-d", 8 * GIB))}
            expect(self.xpud_instances() == expected,
                   f"after share-a went, xpud's instances {self.xpud_instances()}, expected {expected}")
            # Exactly 8 GiB came back: the card is full again, so 1 GiB more waits.
            self.node.kubectl("apply", "-f", "-", input_text=json.dumps(dra_workload("share-e", "share-e")))
            names.append("share-e")
            wait_for("share-e (1Gi) unschedulable", lambda: self.unschedulable("share-e"), 60)
            expect(self.pod("whole-card")["status"]["phase"] == "Pending", "the whole-card pod left Pending")
            print("  share-a deleted: share-d (8Gi) runs, then 1Gi more waits; the whole-card claim still waits")

            # The reverse: a card held whole takes no share.
            other = 5
            self.node.kubectl("apply", "-f", "-", input_text=json.dumps(
                share_template("whole-other", None, other, device_class=DRA_DRIVER)))
            self.node.kubectl("apply", "-f", "-", input_text=json.dumps(share_template("share-other", "1Gi", other)))
            self.node.kubectl("apply", "-f", "-", input_text=json.dumps(dra_workload("whole-other", "whole-other")))
            names.append("whole-other")
            self.wait_pod_running("whole-other")
            results = self.claim_of("whole-other")["status"]["allocation"]["devices"]["results"]
            expect([r["device"] for r in results] == [f"xpu-{other}"] and "shareID" not in results[0],
                   f"whole-other's claim: {results}")
            view = self.workload_view("whole-other")
            expect(view["CXPU_CONTAINER_MEMORY_LIMIT"] == "", f"whole-other is bounded: {view}")
            self.node.kubectl("apply", "-f", "-", input_text=json.dumps(dra_workload("share-other", "share-other")))
            names.append("share-other")
            wait_for("share-other (1Gi of a card held whole) unschedulable",
                     lambda: self.unschedulable("share-other"), 60)
            print(f"  xpu-{other} held whole (no memory limit): a 1Gi share of it waits")
        finally:
            self.back_to_device_plugin()

    def s20_one_bound_per_share(self):
        """One memory share used by two pods (both name one ResourceClaim of 8Gi): xpud holds one
        bound for it. The first pod runs with its 8 GiB instance; the second's container does not
        start, its status naming the share and the container that holds it, and the card holds
        one instance of 8 GiB, not two. Once the first pod is gone, the kubelet's next try starts
        the second with the share's one instance."""
        if self.server_minor() < 36:
            print(f"  skipped: Kubernetes 1.{self.server_minor()} has no consumable capacity on by default")
            return
        card = 3
        self.node.kubectl("delete", "pod", "-n", "default", "--all", "--wait=true", "--timeout=60s")
        self.node.kubectl("label", "node", NODE_NAME, f"{NODE_LABEL}=enable", "--overwrite")
        self.helm_install("--reuse-values", "--set", "allocation=dra", "--set", "dra.sharing.enabled=true")
        wait_for("the DRA driver ready", self.dra_driver_ready, 120)
        wait_for("the pool with 8 cards, 8 shares and 8 counter sets",
                 lambda: self.dra_pool_sizes() == (16, 8), 90)
        claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                 "metadata": {"name": "one-share", "namespace": "default"},
                 "spec": share_template("one-share", "8Gi", card)["spec"]["spec"]}
        self.node.kubectl("apply", "-f", "-", input_text=json.dumps(claim))

        def pod_on_the_claim(name):
            pod = dra_workload(name, None)
            pod["spec"]["resourceClaims"] = [{"name": "xpus", "resourceClaimName": "one-share"}]
            pod["spec"]["restartPolicy"] = "Always"  # the kubelet tries again, as for any pod
            return pod

        def card_instances():
            return sorted((i["id"], i["memory_limit_bytes"], i["owner"])
                          for i in json.loads(self.node.xpuctl("--json", "instances")) if i["index"] == card)

        try:
            self.node.kubectl("apply", "-f", "-", input_text=json.dumps(pod_on_the_claim("bound-a")))
            self.wait_pod_running("bound-a")
            uid = self.node.get_json("resourceclaim", "-n", "default", "one-share")["metadata"]["uid"]
            self.node.kubectl("apply", "-f", "-", input_text=json.dumps(pod_on_the_claim("bound-b")))
            outcome = wait_for("bound-b's container refused or running",
                               lambda: self.share_refusal("bound-b") or
                               ("running" if self.pod("bound-b")["status"].get("phase") == "Running" and
                                "running" in self.pod("bound-b")["status"]["containerStatuses"][0]["state"]
                                else None), 120)
            held = card_instances()
            print(f"  one 8Gi share claim named by two pods: xpu-{card}'s instances {held}, "
                  f"{sum(b for _, b, _ in held) / GIB:.0f} GiB bound for the 8 GiB grant")
            # The runtime's error carries the hook's output after "stderr:".
            print(f"  bound-b: {outcome[outcome.find('stderr:'):][:500]}")
            expect(outcome != "running", "bound-b runs beside bound-a on the same share")
            expect(held == [(self.instance_id("bound-a"), 8 * GIB, "default/bound-a/main")],
                   f"xpu-{card}'s instances {held}, expected bound-a's alone")
            expect(f"memory share {uid}/" in outcome and "com.kunlunxin.xpud1.Error.InUse" in outcome
                   and self.instance_id("bound-a") in outcome,
                   f"bound-b's status does not name the share and its holder: {outcome}")

            started = time.monotonic()
            self.node.kubectl("delete", "pod", "-n", "default", "bound-a", "--wait=true", "--timeout=60s")
            self.wait_pod_running("bound-b", timeout=330)  # the kubelet's back-off reaches 5 min
            figure("the share's first pod deleted to the second running", time.monotonic() - started)
            held = card_instances()
            expect(held == [(self.instance_id("bound-b"), 8 * GIB, "default/bound-b/main")],
                   f"after bound-a went, xpu-{card}'s instances {held}")
            print(f"  bound-a deleted: bound-b runs, xpu-{card}'s instances {held}")
        finally:
            self.node.kubectl("delete", "pod", "-n", "default", "--all", "--wait=true", "--timeout=60s")
            self.node.kubectl("delete", "resourceclaim", "-n", "default", "--ignore-not-found", "one-share")
            self.helm_install("--reuse-values", "--set", "allocation=devicePlugin", "--set", "dra.sharing.enabled=false")
            wait_for("three DaemonSets ready", self.daemonsets_ready, 120)
            self.wait_plugin_serving()
            self.wait_allocatable(8, 90)

    def share_refusal(self, name):
        """What the pod's container status and events say of a failed start that names a memory
        share (the hook's output, as the runtime passed it on), or None."""
        said = []
        for status in self.pod(name)["status"].get("containerStatuses", []):
            for state in (status.get("state", {}), status.get("lastState", {})):
                for detail in state.values():
                    said.append(detail.get("message", ""))
        events = self.node.kubectl("get", "events", "-n", "default", "--field-selector",
                                   f"involvedObject.name={name}", "-o", "json")
        said += [e.get("message", "") for e in json.loads(events)["items"]]
        return next((m for m in said if "memory share" in m), None)

    def s18_dra_virtual_functions(self):
        """SR-IOV through DRA (the sim backend's VFs, as xpuctl configure-vfs makes them): card 7
        with two VFs leaves the pool and its VFs join it, each with its model, memory and
        physicalFunction, consuming its memory of card 7's counter set; a claim of the class
        vxpu.kunlunxin.com for two VFs of one card gets both, with their nodes and variables; a
        whole-card claim for card 7 waits; a pod asking limits kunlunxin.com/vxpu (the device
        plugin's resource for VFs) gets a VF through the class; turning the VFs off brings card 7
        back and the pool to its one slice. Before 1.36 (no partitionable devices) the API server
        drops the counters: the driver says so and publishes the VFs without them, and the
        extended resource is not served."""
        counters_served = self.server_minor() >= 36
        pf = 7
        devices = {d["index"]: d for d in self.devices()}
        self.node.kubectl("delete", "pod", "-n", "default", "--all", "--wait=true", "--timeout=60s")
        self.node.kubectl("label", "node", NODE_NAME, f"{NODE_LABEL}=enable", "--overwrite")
        self.helm_install("--reuse-values", "--set", "allocation=dra")
        wait_for("the DRA driver ready", self.dra_driver_ready, 120)
        wait_for("the pool with 8 cards", lambda: self.dra_pool_sizes() == (8, 0), 90)
        started = time.monotonic()
        self.node.xpuctl("configure-vfs", str(pf), "2")
        try:
            wait_for("card 7's two VFs in xpud's list",
                     lambda: sum(1 for d in self.devices() if d["is_virtual_function"]) == 2, 30)
            vfs = {d["index"]: d for d in self.devices() if d["is_virtual_function"]}
            # 7 cards and 2 VFs; card 7's counter set where the server keeps counters.
            wait_for(f"the pool with 7 cards, 2 VFs and {int(counters_served)} counter set",
                     lambda: self.dra_pool_sizes() == (9, int(counters_served)), 90)
            figure("configure-vfs to the pool with the VFs", time.monotonic() - started)
            if not counters_served:
                expect(len(self.dra_slices()) == 1, f"{len(self.dra_slices())} slices without counters")
                said = wait_for("the driver's word on the dropped counters",
                                lambda: [line for line in self.dra_driver_log()
                                         if "dropped the counters" in line], 30)
                print(f"  the driver: {said[0][-150:]}")
            slices = self.dra_slices()
            published = {d["name"]: d for s in slices for d in s["spec"].get("devices", [])}
            counters = {c["name"]: c for s in slices for c in s["spec"].get("sharedCounters", [])}
            expect(f"xpu-{pf}" not in published, f"card {pf}, whose VFs are on, is still offered")
            pf_bus_id = devices[pf]["pci_bus_id"]
            if counters_served:
                expect(set(counters) == {f"xpu-{pf}"}, f"counter sets {sorted(counters)}")
                expect(parse_quantity(counters[f"xpu-{pf}"]["counters"]["memory"]["value"])
                       == devices[pf]["memory_total_bytes"], f"card {pf}'s counter set {counters[f'xpu-{pf}']}")
            for index, vf in vfs.items():
                device = published[f"xpu-{index}"]
                attributes = {k: next(iter(v.values())) for k, v in device["attributes"].items()}
                expect(attributes["model"] == vf["model"] and attributes["physicalFunction"] == pf_bus_id,
                       f"xpu-{index}: {attributes}")
                expect(parse_quantity(device["capacity"]["memory"]["value"]) == vf["memory_total_bytes"],
                       f"xpu-{index} capacity {device['capacity']}")
                consumed = device.get("consumesCounters", [])
                expect(not counters_served and not consumed or
                       len(consumed) == 1 and consumed[0]["counterSet"] == f"xpu-{pf}" and
                       parse_quantity(consumed[0]["counters"]["memory"]["value"]) == vf["memory_total_bytes"],
                       f"xpu-{index} consumes {consumed}")
            print(f"  card {pf} with VFs {sorted(vfs)} ({vfs[min(vfs)]['model']}): the card left the pool, "
                  f"its VFs joined it" + (f", each consuming its memory of counter set xpu-{pf}"
                                          if counters_served else " (no counters on this server)"))

            # Two VFs of one card, through the VF class.
            template = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                        "metadata": {"name": "two-vfs", "namespace": "default"},
                        "spec": {"spec": {"devices": {
                            "requests": [{"name": "xpus", "exactly": {"deviceClassName": VF_CLASS, "count": 2}}],
                            "constraints": [{"requests": ["xpus"],
                                             "matchAttribute": f"{DRA_DRIVER}/physicalFunction"}]}}}}
            self.node.kubectl("apply", "-f", "-", input_text=json.dumps(template))
            self.node.kubectl("apply", "-f", "-", input_text=json.dumps(dra_workload("two-vfs", "two-vfs")))
            self.wait_pod_running("two-vfs")
            results = self.claim_of("two-vfs")["status"]["allocation"]["devices"]["results"]
            got = sorted(int(r["device"].split("-")[1]) for r in results)
            expect(got == sorted(vfs), f"two-vfs got {[r['device'] for r in results]}, the VFs are {sorted(vfs)}")
            view = self.workload_view("two-vfs")
            expect(sorted(view["XPU_VISIBLE_DEVICES"].split(",")) == [str(i) for i in got], f"two-vfs: {view}")
            expect(sorted(view["NODES"].split()) == sorted([f"xpu{i}" for i in got] + ["xpuctrl"]), f"two-vfs: {view}")
            print(f"  a claim of {VF_CLASS} for two VFs of one card: {got}, "
                  f"XPU_VISIBLE_DEVICES={view['XPU_VISIBLE_DEVICES']}, nodes {view['NODES'].strip()}")

            # The card itself is not to be had while its VFs are on.
            self.node.kubectl("apply", "-f", "-", input_text=json.dumps(
                share_template("card-7", None, pf, device_class=DRA_DRIVER)))
            self.node.kubectl("apply", "-f", "-", input_text=json.dumps(dra_workload("card-7", "card-7")))
            message = wait_for("card-7 unschedulable", lambda: self.unschedulable("card-7"), 60)
            print(f"  a whole-card claim for card {pf}: Pending, scheduler: {message[:120]}")
            self.delete_pods("two-vfs", "card-7")

            # The device plugin's resource for VFs, served through the class (1.36+).
            if counters_served:
                pod = self.workload("limits-vxpu", 1, resource="kunlunxin.com/vxpu")
                claim = pod["status"].get("extendedResourceClaimStatus", {})
                view = self.workload_view("limits-vxpu")
                expect(claim and int(view["XPU_VISIBLE_DEVICES"]) in vfs, f"limits-vxpu: {claim}, {view}")
                print(f"  limits kunlunxin.com/vxpu: 1 gets VF {view['XPU_VISIBLE_DEVICES']} through the class")
                self.delete_pods("limits-vxpu")
        finally:
            self.node.kubectl("delete", "pod", "-n", "default", "--all", "--wait=true", "--timeout=60s")
            self.node.kubectl("delete", "resourceclaimtemplate", "-n", "default", "--all", check=False)
            self.node.xpuctl("configure-vfs", str(pf), "0")
        wait_for("the pool back to 8 cards in one slice", lambda: self.dra_pool_sizes() == (8, 0), 90)
        expect(len(self.dra_slices()) == 1, f"{len(self.dra_slices())} slices after the VFs went")
        print(f"  configure-vfs {pf} 0: card {pf} back, the pool one slice again")
        self.helm_install("--reuse-values", "--set", "allocation=devicePlugin")
        wait_for("three DaemonSets ready", self.daemonsets_ready, 120)
        self.wait_plugin_serving()
        self.wait_allocatable(8, 90)

    def readme_share(self):
        """The README's memory-share example as written (the image swapped for the suite's):
        its container sees its 8 GiB grant, xpud holds its instance, and both go with the pod."""
        readme = open(os.path.join(self.source_dir, "README.md"), encoding="utf-8").read()
        block = readme.split("### Memory shares\n", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
        documents = list(yaml.safe_load_all(block))
        expect([d["kind"] for d in documents] == ["ResourceClaimTemplate", "Pod"], "the README's share example")
        for document in documents:
            for c in document["spec"].get("containers", []):
                c.update(image=images.BUSYBOX, imagePullPolicy="Never")
            self.node.kubectl("apply", "-n", "default", "-f", "-", input_text=json.dumps(document))
        name = documents[1]["metadata"]["name"]
        self.wait_pod_running(name)
        log = self.pod_log(name)
        expect(f"CXPU_CONTAINER_MEMORY_LIMIT={8 * GIB}" in log.split(), f"{name} printed:\n{log}")
        card = self.claim_of(name)["status"]["allocation"]["devices"]["results"][0]["device"]
        instance = self.instance_id(name)
        expect({i[1] for i in self.xpud_instances()} == {instance}, f"xpud's instances {self.xpud_instances()}")
        self.node.kubectl("delete", "pod", "-n", "default", name, "--wait=true", "--timeout=60s")
        wait_for(f"{name}'s instance destroyed", lambda: not self.xpud_instances(), 30)
        print(f"  the README's example: {name} got 8Gi of {card}, its instance {instance} went with it")

    def instance_id(self, pod_name):
        """The cXPU instance id of the pod's container: its id's first 12 characters, as the
        vendor's runtime and xpuctl's hooks name it."""
        container_id = self.pod(pod_name)["status"]["containerStatuses"][0]["containerID"]
        return container_id.split("://", 1)[1][:12]

    def xpud_instances(self):
        return {(i["index"], i["id"], i["memory_limit_bytes"])
                for i in json.loads(self.node.xpuctl("--json", "instances"))}

    def s17_device_plugin_memory_shares(self):
        """The device plugin's memory form (enableXpuShare with xpuShareMemoryUnitMiB=1024): each
        32 GiB card is 32 units of kunlunxin.com/vxpu-memory; pods asking 8 and 24 units get one
        card between them (best fit), each with CXPU_CONTAINER_MEMORY_LIMIT its units' bytes."""
        resource = "kunlunxin.com/vxpu-memory"
        devices = {d["index"]: d for d in self.devices()}
        try:
            self.helm_install("--reuse-values", "--set", "allocation=devicePlugin",
                              "--set", "devicePlugin.enableXpuShare=true",
                              "--set", "devicePlugin.xpuShareMemoryUnitMiB=1024")
            self.wait_rolled_out()
            total = sum(d["memory_total_bytes"] // GIB for d in devices.values())
            self.wait_allocatable(total, 90, resource=resource)
            cards = {}
            for name, units in (("vxpu-a", 8), ("vxpu-b", 24)):
                pod = self.workload(name, units, resource=resource)
                ids = self.allocated_ids(pod["metadata"]["uid"], resource)
                uuids = {i.split("::")[0] for i in ids}
                expect(len(ids) == units and len(uuids) == 1, f"{name} got {ids}")
                index = next(i for i, d in devices.items() if d["uuid"] in uuids)
                view = self.workload_view(name)
                expect(view["CXPU_CONTAINER_MEMORY_LIMIT"] == str(units * GIB) and
                       view["CXPU_VISIBLE_DEVICES"] == str(index),
                       f"{name}: {view}, expected {units} GiB of card {index}")
                cards[name] = index
            expect(cards["vxpu-a"] == cards["vxpu-b"], f"best fit put the two pods on cards {cards}")
            print(f"  {total} units of {resource}; vxpu-a (8) and vxpu-b (24) share card {cards['vxpu-a']}, "
                  f"each with CXPU_CONTAINER_MEMORY_LIMIT its units' bytes")
        finally:
            self.node.kubectl("delete", "pod", "-n", "default", "--all", "--wait=true", "--timeout=60s")
            self.helm_install("--reuse-values", "--set", "devicePlugin.enableXpuShare=false",
                              "--set", "devicePlugin.xpuShareMemoryUnitMiB=0")
            self.wait_rolled_out()
            self.wait_allocatable(8, 90)

    def dra_pool_sizes(self):
        """(devices, counter sets) of the node's pool at its newest generation, once complete."""
        slices = self.dra_slices()
        if not slices:
            return None
        newest = max(s["spec"]["pool"]["generation"] for s in slices)
        current = [s for s in slices if s["spec"]["pool"]["generation"] == newest]
        if len(current) != current[0]["spec"]["pool"]["resourceSliceCount"]:
            return None
        return (sum(len(s["spec"].get("devices", [])) for s in current),
                sum(len(s["spec"].get("sharedCounters", [])) for s in current))

    def dra_check_share_devices(self, devices):
        slices = self.dra_slices()
        published = {d["name"]: d for s in slices for d in s["spec"].get("devices", [])}
        counters = {c["name"]: c for s in slices for c in s["spec"].get("sharedCounters", [])}
        for index, card in devices.items():
            whole, share = published[f"xpu-{index}"], published[f"xpu-{index}-shared"]
            memory = card["memory_total_bytes"]
            expect(share.get("allowMultipleAllocations") is True, f"xpu-{index}-shared: {share}")
            expect(not whole.get("allowMultipleAllocations"), f"xpu-{index}: {whole}")
            capacity = share["capacity"]["memory"]
            expect(parse_quantity(capacity["value"]) == memory, f"xpu-{index}-shared capacity {capacity}")
            policy = capacity["requestPolicy"]
            expect(parse_quantity(policy["default"]) == GIB and parse_quantity(policy["validRange"]["min"]) == GIB
                   and parse_quantity(policy["validRange"]["step"]) == GIB, f"xpu-{index}-shared policy {policy}")
            for device in (whole, share):
                consumed = device["consumesCounters"]
                expect(len(consumed) == 1 and consumed[0]["counterSet"] == f"xpu-{index}"
                       and parse_quantity(consumed[0]["counters"]["memory"]["value"]) == memory,
                       f"{device['name']} consumes {consumed}")
            expect(parse_quantity(counters[f"xpu-{index}"]["counters"]["memory"]["value"]) == memory,
                   f"counter set xpu-{index}: {counters.get(f'xpu-{index}')}")
        print(f"  pool: {len(slices)} slices, {len(published)} devices, {len(counters)} counter sets; "
              f"shares of 1Gi steps from 1Gi")

    def expect_share(self, name, card, grant):
        claim = self.claim_of(name)
        results = claim["status"]["allocation"]["devices"]["results"]
        expect(len(results) == 1 and results[0]["device"] == f"xpu-{card}-shared" and results[0].get("shareID"),
               f"{name}'s claim: {results}")
        consumed = parse_quantity(results[0]["consumedCapacity"]["memory"])
        expect(consumed == grant, f"{name} consumed {consumed} bytes, asked {grant}")
        view = self.workload_view(name)
        expect(view["CXPU_CONTAINER_MEMORY_LIMIT"] == str(grant),
               f"{name}: CXPU_CONTAINER_MEMORY_LIMIT={view['CXPU_CONTAINER_MEMORY_LIMIT']}, granted {grant}")
        expect(view["CXPU_VISIBLE_DEVICES"] == str(card), f"{name}: CXPU_VISIBLE_DEVICES={view['CXPU_VISIBLE_DEVICES']}")
        expect(view["NODES"].split() == sorted([f"xpu{card}", "xpuctrl"]), f"{name}: device nodes {view['NODES']}")
        status = wait_for(f"{name}'s claim status.devices", lambda: claim_status_devices(self.claim_of(name)), 60)
        expect(status[0].get("shareID") == results[0]["shareID"] and status[0]["device"] == f"xpu-{card}-shared",
               f"{name}'s status.devices {status} for allocation {results}")

    def dra_check_slice(self, devices):
        slice_ = self.dra_slice()
        spec = slice_["spec"]
        expect(spec["pool"]["name"] == NODE_NAME, f"pool {spec['pool']}")
        for index, card in devices.items():
            published = self.dra_devices()[f"xpu-{index}"]
            expected = {"model": card["model"], "uuid": card["uuid"], "index": index,
                        "numaNode": card["numa_node"], "pciBusId": card["pci_bus_id"], "healthy": True}
            got = {name: dra_attribute(published, name) for name in expected}
            expect(got == expected, f"xpu-{index}: attributes {got}, expected {expected}")
            memory = published["capacity"]["memory"]["value"]
            expect(parse_quantity(memory) == card["memory_total_bytes"],
                   f"xpu-{index}: capacity memory {memory}, card has {card['memory_total_bytes']}")
        groups = {index: dra_attribute(self.dra_devices()[f"xpu-{index}"], "linkGroup") for index in devices}
        for index, group in groups.items():
            mates = [other for other, g in groups.items() if g == group]
            linked = set(devices[index]["linked_devices"]) | {index}
            expect(set(mates) <= linked, f"xpu-{index}'s link group {group} holds {mates}, "
                                         f"but it links only {sorted(linked)}")
        version = dra_attribute(self.dra_devices()["xpu-0"], "driverVersion")
        print(f"  slice {slice_['metadata']['name']}: 8 cards, link groups {sorted(set(groups.values()))}, "
              f"driverVersion {version}")

    def dra_check_standard_attributes(self, devices):
        """Each card carries Kubernetes' standard attributes with xpud's values, and they do what
        they are for: a claim for a card and another driver's device (a NIC of nic.example.com,
        published here as the admin; the chart's admission policy binds only the driver's own
        account) with matchAttribute resource.kubernetes.io/pcieRoot gets a card behind the NIC's
        root. Nothing serves nic.example.com on the node, so the pod never starts: the
        scheduler's allocation is what is checked, and everything is deleted before the claims
        that follow."""
        published = self.dra_devices()
        for index, card in devices.items():
            expect(card.get("pcie_root"), f"xpud gives card {index} no PcieRoot: {card}")
            expected = {PCI_BUS_ID: card["pci_bus_id"], PCIE_ROOT: card["pcie_root"],
                        NUMA_NODE: card["numa_node"] if card["numa_node"] >= 0 else None}
            got = {name: dra_attribute(published[f"xpu-{index}"], name) for name in expected}
            expect(got == expected, f"xpu-{index}: standard attributes {got}, expected {expected}")
        roots = {index: card["pcie_root"] for index, card in devices.items()}
        nic_root = roots[5]
        behind = sorted(index for index, root in roots.items() if root == nic_root)
        expect(0 < len(behind) < len(roots), f"PCIe roots {roots}: card 5's must be shared by some cards, not all")
        print(f"  standard attributes as xpud says; PCIe roots {sorted(set(roots.values()))}")

        device_class = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                        "metadata": {"name": NIC_DRIVER},
                        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{NIC_DRIVER}"'}}]}}
        nic_slice = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                     "metadata": {"name": NIC_SLICE},
                     "spec": {"driver": NIC_DRIVER, "nodeName": NODE_NAME,
                              "pool": {"name": NODE_NAME, "generation": 1, "resourceSliceCount": 1},
                              "devices": [{"name": "nic-0",
                                           "attributes": {PCIE_ROOT: {"string": nic_root}}}]}}
        requests = [{"name": "xpu", "exactly": {"deviceClassName": DRA_DRIVER, "allocationMode": "ExactCount",
                                                "count": 1}},
                    {"name": "nic", "exactly": {"deviceClassName": NIC_DRIVER, "allocationMode": "ExactCount",
                                                "count": 1}}]
        claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                 "metadata": {"name": "xpu-nic-pair", "namespace": "default"},
                 "spec": {"devices": {"requests": requests,
                                      "constraints": [{"requests": ["xpu", "nic"], "matchAttribute": PCIE_ROOT}]}}}
        pod = dra_workload("xpu-nic-pair", None)
        pod["spec"]["resourceClaims"] = [{"name": "pair", "resourceClaimName": "xpu-nic-pair"}]
        pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "pair"}]
        try:
            for manifest in (device_class, nic_slice, claim):
                self.node.kubectl("create", "-f", "-", input_text=json.dumps(manifest))
            started = time.monotonic()
            self.node.kubectl("create", "-f", "-", input_text=json.dumps(pod))
            allocation = wait_for("xpu-nic-pair allocated", lambda: self.node.get_json(
                "resourceclaim", "-n", "default", "xpu-nic-pair").get("status", {}).get("allocation"), 60)
            figure("claim for a card and a NIC on one PCIe root, pod created to allocated", time.monotonic() - started)
            results = {r["request"]: r for r in allocation["devices"]["results"]}
            expect(set(results) == {"xpu", "nic"}, f"xpu-nic-pair's allocation: {allocation}")
            nic, xpu = results["nic"], results["xpu"]
            expect((nic["driver"], nic["pool"], nic["device"]) == (NIC_DRIVER, NODE_NAME, "nic-0"),
                   f"xpu-nic-pair's NIC: {nic}")
            expect(xpu["driver"] == DRA_DRIVER and xpu["pool"] == NODE_NAME, f"xpu-nic-pair's card: {xpu}")
            index = int(xpu["device"].split("-")[1])
            expect(index in behind and dra_attribute(self.dra_devices()[xpu["device"]], PCIE_ROOT) == nic_root,
                   f"xpu-nic-pair got card {index} (PCIe root {roots.get(index)}), the NIC is behind {nic_root} "
                   f"with cards {behind}")
            print(f"  xpu-nic-pair: card {index} and nic-0, both behind {nic_root} (cards there: {behind})")
        finally:
            # The pod first: the claim's finalizer holds it until no pod uses it.
            self.node.kubectl("delete", "pod", "-n", "default", "--grace-period=1", "--wait=true",
                              "--timeout=60s", "--ignore-not-found", "xpu-nic-pair", check=False)
            self.node.kubectl("delete", "resourceclaim", "-n", "default", "--wait=true", "--timeout=60s",
                              "--ignore-not-found", "xpu-nic-pair", check=False)
            self.node.kubectl("delete", "deviceclass", "--wait=true", "--timeout=60s", "--ignore-not-found",
                              NIC_DRIVER, check=False)
            self.node.kubectl("delete", "resourceslice", "--wait=true", "--timeout=60s", "--ignore-not-found",
                              NIC_SLICE, check=False)
        # The card is free for the claims that follow only once the claim is gone; the rest must
        # not outlive the check either.
        for kind, name in (("resourceclaim", "xpu-nic-pair"), ("deviceclass", NIC_DRIVER),
                           ("resourceslice", NIC_SLICE)):
            namespace = ["-n", "default"] if kind == "resourceclaim" else []
            wait_for(f"{kind} {name} gone", lambda: self.node.kubectl(
                "get", kind, *namespace, name, check=False).returncode != 0, 60)

    def dra_check_admission(self):
        """The driver's own token may write only its node's slices; RBAC gives it nothing else."""
        as_driver = self.kubectl_bound_to(self.dra_driver_pod())
        self.dra_check_policies_type_check()
        foreign = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                   "metadata": {"name": "forged-slice"},
                   "spec": {"driver": DRA_DRIVER, "nodeName": "another-node",
                            "pool": {"name": "another-node", "generation": 1, "resourceSliceCount": 1},
                            "devices": []}}
        result = run([*as_driver, "create", "-f", "-"], check=False, input_text=json.dumps(foreign))
        expect(result.returncode != 0 and "may write only that node's ResourceSlices" in result.stderr,
               f"a slice for another node: {result.stderr.strip()!r}")
        print(f"  driver's token, slice for another node: {result.stderr.strip().splitlines()[-1][:140]}")
        # Another node's slice that exists (written here with the admin's rights): the driver's
        # token may neither replace it, not even with its own node's name in it, nor delete it.
        self.node.kubectl("create", "-f", "-", input_text=json.dumps(foreign))
        try:
            existing = self.node.get_json("resourceslice", "forged-slice")
            for node_name in ("another-node", NODE_NAME):
                replaced = json.loads(json.dumps(existing))
                replaced["metadata"].setdefault("labels", {})["taken"] = "yes"
                replaced["spec"]["nodeName"] = node_name
                result = run([*as_driver, "replace", "-f", "-"], check=False, input_text=json.dumps(replaced))
                # A changed nodeName the API server's own validation may refuse first (it runs
                # before admission, and makes the field immutable where its check is right); the
                # policy's check of the old slice does not rely on that.
                reasons = ["may write only that node's ResourceSlices"]
                if node_name == NODE_NAME:
                    reasons.append("field is immutable")
                expect(result.returncode != 0 and any(reason in result.stderr for reason in reasons),
                       f"replacing another node's slice (nodeName {node_name}): {result.stderr.strip()!r}")
            result = run([*as_driver, "delete", "resourceslice", "forged-slice"], check=False)
            expect(result.returncode != 0 and "may write only that node's ResourceSlices" in result.stderr,
                   f"deleting another node's slice: {result.stderr.strip()!r}")
            expect(self.node.get_json("resourceslice", "forged-slice")["metadata"].get("labels", {}).get("taken")
                   is None, "another node's slice was changed through the driver's token")
        finally:
            self.node.kubectl("delete", "resourceslice", "forged-slice", "--wait=true")
        print("  driver's token, another node's existing slice: replacing and deleting it refused")
        # Its own node's name with another node's pool: the scheduler would count the slice in
        # that pool (issue 39).
        into_pool = json.loads(json.dumps(foreign))
        into_pool["spec"]["nodeName"] = NODE_NAME
        result = run([*as_driver, "create", "-f", "-"], check=False, input_text=json.dumps(into_pool))
        expect(result.returncode != 0 and f"may write only ResourceSlices of the pool {NODE_NAME}" in result.stderr,
               f"a slice of this node in another node's pool: {result.stderr.strip()!r}")
        print(f"  driver's token, this node's slice in another pool: {result.stderr.strip().splitlines()[-1][:200]}")
        # It may get a claim by name (the kubelet names the ones to prepare) and list them (a
        # leaving driver waits for the claims allocated from its pool), but no secret nor pod.
        for verb in (["get", "secrets", "-A"], ["get", "pods", "-A"]):
            result = run([*as_driver, *verb], check=False)
            expect(result.returncode != 0 and "forbidden" in result.stderr.lower(),
                   f"the driver's token may {' '.join(verb)}: {result.stderr.strip()!r}")
        result = run([*as_driver, "get", "resourceslices"], check=False)
        expect(result.returncode == 0, f"the driver's token cannot list slices: {result.stderr.strip()!r}")
        print("  driver's token: listing secrets, pods and claims forbidden; its slices readable")

    def bound_token(self, pod):
        """A token of the DRA driver's service account bound to `pod` (so to the node the pod is
        on), as the kubelet gives the driver's pod its own."""
        return self.node.kubectl("create", "token", "-n", CHART_NAMESPACE, DRA_DAEMONSET,
                                 "--bound-object-kind", "Pod", "--bound-object-name", pod["metadata"]["name"],
                                 "--bound-object-uid", pod["metadata"]["uid"]).strip()

    def kubectl_bound_to(self, pod=None, token=None):
        """kubectl with `token`, or with a token bound to `pod`."""
        token = token or self.bound_token(pod)
        return [self.node.program("kubectl"), "--kubeconfig=/dev/null",
                f"--server=https://{NODE_IP}:6443", f"--certificate-authority={self.node.pki.ca_cert}",
                f"--token={token}"]

    def dra_check_policies_type_check(self):
        """The API server type-checks each admission policy's CEL against the objects' schemas
        (status.typeChecking): a warning there is an expression that may fail at run time, and
        with failurePolicy Fail refuse the driver's own writes."""
        def checked(policy):
            current = self.node.get_json("validatingadmissionpolicy", policy)
            status = current.get("status", {})
            if status.get("observedGeneration") != current["metadata"]["generation"]:
                return None
            return [status.get("typeChecking", {}).get("expressionWarnings", [])]
        for policy in DRA_POLICIES:
            warnings = wait_for(f"{policy} type-checked", lambda: checked(policy), 30)[0]
            expect(not warnings, f"{policy}: {warnings}")
        print(f"  admission policies type-checked by the API server without warnings: {', '.join(DRA_POLICIES)}")

    def dra_check_second_node(self, claim):
        """Another node's driver credentials: a token of the driver's service account bound to a
        pod on a second Node (no kubelet behind it; unschedulable and tainted, so nothing else
        lands there). It may write its own node's slice, but neither publish into this node's
        pool nor touch this node's entries of a claim's status; the refusals name the chart's
        policies. The claim's entries, written by the real driver through the same policy, stay."""
        started = time.monotonic()
        name = claim["metadata"]["name"]

        def own_entries():
            entries = claim_status_devices(self.node.get_json("resourceclaim", "-n", "default", name)) or []
            ours = [e for e in entries if e["driver"] == DRA_DRIVER and e["pool"] == NODE_NAME
                    and any(c["type"] == "Healthy" and c["status"] == "True" for c in e.get("conditions", []))]
            return entries if len(ours) == len(claim["status"]["allocation"]["devices"]["results"]) else None
        written = wait_for(f"{name}: the driver's status.devices entries", own_entries, 30)
        print(f"  {name}: {len(written)} status.devices entries written by the driver through the policy")

        node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": SECOND_NODE},
                "spec": {"unschedulable": True,
                         "taints": [{"key": "xpu.kunlunxin.com/cluster-test", "effect": "NoSchedule"}]}}
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": f"{DRA_DAEMONSET}-elsewhere", "namespace": CHART_NAMESPACE},
               "spec": {"nodeName": SECOND_NODE, "serviceAccountName": DRA_DAEMONSET,
                        "automountServiceAccountToken": False, "tolerations": [{"operator": "Exists"}],
                        "containers": [{"name": "main", "image": images.BUSYBOX, "imagePullPolicy": "Never"}]}}
        self.node.kubectl("create", "-f", "-", input_text=json.dumps(node))
        try:
            self.node.kubectl("create", "-f", "-", input_text=json.dumps(pod))
            token = self.bound_token(self.node.get_json("pod", "-n", CHART_NAMESPACE, pod["metadata"]["name"]))
            elsewhere = self.kubectl_bound_to(token=token)
            who = json.loads(run([*elsewhere, "auth", "whoami", "-o", "json"]))["status"]["userInfo"]
            expect(who["username"] == f"system:serviceaccount:{CHART_NAMESPACE}:{DRA_DAEMONSET}"
                   and who.get("extra", {}).get("authentication.kubernetes.io/node-name") == [SECOND_NODE],
                   f"the second node's token: {who}")
            self.dra_second_node_slices(elsewhere)
            self.dra_second_node_claim(token, name, written)
        finally:
            self.node.kubectl("delete", "pod", "-n", CHART_NAMESPACE, pod["metadata"]["name"],
                              "--grace-period=0", "--force", "--wait=true", check=False)
            self.node.kubectl("delete", "node", SECOND_NODE, "--wait=true", check=False)
        figure("second node's driver token: its slice, refusals in this node's pool and claim", time.monotonic() - started)

    def dra_second_node_slices(self, elsewhere):
        own = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
               "metadata": {"name": "second-node-slice"},
               "spec": {"driver": DRA_DRIVER, "nodeName": SECOND_NODE,
                        "pool": {"name": SECOND_NODE, "generation": 1, "resourceSliceCount": 1}, "devices": []}}
        # Its own node's slice it may write: the token is the driver's and the refusals below are
        # about the pool alone.
        run([*elsewhere, "create", "-f", "-"], input_text=json.dumps(own))
        run([*elsewhere, "delete", "resourceslice", "second-node-slice"])
        into_pool = json.loads(json.dumps(own))
        into_pool["spec"]["pool"]["name"] = NODE_NAME
        result = run([*elsewhere, "create", "-f", "-"], check=False, input_text=json.dumps(into_pool))
        expect(result.returncode != 0 and "ValidatingAdmissionPolicy 'xpu-dra-driver-own-node'" in result.stderr
               and f"may write only ResourceSlices of the pool {SECOND_NODE}" in result.stderr,
               f"the second node's token publishing into {NODE_NAME}'s pool: {result.stderr.strip()!r}")
        expect(len(self.dra_slices()) == 1 and not [s for s in self.node.get_json("resourceslices")["items"]
                                                    if s["spec"]["pool"]["name"] == NODE_NAME
                                                    and s["spec"].get("nodeName") != NODE_NAME],
               f"a slice in {NODE_NAME}'s pool besides the driver's")
        print(f"  second node's token, its own slice: written and deleted; into {NODE_NAME}'s pool: "
              f"{result.stderr.strip().splitlines()[-1][:240]}")

    def dra_second_node_claim(self, token, name, written):
        """The driver's status writes as it makes them (PATCH on resourceclaims/status; kubectl
        would first GET the subresource, which the driver may not), with the second node's token."""
        index = next(i for i, e in enumerate(written) if e["driver"] == DRA_DRIVER and e["pool"] == NODE_NAME)
        attacks = {
            "marking a card unhealthy": [
                {"op": "replace", "path": f"/status/devices/{index}/conditions/0/status", "value": "False"},
                {"op": "replace", "path": f"/status/devices/{index}/conditions/0/reason", "value": "Forged"}],
            "removing an entry": [{"op": "remove", "path": f"/status/devices/{index}"}],
        }

        path = f"/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/{name}/status"

        def attempt(patch, with_token=token):
            return api_json_patch(path, with_token, self.node.pki.ca_cert, patch)
        policy_refusal = ("ValidatingAdmissionPolicy 'xpu-dra-driver-own-claim-status'",
                          f"may write only the status.devices entries of driver {DRA_DRIVER} in the pool {SECOND_NODE}")
        granular = self.server_minor() >= 36
        for what, patch in attacks.items():
            code, message = attempt(patch)
            # From 1.36 the API server's own check of resourceclaims/driver (a token of another
            # node than the claim's needs arbitrary-node:patch) runs before admission and refuses
            # first; 1.35 has only the policy.
            reasons = ['resource="resourceclaims/driver"'] if granular else policy_refusal
            expect(code in (403, 422) and all(reason in message for reason in reasons),
                   f"the second node's token {what} of {name}: {code} {message!r}")
            print(f"  second node's token, {what} of {name}: {code} {message}")
        if granular:
            # The policy holds without that check: with arbitrary-node:patch granted to the
            # driver's account, the same writes are refused by the policy.
            grant = [
                {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                 "metadata": {"name": "xpu-test-arbitrary-node"},
                 "rules": [{"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims/driver"],
                            "resourceNames": [DRA_DRIVER], "verbs": ["arbitrary-node:patch"]}]},
                {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                 "metadata": {"name": "xpu-test-arbitrary-node"},
                 "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                             "name": "xpu-test-arbitrary-node"},
                 "subjects": [{"kind": "ServiceAccount", "name": DRA_DAEMONSET, "namespace": CHART_NAMESPACE}]}]
            self.node.kubectl("create", "-f", "-", input_text=json.dumps({"apiVersion": "v1", "kind": "List",
                                                                           "items": grant}))
            try:
                for what, patch in attacks.items():
                    # RBAC reaches the authorizer through its informers: wait until the API
                    # server's own check lets the request through to admission.
                    code, message = wait_for(f"{what} reaching admission with arbitrary-node:patch granted",
                                             lambda: r if "resourceclaims/driver" not in (r := attempt(patch))[1]
                                             else None, 30)
                    expect(code in (403, 422) and all(reason in message for reason in policy_refusal),
                           f"with arbitrary-node:patch, the second node's token {what} of {name}: {code} {message!r}")
                    print(f"  ... with arbitrary-node:patch granted: {code} {message}")
            finally:
                self.node.kubectl("delete", "clusterrolebinding,clusterrole", "xpu-test-arbitrary-node", check=False)
        after = claim_status_devices(self.node.get_json("resourceclaim", "-n", "default", name)) or []
        expect(after == written, f"{name}'s status.devices changed: {written} -> {after}")
        # Its own node's token may not touch what the scheduler and the claim controller write.
        code, message = attempt([{"op": "remove", "path": "/status/reservedFor"}],
                                with_token=self.bound_token(self.dra_driver_pod()))
        reasons = (['resource="resourceclaims/binding"'] if granular else
                   ["ValidatingAdmissionPolicy 'xpu-dra-driver-own-claim-status'",
                    "may not change status.allocation or status.reservedFor"])
        expect(code in (403, 422) and all(reason in message for reason in reasons),
               f"the driver's own token removing {name}'s reservedFor: {code} {message!r}")
        print(f"  driver's own token, removing {name}'s reservedFor: {code} {message}")

    def dra_claims(self, devices):
        # The README's claim example, as written but for the image: the suite's is imported.
        expect(devices[0]["model"] == "R200", f"the README's example selects R200, the cards are {devices[0]['model']}")
        readme = open(os.path.join(self.source_dir, "README.md"), encoding="utf-8").read()
        block = readme.split("### Dynamic Resource Allocation", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
        documents = list(yaml.safe_load_all(block))
        for document in documents:
            for c in document["spec"].get("containers", []):
                c.update(image=images.BUSYBOX, imagePullPolicy="Never")
        expect([d["kind"] for d in documents] == ["ResourceClaimTemplate", "Pod"], "the README's DRA example")
        self.node.kubectl("apply", "-f", "-", input_text=json.dumps(claim_template("xpu-too-many", 9)))
        started = time.monotonic()
        for document in documents:
            self.node.kubectl("apply", "-n", "default", "-f", "-", input_text=json.dumps(document))
        self.wait_pod_running("xpu-dra-pair")
        figure("DRA pod with 2 cards created to running", time.monotonic() - started)
        claim = self.claim_of("xpu-dra-pair")
        results = claim["status"]["allocation"]["devices"]["results"]
        indices = sorted(int(r["device"].split("-")[1]) for r in results)
        expect(len(indices) == 2 and all(r["driver"] == DRA_DRIVER and r["pool"] == NODE_NAME for r in results),
               f"xpu-dra-pair's claim: {results}")
        numa = {devices[i]["numa_node"] for i in indices}
        expect(len(numa) == 1, f"xpu-dra-pair got cards {indices} on NUMA nodes {numa}")
        view = self.workload_view("xpu-dra-pair")
        shown = sorted(int(i) for i in view["XPU_VISIBLE_DEVICES"].split(",") if i)
        expect(shown == indices, f"xpu-dra-pair: XPU_VISIBLE_DEVICES {view['XPU_VISIBLE_DEVICES']}, allocated {indices}")
        expect(view["CXPU_VISIBLE_DEVICES"] == view["XPU_VISIBLE_DEVICES"],
               f"xpu-dra-pair: CXPU_VISIBLE_DEVICES {view['CXPU_VISIBLE_DEVICES']}, allocated {indices}")
        uuids = sorted(view["KUNLUNXIN_XPU_UUIDS"].split(","))
        expect(uuids == sorted(devices[i]["uuid"] for i in indices), f"xpu-dra-pair: KUNLUNXIN_XPU_UUIDS {uuids}")
        nodes = sorted(view["NODES"].split())
        expected_nodes = sorted([f"xpu{i}" for i in indices] + ["xpuctrl"])
        expect(nodes == expected_nodes, f"xpu-dra-pair: device nodes {nodes}, expected {expected_nodes}")
        print(f"  xpu-dra-pair: cards {indices} (NUMA node {numa.pop()}), nodes {' '.join(nodes)}, "
              f"XPU_VISIBLE_DEVICES={view['XPU_VISIBLE_DEVICES']}")
        prepared = self.dra_prepare_latencies()
        expect(prepared, "the driver logged no NodePrepareResources")
        print(f"  NodePrepareResources as the driver logged it: {prepared[-1][-60:]}")

        self.dra_pod_labels("xpu-dra-pair", indices, devices)
        self.dra_check_second_node(claim)
        self.dra_admin_access(indices[0], devices)
        self.dra_pod_health(devices)
        self.dra_extended_resource(devices)

        self.node.kubectl("apply", "-f", "-", input_text=json.dumps(dra_workload("xpu-dra-greedy", "xpu-too-many")))
        message = wait_for("xpu-dra-greedy unschedulable", lambda: self.unschedulable("xpu-dra-greedy"), 60)
        expect(self.pod("xpu-dra-greedy")["status"]["phase"] == "Pending", "xpu-dra-greedy is not pending")
        print(f"  xpu-dra-greedy (9 cards): Pending, scheduler: {message[:160]}")
        self.delete_pods("xpu-dra-greedy")

        # Health: a free card turns unhealthy on xpud, then recovers; the slice says so.
        free = next(i for i in sorted(devices) if i not in indices)
        before = self.dra_slice()
        started = time.monotonic()
        self.node.set_health(free, False)
        wait_for(f"xpu-{free} healthy=false in the slice",
                 lambda: dra_attribute(self.dra_devices()[f"xpu-{free}"], "healthy") is False, 60)
        figure("card unhealthy on xpud to the ResourceSlice saying so", time.monotonic() - started)
        after = self.dra_slice()
        expect(after["spec"]["pool"]["generation"] > before["spec"]["pool"]["generation"],
               f"pool generation {before['spec']['pool']['generation']} -> {after['spec']['pool']['generation']}")
        started = time.monotonic()
        self.node.set_health(free, True)
        wait_for(f"xpu-{free} healthy=true in the slice",
                 lambda: dra_attribute(self.dra_devices()[f"xpu-{free}"], "healthy") is True, 60)
        figure("card healthy again to the ResourceSlice saying so", time.monotonic() - started)
        self.dra_taints(devices, indices)

        # Idle: nothing changes, so nothing is written.
        idle = self.dra_slice()["metadata"]["resourceVersion"]
        idle_seconds = 30
        time.sleep(idle_seconds)  # the figure is the absence of writes over this span
        expect(self.dra_slice()["metadata"]["resourceVersion"] == idle,
               f"the slice was rewritten while nothing changed ({idle_seconds} s idle)")
        print(f"  idle for {idle_seconds} s: 0 slice writes")

        # The driver restarted while the pod runs: the claim stays prepared, the slice untouched.
        identity = container_identity(self.pod("xpu-dra-pair"))
        old_driver = self.dra_driver_pod()["metadata"]["name"]
        slice_version = self.dra_slice()["metadata"]["resourceVersion"]
        self.node.kubectl("delete", "pod", "-n", CHART_NAMESPACE, old_driver, "--wait=true", "--timeout=60s")
        wait_for("a new DRA driver pod ready", lambda: (p := self.dra_driver_pod()) is not None
                 and p["metadata"]["name"] != old_driver and self.dra_driver_ready(), 90)
        checkpoint = self.dra_checkpoint()
        expect(claim["metadata"]["uid"] in checkpoint,
               f"after the driver's restart the checkpoint lacks the claim: {sorted(checkpoint)}")
        expect(container_identity(self.pod("xpu-dra-pair")) == identity, "xpu-dra-pair changed across the driver's restart")
        time.sleep(3)  # the new driver's first reconcile has run by now; it must adopt, not rewrite
        expect(self.dra_slice()["metadata"]["resourceVersion"] == slice_version,
               "the restarted driver rewrote an unchanged slice")
        print("  driver restarted: claim still prepared, pod untouched, slice not rewritten")

        # Deleting the pod unprepares the claim: its CDI spec and checkpoint entry go, the cards are free.
        claim_spec = os.path.join(CDI_DIR, f"kunlunxin-claim-{claim['metadata']['uid']}.json")
        expect(os.path.exists(claim_spec), f"{claim_spec} missing while the pod runs")
        started = time.monotonic()
        # The README's pod keeps the default 30 s grace period, which its sleep (PID 1, no
        # handler) would use up: the figure is about unprepare, not about that.
        self.node.kubectl("delete", "pod", "-n", "default", "--grace-period=1", "--wait=true",
                          "--timeout=60s", "xpu-dra-pair")
        wait_for("the claim unprepared", lambda: claim["metadata"]["uid"] not in self.dra_checkpoint()
                 and not os.path.exists(claim_spec), 60)
        figure("DRA pod deleted (grace period 1 s) to claim unprepared", time.monotonic() - started)
        unprepared = [line for line in self.dra_driver_log() if "unprepared claim" in line]
        expect(unprepared, "the driver logged no NodeUnprepareResources")
        print(f"  NodeUnprepareResources as the driver logged it: {unprepared[-1][-60:]}")
        self.node.kubectl("apply", "-f", "-", input_text=json.dumps(dra_workload("xpu-dra-again", "xpu-pair")))
        self.wait_pod_running("xpu-dra-again")
        print("  after the delete, a new pod gets two cards again")
        self.delete_pods("xpu-dra-again")

    def dra_admin_access(self, held, devices):
        """Admin access: in a namespace labelled resource.kubernetes.io/admin-access=true a claim
        with adminAccess gets a card xpu-dra-pair holds, with its device node and environment;
        deleting it leaves xpu-dra-pair's claim prepared and its container untouched. Elsewhere
        the API server refuses such a claim."""
        namespace = "xpu-diagnostics"
        claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                 "metadata": {"name": "xpu-look", "namespace": namespace},
                 "spec": {"devices": {"requests": [{"name": "xpus", "exactly": {
                     "deviceClassName": DRA_DRIVER, "allocationMode": "ExactCount", "count": 1,
                     "adminAccess": True,
                     "selectors": [{"cel": {"expression": f'device.attributes["{DRA_DRIVER}"].index == {held}'}}]}}]}}}
        pod = dra_workload("xpu-admin", None)
        pod["metadata"]["namespace"] = namespace
        pod["spec"]["resourceClaims"] = [{"name": "xpus", "resourceClaimName": "xpu-look"}]
        self.node.kubectl("create", "namespace", namespace)
        try:
            refused = self.node.kubectl("apply", "-f", "-", input_text=json.dumps(claim), check=False)
            expect(refused.returncode != 0 and "admin-access" in refused.stderr,
                   f"an adminAccess claim in an unlabelled namespace: {refused.stderr.strip()!r}")
            self.node.kubectl("label", "namespace", namespace, "resource.kubernetes.io/admin-access=true")
            pair = self.claim_of("xpu-dra-pair")
            identity = container_identity(self.pod("xpu-dra-pair"))
            self.node.kubectl("apply", "-f", "-", input_text=json.dumps(claim))
            self.node.kubectl("apply", "-f", "-", input_text=json.dumps(pod))
            self.wait_pod_running("xpu-admin", namespace)

            def printed():
                lines = dict(line.split("=", 1) for line in
                             self.node.kubectl("logs", "-n", namespace, "xpu-admin").splitlines() if "=" in line)
                return lines if "NODES" in lines else None
            view = wait_for("xpu-admin's output", printed, 30)
            expect(view["XPU_VISIBLE_DEVICES"] == str(held) and view["KUNLUNXIN_XPU_UUIDS"] == devices[held]["uuid"]
                   and sorted(view["NODES"].split()) == sorted([f"xpu{held}", "xpuctrl"]),
                   f"xpu-admin: {view}, expected card {held}")
            admin_uid = self.node.get_json("resourceclaim", "-n", namespace, "xpu-look")["metadata"]["uid"]
            expect(admin_uid in self.dra_checkpoint(), "the admin claim is not in the driver's checkpoint")
            self.node.kubectl("delete", "pod", "-n", namespace, "--wait=true", "--timeout=60s", "xpu-admin")
            wait_for("the admin claim unprepared", lambda: admin_uid not in self.dra_checkpoint(), 60)
            expect(pair["metadata"]["uid"] in self.dra_checkpoint(), "xpu-dra-pair's claim was unprepared with it")
            expect(container_identity(self.pod("xpu-dra-pair")) == identity, "xpu-dra-pair changed")
            print(f"  admin access: xpu-admin in {namespace} got card {held}, which xpu-dra-pair holds; "
                  "deleting it left xpu-dra-pair's claim prepared; unlabelled namespace refused")
        finally:
            self.node.kubectl("delete", "namespace", namespace, "--wait=true", "--timeout=90s")

    def dra_extended_resource(self, devices):
        """The replaced add-on's demo pod (limits: kunlunxin.com/xpu: 1), unchanged, on the DRA
        node: from 1.36 the scheduler serves it through the DeviceClass's extendedResourceName
        with a claim of its own, the driver prepares it, the container sees its card as under the
        device plugin and the exporter labels the card with the pod. Before 1.36 the API server
        drops the field and the pod stays Pending for want of the resource."""
        manifest = {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "xpu-demo", "namespace": "default"},
            "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 1,
                     "containers": [workload_container({"limits": {RESOURCE: "1"}})]},
        }
        started = time.monotonic()
        self.node.kubectl("apply", "-f", "-", input_text=json.dumps(manifest))
        try:
            if self.server_minor() < 36:
                message = wait_for("xpu-demo unschedulable", lambda: self.unschedulable("xpu-demo"), 60)
                expect(f"Insufficient {RESOURCE}" in message, f"xpu-demo: {message}")
                print(f"  1.{self.server_minor()}: the demo pod stays Pending ({message[:80]})")
                return
            self.wait_pod_running("xpu-demo")
            figure("the add-on's demo pod created to running (DRA, extended resource)", time.monotonic() - started)
            status = self.pod("xpu-demo")["status"].get("extendedResourceClaimStatus") or {}
            claim_name = status.get("resourceClaimName")
            expect(claim_name, f"xpu-demo has no extendedResourceClaimStatus: {status}")
            claim = self.node.get_json("resourceclaim", "-n", "default", claim_name)
            results = claim["status"]["allocation"]["devices"]["results"]
            expect(len(results) == 1 and results[0]["driver"] == DRA_DRIVER, f"{claim_name}: {results}")
            index = int(results[0]["device"].split("-")[1])
            view = self.workload_view("xpu-demo")
            expect(view["XPU_VISIBLE_DEVICES"] == str(index) and view["CXPU_VISIBLE_DEVICES"] == str(index),
                   f"xpu-demo: {view}, allocated card {index}")
            expect(view["KUNLUNXIN_XPU_UUIDS"] == devices[index]["uuid"], f"xpu-demo: {view}")
            expect(sorted(view["NODES"].split()) == sorted([f"xpu{index}", "xpuctrl"]), f"xpu-demo: {view}")
            print(f"  xpu-demo (limits {RESOURCE}: 1) through DRA: claim {claim_name}, card {index}, "
                  f"XPU_VISIBLE_DEVICES={view['XPU_VISIBLE_DEVICES']}")
            self.dra_pod_labels("xpu-demo", [index], devices)
        finally:
            self.delete_pods("xpu-demo")

    def server_minor(self):
        return int(json.loads(self.node.kubectl("version", "-o", "json"))["serverVersion"]["minor"].rstrip("+"))

    def dra_taints(self, devices, held):
        """Device taints (Kubernetes 1.36+): a fault on xpud taints the card in the slice, the
        scheduler then places no claim on it, even one of a class that does not look at the
        `healthy` attribute; recovery removes the taint and the card is allocatable again. With
        NoExecute opted in for driver_fault, a pod holding a card that faults is evicted. On an
        older API server the taint is dropped and the driver says so once."""
        card = next(i for i in sorted(devices, reverse=True) if i not in held)
        reason = "driver reports state ERROR (3)"
        if self.server_minor() < 36:
            self.node.set_health(card, False, reason)
            try:
                wait_for(f"xpu-{card} healthy=false in the slice",
                         lambda: dra_attribute(self.dra_devices()[f"xpu-{card}"], "healthy") is False, 60)
                expect("taints" not in self.dra_devices()[f"xpu-{card}"],
                       f"a {self.server_minor()} API server kept a device taint")
                wait_for("the driver saying the API server drops taints",
                         lambda: any("dropped the devices' taints" in line for line in self.dra_driver_log()), 30)
            finally:
                self.node.set_health(card, True)
            wait_for(f"xpu-{card} healthy again in the slice",
                     lambda: dra_attribute(self.dra_devices()[f"xpu-{card}"], "healthy") is True, 60)
            print(f"  1.{self.server_minor()}: no device taints in the API; the driver said so, healthy=false marks the card")
            return

        # A user's own class: every card of the driver, healthy or not.
        any_card = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                    "metadata": {"name": "xpu-any-card"},
                    "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRA_DRIVER}"'}}]}}
        self.node.kubectl("apply", "-f", "-", input_text=json.dumps(any_card))
        only = f'device.attributes["{DRA_DRIVER}"].index == {card}'

        def taint_of(index):
            taints = self.dra_devices()[f"xpu-{index}"].get("taints") or []
            return taints[0] if len(taints) == 1 else None
        try:
            started = time.monotonic()
            self.node.set_health(card, False, reason)
            taint = wait_for(f"xpu-{card} tainted in the slice", lambda: taint_of(card), 30)
            figure("fault on xpud to the card's taint in the ResourceSlice", time.monotonic() - started)
            expected = {"key": f"{DRA_DRIVER}/driver_fault", "value": "driver-reports-state-ERROR-3",
                        "effect": "NoSchedule"}
            expect({k: taint.get(k) for k in expected} == expected and taint.get("timeAdded"),
                   f"xpu-{card}'s taint {taint}, expected {expected} with a timeAdded")
            self.node.kubectl("apply", "-f", "-", input_text=json.dumps(
                claim_template("xpu-that-card", 1, selector=only, device_class="xpu-any-card")))
            self.node.kubectl("apply", "-f", "-", input_text=json.dumps(dra_workload("xpu-dra-tainted", "xpu-that-card")))
            message = wait_for("xpu-dra-tainted unschedulable", lambda: self.unschedulable("xpu-dra-tainted"), 60)
            print(f"  xpu-{card} tainted {taint['key']}={taint['value']}:{taint['effect']}; "
                  f"a claim for it of a class without the healthy filter: Pending ({message[:100]})")
            started = time.monotonic()
            self.node.set_health(card, True)
            wait_for(f"xpu-{card}'s taint gone", lambda: "taints" not in self.dra_devices()[f"xpu-{card}"], 30)
            figure("recovery on xpud to the card's taint gone", time.monotonic() - started)
            self.wait_pod_running("xpu-dra-tainted")
            figure("recovery on xpud to the waiting pod running on the card", time.monotonic() - started)
            print(f"  xpu-{card} healthy again: taint gone, the waiting pod runs on it")

            # NoExecute for driver_fault: the pod holding the card is evicted when it faults.
            self.helm_install("--reuse-values", "--set", "dra.deviceTaints.noExecute={driver_fault}")
            wait_for("the DRA driver restarted with NoExecute", lambda: self.dra_driver_ready() and "driver_fault" in
                     self.dra_driver_pod()["spec"]["containers"][0]["args"], 90)
            uid = self.pod("xpu-dra-tainted")["metadata"]["uid"]
            started = time.monotonic()
            self.node.set_health(card, False, reason)

            def evicted():
                result = self.node.kubectl("get", "pod", "-n", "default", "xpu-dra-tainted", "-o", "json", check=False)
                if result.returncode != 0:
                    return "deleted"
                pod = json.loads(result.stdout)
                return "replaced" if pod["metadata"]["uid"] != uid else None
            wait_for("xpu-dra-tainted evicted", evicted, 60)
            figure("fault on xpud to the pod holding the card evicted (NoExecute)", time.monotonic() - started)
            expect(taint_of(card)["effect"] == "NoExecute", f"xpu-{card}'s taint {taint_of(card)}")
            events = self.node.kubectl("get", "events", "-n", "default", "--field-selector",
                                       "involvedObject.name=xpu-dra-tainted", "-o", "json")
            reasons = sorted({e.get("reason", "") for e in json.loads(events)["items"]})
            print(f"  NoExecute for driver_fault: xpu-dra-tainted evicted; its events: {reasons}")
        finally:
            self.node.set_health(card, True)
            self.node.kubectl("delete", "pod", "-n", "default", "--ignore-not-found", "--wait=true",
                              "--timeout=60s", "xpu-dra-tainted")
            self.node.kubectl("delete", "resourceclaimtemplate", "-n", "default", "--ignore-not-found", "xpu-that-card")
            self.node.kubectl("delete", "deviceclass", "--ignore-not-found", "xpu-any-card")
            self.helm_install("--reuse-values", "--set-json", "dra.deviceTaints.noExecute=[]")
            wait_for("the DRA driver ready", self.dra_driver_ready, 90)
        wait_for(f"xpu-{card}'s taint gone", lambda: "taints" not in self.dra_devices()[f"xpu-{card}"], 30)

    def unschedulable(self, name):
        for condition in self.pod(name)["status"].get("conditions", []):
            if condition["type"] == "PodScheduled" and condition.get("reason") == "Unschedulable":
                return condition.get("message", "")
        return None

    def dra_pod_health(self, devices):
        """A card a pod holds turns unhealthy on xpud: the driver's health stream tells the
        kubelet, and the pod's own status names the card (allocatedResourcesStatus). The claim
        comes from a template: the 1.35 kubelet finds a container's claim only through the pod's
        status.resourceClaimStatuses, which only generated claims have (1.37 also resolves a claim
        the pod names; pkg/kubelet/cm/dra/manager.go, UpdateAllocatedResourcesStatus)."""
        self.node.kubectl("apply", "-f", "-", input_text=json.dumps(claim_template("xpu-watched", 1)))
        self.node.kubectl("apply", "-f", "-", input_text=json.dumps(dra_workload("xpu-dra-watched", "xpu-watched")))
        try:
            self.wait_pod_running("xpu-dra-watched")
            result = self.claim_of("xpu-dra-watched")["status"]["allocation"]
            index = int(result["devices"]["results"][0]["device"].split("-")[1])
            uuid = devices[index]["uuid"]

            def reported(health):
                for status in self.pod("xpu-dra-watched")["status"].get("containerStatuses", []):
                    for entry in status.get("allocatedResourcesStatus") or []:
                        for resource in entry.get("resources") or []:
                            if uuid in resource.get("resourceID", "") and resource.get("health") == health:
                                return f"{entry['name']}: {resource['resourceID']} {health}"
                return None
            def claim_condition(status):
                """The driver's Healthy condition of the card in the claim's status.devices."""
                for entry in self.claim_of("xpu-dra-watched")["status"].get("devices") or []:
                    if entry.get("driver") == "xpu.kunlunxin.com" and entry.get("device") == f"xpu-{index}":
                        for condition in entry.get("conditions") or []:
                            if condition.get("type") == "Healthy" and condition.get("status") == status:
                                return dict(condition, data=entry.get("data"))
                return None
            wait_for(f"xpu-dra-watched's status: card {index} Healthy", lambda: reported("Healthy"), 60)
            healthy = wait_for(f"xpu-dra-watched's claim: card {index} Healthy=True", lambda: claim_condition("True"), 30)
            expect(healthy["data"] == {"uuid": uuid, "index": index} and healthy["reason"] == "Healthy",
                   f"the claim's entry for card {index}: {healthy}")
            started = time.monotonic()
            self.node.set_health(index, False)
            try:
                shown = wait_for(f"xpu-dra-watched's status: card {index} Unhealthy",
                                 lambda: reported("Unhealthy"), 60)
                figure("held card unhealthy on xpud to the pod's status saying so", time.monotonic() - started)
                print(f"  xpu-dra-watched status: {shown}")
                failed = wait_for(f"xpu-dra-watched's claim: card {index} Healthy=False",
                                  lambda: claim_condition("False"), 30)
                figure("held card unhealthy on xpud to the claim's status.devices saying so", time.monotonic() - started)
                expect("cluster test fault" in failed["message"] and failed["lastTransitionTime"] >= healthy["lastTransitionTime"],
                       f"the claim's condition for the unhealthy card: {failed}")
                print(f"  xpu-dra-watched's claim: xpu-{index} Healthy=False, reason {failed['reason']}, "
                      f"message {failed['message']!r}")
            finally:
                self.node.set_health(index, True)
            wait_for(f"xpu-dra-watched's status: card {index} Healthy again", lambda: reported("Healthy"), 60)
            wait_for(f"xpu-dra-watched's claim: card {index} Healthy=True again", lambda: claim_condition("True"), 30)
        finally:
            self.node.kubectl("delete", "pod", "-n", "default", "--grace-period=1", "--wait=true",
                              "--timeout=60s", "xpu-dra-watched", check=False)
            self.node.kubectl("delete", "resourceclaimtemplate", "-n", "default", "xpu-watched", check=False)

    def dra_checkpoint(self):
        try:
            with open(os.path.join(DRA_PLUGIN_DIR, "checkpoint.json"), encoding="utf-8") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def dra_driver_log(self):
        log = self.node.kubectl("logs", "-n", CHART_NAMESPACE, self.dra_driver_pod()["metadata"]["name"])
        return [line.strip() for line in log.splitlines()]

    def dra_prepare_latencies(self):
        return [line for line in self.dra_driver_log() if "msg=\"prepared claim" in line]

    def dra_pod_labels(self, pod_name, indices, devices):
        """The exporter labels the DRA pod's cards with it (pod-resources dynamic_resources)."""
        uuids = {devices[i]["uuid"] for i in indices}
        def labelled():
            found = set()
            for line in self.exporter_metrics().splitlines():
                if line.startswith("xpu_healthy{") and f'pod="{pod_name}"' in line:
                    found |= {u for u in uuids if f'uuid="{u}"' in line}
            return found == uuids
        wait_for(f"the exporter labels {pod_name}'s cards", labelled, 90)
        print(f"  exporter: xpu_healthy of cards {indices} carries pod=\"{pod_name}\"")

    # ---- a reboot ----------------------------------------------------------------------------

    def s19_reboot(self):
        """A reboot (services stopped, every node process ended, /run emptied, everything started
        again in boot order): a bare pod holding a device plugin's card is rejected
        (UnexpectedAdmissionError) while a Deployment's pod is replaced and gets a card; a pod
        with a DRA claim and a bare pod asking limits kunlunxin.com/xpu through DRA both come
        back with the same claims and cards, the claim's CDI spec rewritten."""
        self.node.kubectl("delete", "pod", "-n", "default", "--all", "--wait=true", "--timeout=60s")
        self.wait_plugin_serving()
        self.wait_allocatable(8, 90)
        try:
            self.reboot_device_plugin()
        finally:
            self.node.kubectl("delete", "deployment", "-n", "default", "xpu-reboot-owned", "--ignore-not-found")
            self.node.kubectl("delete", "pod", "-n", "default", "--all", "--wait=true", "--timeout=60s")
        self.node.kubectl("label", "node", NODE_NAME, f"{NODE_LABEL}=enable", "--overwrite")
        # Memory shares and extended resources through DRA are on by default from 1.36.
        newer = self.server_minor() >= 36
        self.helm_install("--reuse-values", "--set", "allocation=dra", "--set", f"dra.sharing.enabled={str(newer).lower()}")
        try:
            wait_for("the DRA driver ready", self.dra_driver_ready, 120)
            wait_for("the pool with the node's cards", lambda: self.dra_pool_sizes() == ((16, 8) if newer else (8, 0)), 90)
            # The scheduler hands an extended resource to DRA only where the node's allocatable
            # for it is 0 (shouldDelegateResourceToDRA in pkg/scheduler/framework/plugins/
            # noderesources/fit.go): until the kubelet says the device plugin is gone, a pod
            # asking limits goes the device plugin's way and the kubelet refuses it.
            self.wait_allocatable(0, 90)
            self.reboot_dra(newer)
        finally:
            self.back_to_device_plugin()

    def back_to_device_plugin(self):
        """No workload pods and claim templates left, the chart back to the device plugin without
        shares, and the plugin serving the node's 8 cards."""
        self.node.kubectl("delete", "pod", "-n", "default", "--all", "--wait=true", "--timeout=60s")
        self.node.kubectl("delete", "resourceclaimtemplate", "-n", "default", "--all", check=False)
        self.helm_install("--reuse-values", "--set", "allocation=devicePlugin", "--set", "dra.sharing.enabled=false")
        wait_for("three DaemonSets ready", self.daemonsets_ready, 120)
        self.wait_plugin_serving()
        self.wait_allocatable(8, 90)

    def reboot(self, label):
        """Node.power_off and Node.boot, checking what the reboot emptied and what it kept;
        returns a function giving what the kubelet logged since it was started, and when (the
        monotonic clock) it was."""
        kept = ["/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"]
        if self.dra_driver_pod():
            kept.append(os.path.join(DRA_PLUGIN_DIR, "checkpoint.json"))
        started = time.monotonic()
        self.node.power_off()
        figure(f"{label}: power off (services stopped, every node process ended, /run emptied)",
               time.monotonic() - started)
        expect(os.listdir("/run") == [], f"/run after the power off: {os.listdir('/run')}")
        expect(not os.path.exists(CDI_DIR), f"{CDI_DIR} survived the power off")
        expect(all(os.path.exists(path) for path in kept), f"a reboot keeps {kept}")
        kubelet_log = self.node.components["kubelet"].log_path
        offset = os.path.getsize(kubelet_log)
        steps, kubelet_started = self.node.boot()
        for step, seconds in steps.items():
            figure(f"{label}: boot to {step}", seconds)

        def logged():
            with open(kubelet_log, "rb") as log:
                log.seek(offset)
                return log.read()
        return logged, kubelet_started

    def deployment_pod(self, name):
        """The running, ready pod of Deployment `name`, or None."""
        for pod in self.node.get_json("pods", "-n", "default", "-l", f"app={name}")["items"]:
            status = pod["status"]
            if (pod["metadata"].get("deletionTimestamp") is None and status.get("phase") == "Running"
                    and all(c.get("ready") for c in status.get("containerStatuses", [{}]))):
                return pod
        return None

    def expect_cards_shown(self, name, uids_or_indices, devices):
        """The container of pod `name` (its current one) sees exactly those cards."""
        indices = sorted(devices[u]["index"] if isinstance(u, str) else u for u in uids_or_indices)
        view = self.workload_view(name)
        shown = sorted(int(i) for i in view["XPU_VISIBLE_DEVICES"].split(",") if i)
        expect(shown == indices, f"{name}: XPU_VISIBLE_DEVICES {view['XPU_VISIBLE_DEVICES']}, allocated {indices}")
        expect(sorted(view["NODES"].split()) == sorted([f"xpu{i}" for i in indices] + ["xpuctrl"]),
               f"{name}: device nodes {view['NODES']}, allocated {indices}")
        return indices

    def reboot_device_plugin(self):
        devices = {d["uuid"]: d for d in self.devices()}
        one = {"limits": {RESOURCE: "1"}}
        self.node.kubectl("apply", "-f", "-", input_text=json.dumps(reboot_pod("xpu-reboot-bare", one)))
        self.node.kubectl("apply", "-f", "-", input_text=json.dumps(reboot_deployment("xpu-reboot-owned", one)))
        self.wait_pod_running("xpu-reboot-bare")
        bare_uid = self.pod("xpu-reboot-bare")["metadata"]["uid"]
        owned = wait_for("the Deployment's pod running", lambda: self.deployment_pod("xpu-reboot-owned"), 90)
        bare_cards = self.allocated_ids(bare_uid)
        expect(len(bare_cards) == 1, f"xpu-reboot-bare holds {bare_cards}")
        logged, kubelet_started = self.reboot("device plugin")

        registration = b"Got registration request from device plugin with resource"
        wait_for("the device plugin registered with the booted kubelet", lambda: registration in logged(), 120)
        figure("device plugin: kubelet start to the plugin's registration", time.monotonic() - kubelet_started)

        def rejected():
            status = self.pod("xpu-reboot-bare")["status"]
            return status if status.get("phase") == "Failed" else None
        status = wait_for("the bare pod's fate after the reboot", rejected, 120)
        figure("device plugin: kubelet start to the bare pod rejected", time.monotonic() - kubelet_started)
        # What the kubelet's device manager answers a pod it admits before the plugin registered
        # (devicesToAllocate in pkg/kubelet/cm/devicemanager/manager.go; tests/cluster/README.md,
        # "A reboot and the device plugin"): the pod fails for good.
        expect(status.get("reason") == "UnexpectedAdmissionError"
               and "no healthy devices present" in status.get("message", ""),
               f"xpu-reboot-bare after the reboot: {status.get('reason')}: {status.get('message')}")
        print(f"  bare pod: {status['reason']}: {status['message']}")

        replaced = wait_for("the Deployment's pod replaced and running", lambda: (
            (pod := self.deployment_pod("xpu-reboot-owned")) and pod["metadata"]["uid"] != owned["metadata"]["uid"]
            and pod), 180)
        figure("device plugin: kubelet start to the Deployment's new pod running", time.monotonic() - kubelet_started)
        old_owned = self.node.get_json("pods", "-n", "default", "-l", "app=xpu-reboot-owned")["items"]
        print(f"  Deployment: {owned['metadata']['name']} -> {replaced['metadata']['name']}; its pods now: "
              + ", ".join(f"{p['metadata']['name']} {p['status'].get('phase')} {p['status'].get('reason', '')}"
                          for p in old_owned))
        cards = self.allocated_ids(replaced["metadata"]["uid"])
        expect(len(cards) == 1, f"the Deployment's new pod holds {cards}")
        indices = self.expect_cards_shown(replaced["metadata"]["name"], cards, devices)
        print(f"  the Deployment's new pod holds card {indices}")
        self.wait_allocatable(8, 90)
        wait_for("the chart's DaemonSets ready again", self.daemonsets_ready, 120)
        figure("device plugin: kubelet start to the chart's DaemonSets ready", time.monotonic() - kubelet_started)
        expect(os.path.exists(os.path.join(CDI_DIR, "kunlunxin-xpu.json")), "xpud did not rewrite its CDI spec")
        registrations = logged().count(registration)
        expect(registrations == 1, f"the plugin registered {registrations} times with the booted kubelet")

    def reboot_dra(self, newer):
        devices = {d["index"]: d for d in self.devices()}
        share_card, grant = 3, 8 * GIB
        names = []
        if newer:
            # An 8 GiB share of card 3 first (a card held whole takes no share), then the add-on's
            # demo pod's request through the DeviceClass's extendedResourceName.
            self.node.kubectl("apply", "-f", "-", input_text=json.dumps(share_template("xpu-reboot-share", "8Gi", share_card)))
            shared = dra_workload("xpu-reboot-share", "xpu-reboot-share")
            del shared["spec"]["restartPolicy"]  # the default, Always: the pod comes back
            self.node.kubectl("apply", "-f", "-", input_text=json.dumps(shared))
            self.wait_pod_running("xpu-reboot-share")
            self.node.kubectl("apply", "-f", "-", input_text=json.dumps(
                reboot_pod("xpu-reboot-extended", {"limits": {RESOURCE: "1"}})))
            self.wait_pod_running("xpu-reboot-extended")
            names += ["xpu-reboot-share", "xpu-reboot-extended"]
        self.node.kubectl("apply", "-f", "-", input_text=json.dumps(claim_template("xpu-reboot-pair", 2)))
        claimed = dra_workload("xpu-reboot-claim", "xpu-reboot-pair")
        del claimed["spec"]["restartPolicy"]
        self.node.kubectl("apply", "-f", "-", input_text=json.dumps(claimed))
        self.wait_pod_running("xpu-reboot-claim")
        names.append("xpu-reboot-claim")
        before = {name: self.reboot_claim_view(name) for name in names}
        identities = {name: container_identity(self.pod(name)) for name in names}
        logged, kubelet_started = self.reboot("DRA")

        back = {}  # pod name -> seconds from the kubelet's start to seeing it run again

        def all_back():
            for pod in self.node.get_json("pods", "-n", "default")["items"]:
                name, status = pod["metadata"]["name"], pod["status"]
                if (name in names and name not in back and status.get("phase") == "Running"
                        and all(c.get("ready") for c in status.get("containerStatuses", [{}]))
                        and container_identity(pod)[1] != identities[name][1]):
                    back[name] = time.monotonic() - kubelet_started
            return len(back) == len(names)
        wait_for(f"{', '.join(names)} running again in new containers", all_back, 180)
        for name in names:
            figure(f"DRA: kubelet start to {name} running again", back[name])
        for name in names:
            claim_uid, results, indices = before[name]
            after = self.reboot_claim_view(name)
            expect(after[0] == claim_uid and after[1] == results,
                   f"{name}: claim {claim_uid} {results} before the reboot, {after[0]} {after[1]} after")
            spec = os.path.join(CDI_DIR, f"kunlunxin-claim-{claim_uid}.json")
            expect(os.path.exists(spec), f"{name}: {spec} not rewritten")
            expect(claim_uid in self.dra_checkpoint(), f"{name}: its claim left the driver's checkpoint")
            if name == "xpu-reboot-share":
                self.expect_share(name, share_card, grant)
                # xpud, started afresh, made the new container's cXPU instance through the hooks.
                expected = {(share_card, self.instance_id(name), grant)}
                on_card = {i for i in self.xpud_instances() if i[0] == share_card}
                expect(on_card == expected, f"xpud's instances on card {share_card}: {on_card}, expected {expected}")
            else:
                self.expect_cards_shown(name, indices, devices)
            uid = self.pod(name)["metadata"]["uid"]
            expect(uid == identities[name][0], f"{name} is a new pod")
            print(f"  {name}: the same pod and claim ({claim_uid}), cards {indices}, {spec} rewritten")
        wait_for("the DRA driver ready again", self.dra_driver_ready, 120)
        figure("DRA: kubelet start to the driver ready", time.monotonic() - kubelet_started)

    def reboot_claim_view(self, name):
        """(claim UID, allocation results, card indices) of pod `name`'s claim: its own, or the
        one the scheduler made for its extended resource."""
        status = self.pod(name)["status"]
        claim_name = (status.get("extendedResourceClaimStatus") or {}).get("resourceClaimName")
        claim = (self.node.get_json("resourceclaim", "-n", "default", claim_name) if claim_name
                 else self.claim_of(name))
        results = claim["status"]["allocation"]["devices"]["results"]
        expect(results and all(r["driver"] == DRA_DRIVER for r in results), f"{name}'s claim: {results}")
        return (claim["metadata"]["uid"], results,
                sorted(int(r["device"].split("-")[1]) for r in results))

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
        # A node as the README finds it: no release, no label, no pods of the other scenarios.
        self.node.kubectl("label", "node", NODE_NAME, f"{NODE_LABEL}-", check=False)
        self.remove_chart_and_pods()
        # This node's stand-in for a registry: the busybox the README names is the test's own.
        self.node.ctr("images", "tag", "--force", images.BUSYBOX, "docker.io/library/busybox:latest")
        try:
            output = self.run_readme_block("### Try it on a real node")
            for wanted in ["xpu-device-plugin-daemonset", "xpu-exporter", "xpu-rbac-token-gen",
                           "XPU_VISIBLE_DEVICES=", "KUNLUNXIN_XPU_UUIDS=", "/dev/xpu", "xpu validation passed"]:
                expect(wanted in output, f"the README's block printed no {wanted!r}:\n{output}")
            # kubectl aligns the column to the longest resource name the node has had.
            capacity = [line for line in output.splitlines() if line.split() == [f"{RESOURCE}:", "8"]]
            expect(len(capacity) == 2, f"describe node | grep: {output}")
            print("  " + "\n  ".join(line for line in output.splitlines() if "XPU" in line or "/dev/xpu" in line))
        finally:
            self.node.kubectl("delete", "pod", "xpu-demo", "--ignore-not-found", "--wait=true", check=False)
            # helm uninstall leaves test hooks (the validator pod) behind.
            self.node.kubectl("delete", "pod", "-n", CHART_NAMESPACE, "xpu-validator", "--ignore-not-found",
                              "--wait=true", check=False)
            self.node.helm("uninstall", RELEASE, "--namespace", CHART_NAMESPACE, "--wait", check=False)
            self.node.kubectl("label", "node", NODE_NAME, f"{NODE_LABEL}-", check=False)
            shutil.rmtree("/tmp/xpu-image", ignore_errors=True)  # where the block builds the image

    def s15_takeover(self):
        """The README's way over from the replaced add-on: under add-on-shaped objects (its names,
        its RBAC, privileged pods, no Helm owner) a pod holds a card; the README's block deletes
        them and installs the chart; the pod keeps its card and its container, and no card is
        advertised twice."""
        self.remove_chart_and_pods()
        self.node.kubectl("label", "node", NODE_NAME, f"{NODE_LABEL}=enable", "--overwrite")
        self.node.refuse_privileged_pods(False)
        addon = self.addon_objects()
        try:
            self.node.kubectl("create", "-f", "-", input_text=json.dumps(
                {"apiVersion": "v1", "kind": "List", "items": addon}))
            wait_for("the add-on's three DaemonSets ready", lambda: all(
                self.node.get_json("daemonset", "-n", CHART_NAMESPACE, name)["status"].get("numberReady") == 1
                for name in DAEMONSETS), 120)
            self.wait_allocatable(8, 90)
            holder = self.workload("xpu-legacy", 1)
            before = (container_identity(holder), self.allocated_ids(holder["metadata"]["uid"]))
            expect(len(before[1]) == 1, f"xpu-legacy holds {before[1]}")
            print(f"  under the add-on's objects: xpu-legacy holds {before[1]}")

            started = time.monotonic()
            output = self.run_readme_block("### Moving from the replaced add-on")
            figure("README's way over: script and helm install to rolled out", time.monotonic() - started)
            would = [line for line in output.splitlines() if line.startswith("would delete: ")]
            expect(len(would) == 12, f"--dry-run named {len(would)} objects, not 12:\n{output}")
            self.wait_plugin_serving()
            self.wait_allocatable(8, 90)
            figure("README's way over to allocatable 8", time.monotonic() - started)

            owner = self.node.get_json("daemonset", "-n", CHART_NAMESPACE, DAEMONSETS[0])["metadata"]
            expect(owner.get("annotations", {}).get("meta.helm.sh/release-name") == RELEASE,
                   f"{DAEMONSETS[0]} is not the release's: {owner}")
            left = self.node.get_json("pods", "-n", CHART_NAMESPACE, "-l", "app in (" + ",".join(DAEMONSETS) + ")")
            expect(not left["items"], f"the add-on's pods are still there: "
                                      f"{[p['metadata']['name'] for p in left['items']]}")
            after = (container_identity(self.pod("xpu-legacy")), self.allocated_ids(holder["metadata"]["uid"]))
            expect(after == before, f"xpu-legacy changed across the handover: {before} -> {after}")
            nodes = self.node.kubectl("exec", "xpu-legacy", "--", "sh", "-c", "ls /dev | grep xpu")
            expect(self.workload_view("xpu-legacy")["NODES"].split() == nodes.split(),
                   f"xpu-legacy's device nodes changed: {nodes!r}")
            sockets = sorted(set(os.listdir("/var/lib/kubelet/device-plugins"))
                             - {"kubelet.sock", "kubelet_internal_checkpoint", "DEPRECATION"})
            expect(sockets == ["kunlunxin-xpu.sock"], f"device-plugin sockets after the handover: {sockets}")

            # The other seven, and not one more: the chart's plugin offers the held card to no one.
            rest = self.workload("xpu-rest", 7)
            rest_ids = self.allocated_ids(rest["metadata"]["uid"])
            expect(not set(rest_ids) & set(before[1]) and len(set(rest_ids) | set(before[1])) == 8,
                   f"xpu-rest got {rest_ids} beside xpu-legacy's {before[1]}")
            self.node.kubectl("apply", "-f", "-", input_text=json.dumps({
                "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "xpu-ninth", "namespace": "default"},
                "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 1,
                         "containers": [workload_container({"limits": {RESOURCE: "1"}})]}}))
            message = wait_for("xpu-ninth unschedulable", lambda: self.unschedulable("xpu-ninth"), 60)
            expect("Insufficient " + RESOURCE in message, f"xpu-ninth: {message}")
            print(f"  after: xpu-legacy kept {before[1]} and its container; xpu-rest got {rest_ids}; "
                  f"a ninth card: {message}")

            result = subprocess.run(["scripts/take-over-from-addon.sh", "--dry-run"], cwd=self.source_dir,
                                    env={**os.environ, "KUBECONFIG": self.node.kubeconfig,
                                         "KUBECTL": self.node.program("kubectl")},
                                    capture_output=True, text=True, timeout=120)
            expect(result.returncode == 1 and f"belongs to Helm release '{RELEASE}'" in result.stderr,
                   f"run again over the chart: exit {result.returncode}, {result.stdout}{result.stderr}")
        finally:
            self.node.kubectl("delete", "pods", "--all", "-n", "default", "--wait=true", "--timeout=90s",
                              check=False)
            self.remove_unowned(addon)
            self.node.refuse_privileged_pods(True)

    def remove_unowned(self, objects):
        """Deletes those of OBJECTS that are there and that no Helm release owns: what this
        scenario leaves when it fails before the README's block took them over, and what every
        later scenario's helm install would otherwise refuse ("invalid ownership metadata")."""
        for document in objects:
            kind, name = document["kind"].lower(), document["metadata"]["name"]
            found = self.node.kubectl("get", "-n", CHART_NAMESPACE, f"{kind}/{name}", "--ignore-not-found",
                                      "-o", "json", check=False)
            if found.returncode != 0 or not found.stdout.strip():
                continue
            annotations = json.loads(found.stdout)["metadata"].get("annotations", {})
            if "meta.helm.sh/release-name" in annotations:
                continue
            print(f"  removing the add-on's {kind}/{name}, left by this scenario")
            self.node.kubectl("delete", "-n", CHART_NAMESPACE, f"{kind}/{name}", "--cascade=foreground",
                              "--wait=true", "--timeout=180s", check=False, timeout=240)

    def addon_objects(self):
        """The replaced add-on's twelve objects as it installs them: the chart's names and, with
        rbac.compat, its rules (test_chart.py checks those against the add-on's document), but
        privileged containers with the service-account token mounted, and no Helm label, owner or
        annotation."""
        rendered = self.node.helm("template", RELEASE, self.chart, "--namespace", CHART_NAMESPACE,
                                  "--set", "rbac.compat=true", "--set", "global.image.pullPolicy=Never",
                                  # The add-on writes no node status: none of those objects.
                                  "--set", "nodeStatus.enabled=false")
        # The chart's objects of the add-on's kinds and names (the chart also has the DRA
        # driver's account and rights in every mode, which the add-on never had).
        addon_names = set(DAEMONSETS) | {"xpu-device-plugin", "xpu-exporter", "klx-xpu-serviceaccount",
                                         "klx-xpu-clusterrole", "klx-xpu-binding"}
        objects = []
        for document in yaml.safe_load_all(rendered):
            if not document or document["kind"] not in (
                    "DaemonSet", "ServiceAccount", "ClusterRole", "ClusterRoleBinding"):
                continue
            name = document["metadata"]["name"]
            if name not in addon_names:
                continue
            document["metadata"]["labels"] = {"app": name}
            document["metadata"].pop("annotations", None)
            if document["kind"] == "DaemonSet":
                spec = document["spec"]
                spec["selector"] = {"matchLabels": {"app": name}}
                spec["template"]["metadata"] = {"labels": {"app": name}}
                pod = spec["template"]["spec"]
                pod["automountServiceAccountToken"] = True
                pod.pop("securityContext", None)
                # Root, as the add-on's images were (this image's own user is 65534).
                for container in pod["containers"]:
                    container["securityContext"] = {"privileged": True, "runAsUser": 0}
            objects.append(document)
        kinds = sorted(o["kind"] for o in objects)
        expect(len(objects) == 12, f"the add-on's objects: {kinds}")
        return objects

    def run_readme_block(self, heading, env=None, replace=None):
        """The first sh block under HEADING in the README, run as written on this node (with
        <node> filled in, the build directory the suite's, and each of `replace`'s paths made
        this run's); `env` adds to its environment. Returns what it printed."""
        readme = open(os.path.join(self.source_dir, "README.md"), encoding="utf-8").read()
        block = readme.split(heading + "\n", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
        script = block.replace("<node>", NODE_NAME)
        for old, new in (replace or {}).items():
            script = script.replace(old, new)
        if os.path.realpath(self.node.build_dir) != os.path.realpath(os.path.join(self.source_dir, "build")):
            script = script.replace(" build/", f" {self.node.build_dir}/")
        env = {**(env or {}), "KUBECONFIG": self.node.kubeconfig,
               "PATH": f"{self.node.programs}:{os.path.join(self.node.build_dir, 'tools')}:{os.environ['PATH']}"}
        result = subprocess.run(["sh", "-e", "-x", "-c", script], cwd=self.source_dir, env={**os.environ, **env},
                                capture_output=True, text=True, timeout=600)
        expect(result.returncode == 0, f"the README's block under {heading!r} stopped ({result.returncode}):\n"
                                       f"{result.stdout[-3000:]}{result.stderr[-3000:]}")
        return result.stdout

    # ---- the node's XPUHealthy condition and ready label ------------------------------------

    def xpu_condition(self):
        """The node's XPUHealthy condition, or None."""
        for condition in self.node.get_json("node", NODE_NAME)["status"].get("conditions", []):
            if condition["type"] == XPU_CONDITION:
                return condition
        return None

    def ready_label(self):
        return self.node.get_json("node", NODE_NAME)["metadata"].get("labels", {}).get(READY_LABEL)

    def wait_xpu_condition(self, status, timeout, contains=""):
        def matches():
            condition = self.xpu_condition()
            return condition if condition and condition["status"] == status and contains in condition.get(
                "message", "") else None
        return wait_for(f"{XPU_CONDITION} {status}{' naming ' + contains if contains else ''}", matches, timeout)

    def s25_node_status(self):
        """The node condition XPUHealthy and the label kunlunxin.com/xpu.ready: the label appears
        once the device plugin serves and goes when it stops; a card's fault turns the condition
        False naming the card and its cause, recovery True again, the kubelet's conditions
        untouched; with allocation=dra the DRA driver keeps both; the writer's own token is
        refused another node, another condition, another label (also through nodes/status),
        spec.unschedulable and a taint."""
        self.reset_to_device_plugin()
        # The roles come up: the label follows the device plugin's registration.
        self.node.kubectl("label", "node", NODE_NAME, f"{NODE_LABEL}-")
        _, seconds = timed(lambda: wait_for(f"{READY_LABEL} gone with the pods",
                                            lambda: self.ready_label() is None and not self.shim_pods(), 90))
        figure("node label removed to the ready label gone", seconds)
        started = time.monotonic()
        self.node.kubectl("label", "node", NODE_NAME, f"{NODE_LABEL}=enable")
        wait_for(f"{READY_LABEL}=true", lambda: self.ready_label() == "true", 120)
        figure("node labelled to kunlunxin.com/xpu.ready=true (pods created, plugin registered)",
               time.monotonic() - started)
        self.wait_plugin_serving()
        self.wait_allocatable(8, 90)
        healthy = self.wait_xpu_condition("True", 60)
        print(f"  {XPU_CONDITION}: {healthy['status']} {healthy['reason']}: {healthy['message']}")
        expect(healthy["reason"] == "XPUsHealthy" and healthy["message"] == "all 8 cards are healthy",
               f"the healthy condition: {healthy}")
        kubelet_ready = [c for c in self.node.get_json("node", NODE_NAME)["status"]["conditions"]
                         if c["type"] == "Ready"]
        expect(kubelet_ready and kubelet_ready[0]["status"] == "True", f"the kubelet's Ready: {kubelet_ready}")

        # A card fails, then recovers.
        started = time.monotonic()
        self.node.set_health(3, False, "node status test: card in error state")
        failed = self.wait_xpu_condition("False", 30, contains="xpu3: ")
        figure("card fault to XPUHealthy False naming it", time.monotonic() - started)
        print(f"  {XPU_CONDITION}: {failed['status']} {failed['reason']}: {failed['message']}")
        expect(failed["reason"] == "XPUUnhealthy" and "node status test: card in error state" in failed["message"]
               and failed["message"].startswith("1 of 8 cards unhealthy"), f"the fault's condition: {failed}")
        expect(failed["lastTransitionTime"] >= healthy["lastTransitionTime"], f"{failed} after {healthy}")
        started = time.monotonic()
        self.node.set_health(3, True)
        recovered = self.wait_xpu_condition("True", 30)
        figure("recovery to XPUHealthy True", time.monotonic() - started)
        expect(recovered["lastTransitionTime"] >= failed["lastTransitionTime"], f"{recovered} after {failed}")
        after = {c["type"]: c for c in self.node.get_json("node", NODE_NAME)["status"]["conditions"]}
        expect(after.get("Ready", {}).get("status") == "True", f"the kubelet's conditions after the writes: {after}")
        managers = {m["manager"] for m in self.node.get_json("node", NODE_NAME, "--show-managed-fields")["metadata"]["managedFields"]}
        expect("xpu-k8s-shim-device-plugin" in managers, f"field managers of the node: {managers}")

        self.node_status_attacks()

        # The roles stop: the label goes with the device plugin's SIGTERM path; the condition
        # stays as last written (its heartbeat ages).
        self.node.kubectl("label", "node", NODE_NAME, f"{NODE_LABEL}-")
        _, seconds = timed(lambda: wait_for(f"{READY_LABEL} gone", lambda: self.ready_label() is None, 90))
        figure("roles stopped (node label removed) to the ready label gone", seconds)
        expect(self.xpu_condition() is not None, "the condition went with the roles")
        self.node.kubectl("label", "node", NODE_NAME, f"{NODE_LABEL}=enable")
        wait_for("three DaemonSets ready", self.daemonsets_ready, 120)
        wait_for(f"{READY_LABEL}=true again", lambda: self.ready_label() == "true", 90)
        self.wait_plugin_serving()
        self.wait_allocatable(8, 90)

        # allocation=dra: the DRA driver serves, writes the condition and holds the label.
        try:
            self.node.kubectl("delete", "pod", "-n", "default", "--all", "--wait=true", "--timeout=60s")
            started = time.monotonic()
            self.switch_to_dra()
            wait_for(f"{READY_LABEL}=true from the DRA driver", lambda: self.ready_label() == "true" and any(
                m["manager"] == "xpu-k8s-shim-dra-driver"
                for m in self.node.get_json("node", NODE_NAME, "--show-managed-fields")["metadata"]["managedFields"]), 90)
            figure("helm upgrade to allocation=dra, to the ready label held by the DRA driver",
                   time.monotonic() - started)
            started = time.monotonic()
            self.node.set_health(5, False, "node status test under dra")
            self.wait_xpu_condition("False", 30, contains="xpu5: node status test under dra")
            figure("card fault to XPUHealthy False (DRA driver)", time.monotonic() - started)
            self.node.set_health(5, True)
            self.wait_xpu_condition("True", 30)
        finally:
            for index in (3, 5):
                self.node.set_health(index, True)
            self.reset_to_device_plugin()
            wait_for(f"{READY_LABEL}=true after the switch back", lambda: self.ready_label() == "true", 90)

    def node_status_attacks(self):
        """The device plugin's own token (bound to its pod, so to this node) may write this
        node's XPUHealthy condition and ready label and nothing else."""
        self.node_status_policy_type_check()
        plugin = [p for p in self.shim_pods() if p["metadata"]["name"].startswith("xpu-device-plugin")][0]
        token = self.node.kubectl("create", "token", "-n", CHART_NAMESPACE, "xpu-device-plugin",
                                  "--bound-object-kind", "Pod", "--bound-object-name", plugin["metadata"]["name"],
                                  "--bound-object-uid", plugin["metadata"]["uid"]).strip()
        as_plugin = self.kubectl_bound_to(token=token)
        who = json.loads(run([*as_plugin, "auth", "whoami", "-o", "json"]))["status"]["userInfo"]
        expect(who.get("extra", {}).get("authentication.kubernetes.io/node-name") == [NODE_NAME],
               f"the device plugin's token: {who}")
        other = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": OTHER_NODE},
                 "spec": {"unschedulable": True,
                          "taints": [{"key": "xpu.kunlunxin.com/cluster-test", "effect": "NoSchedule"}]}}
        self.node.kubectl("create", "-f", "-", input_text=json.dumps(other))
        condition = {"type": XPU_CONDITION, "status": "False", "reason": "Forged", "message": "forged",
                     "lastHeartbeatTime": "2026-12-06T00:00:00Z", "lastTransitionTime": "2026-12-06T00:00:00Z"}
        # Through kubectl where it needs no more than the role has (get and patch on nodes);
        # the status subresource by a bare PATCH, as kubectl would first get nodes/status.
        def status_of(name):
            return f"/api/v1/nodes/{name}/status"
        attacks = [
            ("another node's XPUHealthy", status_of(OTHER_NODE), {"status": {"conditions": [condition]}},
             f"may write only that node, not {OTHER_NODE}"),
            ("another node's ready label", ["label", "node", OTHER_NODE, f"{READY_LABEL}=true"],
             None, f"may write only that node, not {OTHER_NODE}"),
            ("this node's Ready condition", status_of(NODE_NAME),
             {"status": {"conditions": [dict(condition, type="Ready")]}},
             "may change only the node condition XPUHealthy"),
            ("another label on this node", ["label", "node", NODE_NAME, "forged=yes"], None,
             f"may change only the label {READY_LABEL}"),
            ("another label through nodes/status", status_of(NODE_NAME),
             {"metadata": {"labels": {"forged": "yes"}}}, f"may change only the label {READY_LABEL}"),
            ("the ready label as false", ["label", "node", NODE_NAME, "--overwrite", f"{READY_LABEL}=false"],
             None, f"the label {READY_LABEL} is \"true\" or absent"),
            ("spec.unschedulable", ["patch", "node", NODE_NAME, "-p", json.dumps({"spec": {"unschedulable": True}})],
             None, "may not change a node's spec"),
            ("a taint", ["taint", "node", NODE_NAME, "forged=yes:NoSchedule"], None,
             f"may change no taint but {HANDOVER_TAINT}"),
            ("the hand-over taint on another node", ["taint", "node", OTHER_NODE, f"{HANDOVER_TAINT}:NoSchedule"],
             None, f"may write only that node, not {OTHER_NODE}"),
            ("the hand-over taint as NoExecute", ["taint", "node", NODE_NAME, f"{HANDOVER_TAINT}:NoExecute"],
             None, f"the taint {HANDOVER_TAINT} is NoSchedule, with no value"),
            ("this node's allocatable", status_of(NODE_NAME), {"status": {"allocatable": {RESOURCE: "64"}}},
             "may change no node status but the condition XPUHealthy"),
        ]
        try:
            for what, target, body, refusal in attacks:
                if body is None:
                    result = run([*as_plugin, *target], check=False)
                    refused, said = result.returncode != 0, result.stderr.strip()
                else:
                    code, said = api_json_patch(target, token, self.node.pki.ca_cert, body,
                                                "application/strategic-merge-patch+json")
                    refused = code >= 400
                expect(refused and NODE_STATUS_POLICY in said and refusal in said,
                       f"{what} with the device plugin's token: {said!r}")
                print(f"  device plugin's token, {what}: refused ({said.splitlines()[-1][-110:]})")
            after = self.node.get_json("node", NODE_NAME)
            expect("forged" not in after["metadata"].get("labels", {}) and not after["spec"].get("unschedulable")
                   and not after["spec"].get("taints"), f"the node changed under the attacks: {after['spec']}")
            result = run([*as_plugin, "delete", "node", OTHER_NODE], check=False)
            expect(result.returncode != 0 and "forbidden" in result.stderr.lower(),
                   f"deleting a node with the device plugin's token: {result.stderr.strip()!r}")
            # What it may do: its own node's condition (here a strategic merge on the type key, as
            # node-problem-detector writes; the role itself applies). Not the label: a `kubectl
            # label` would make kubectl a second owner of it, which the role's release leaves be.
            allowed = dict(condition, reason="XPUsHealthy", status="True", message="written by the test")
            code, said = api_json_patch(status_of(NODE_NAME), token, self.node.pki.ca_cert,
                                        {"status": {"conditions": [allowed]}},
                                        "application/strategic-merge-patch+json")
            expect(code == 200, f"the device plugin's token writing its own node's XPUHealthy: {code} {said!r}")
            print("  device plugin's token: its own node's XPUHealthy written")
            # And its own node's hand-over taint, added and removed.
            for verb in (f"{HANDOVER_TAINT}:NoSchedule", f"{HANDOVER_TAINT}:NoSchedule-"):
                result = run([*as_plugin, "taint", "node", NODE_NAME, verb], check=False)
                expect(result.returncode == 0, f"the device plugin's token: taint {verb}: {result.stderr.strip()!r}")
            print(f"  device plugin's token: its own node's {HANDOVER_TAINT} taint added and removed")
        finally:
            self.node.kubectl("delete", "node", OTHER_NODE, "--wait=true", check=False)

    def node_status_policy_type_check(self):
        def checked():
            current = self.node.get_json("validatingadmissionpolicy", NODE_STATUS_POLICY)
            status = current.get("status", {})
            if status.get("observedGeneration") != current["metadata"]["generation"]:
                return None
            return [status.get("typeChecking", {}).get("expressionWarnings", [])]
        warnings = wait_for(f"{NODE_STATUS_POLICY} type-checked", checked, 30)[0]
        expect(not warnings, f"{NODE_STATUS_POLICY}: {warnings}")
        print(f"  {NODE_STATUS_POLICY} type-checked by the API server without warnings")

    # ---- a card's fault, from a running pod to the card offered again -----------------------

    def s29_fault_to_recovery(self):
        """A card fails under a running pod and comes back without a human (allocation=dra,
        NoExecute for driver_fault and reset_failed, xpud's [recovery] auto): the card's taint
        and XPUHealthy False naming it, the pod evicted, xpud's automatic reset once no process
        uses the card, the card Healthy, its taint gone, XPUHealthy True, a new pod on that card;
        a reset that does not cure the card leaves it out with reason reset_failed, which the
        condition names. Each step is timed."""
        self.reset_to_device_plugin()
        if self.server_minor() < 36:
            # Device taints are dropped by an older API server (scenario 14): no eviction.
            print(f"  1.{self.server_minor()}: no device taints in the API, nothing evicts; skipped")
            return
        try:
            # The suite's xpud has recovery off (the shipped default); this scenario's turns it on
            # with short times, so that each step is seconds.
            self.node.restart_xpud(RECOVERY_CONF)
            self.wait_allocatable(8, 90)
            self.switch_to_dra()
            self.helm_install("--reuse-values", "--set", "dra.deviceTaints.noExecute={driver_fault,reset_failed}")
            wait_for("the DRA driver restarted with NoExecute", lambda: self.dra_driver_ready() and
                     "driver_fault,reset_failed" in self.dra_driver_pod()["spec"]["containers"][0]["args"], 90)
            wait_for("a ResourceSlice with the node's 8 untainted cards", lambda: len(self.dra_devices()) == 8 and not any(
                "taints" in d for d in self.dra_devices().values()), 90)
            self.wait_xpu_condition("True", 60)
            card = self.fault_under_pod()
            self.reset_that_fails(card)
        finally:
            self.node.kubectl("delete", "pod", "-n", "default", "--all", "--wait=true", "--timeout=60s", check=False)
            self.node.kubectl("delete", "resourceclaimtemplate", "-n", "default", "--ignore-not-found",
                              "xpu-recovery-any", "xpu-recovery-same", check=False)
            # xpud as the suite runs it (recovery off); the sim's faults and pins go with it.
            self.node.restart_xpud()
            self.helm_install("--reuse-values", "--set-json", "dra.deviceTaints.noExecute=[]")
            self.reset_to_device_plugin()
            self.wait_xpu_condition("True", 60)

    def fault_under_pod(self):
        """The timed path from a fault under a running pod to a new pod on the reset card;
        returns the card's index."""
        devices = {d["index"]: d for d in self.devices()}
        self.node.kubectl("apply", "-f", "-", input_text=json.dumps(claim_template("xpu-recovery-any", 1)))
        self.node.kubectl("apply", "-f", "-", input_text=json.dumps(dra_workload("xpu-recovery-first", "xpu-recovery-any")))
        self.wait_pod_running("xpu-recovery-first")
        uid = self.pod("xpu-recovery-first")["metadata"]["uid"]
        device = self.claim_of("xpu-recovery-first")["status"]["allocation"]["devices"]["results"][0]["device"]
        card = int(device.split("-")[1])
        uuid = devices[card]["uuid"]
        print(f"  xpu-recovery-first runs on {device} ({uuid})")

        # The fault: the driver reports the card in error, reason kind driver_fault (the sim's
        # SetHealth is its fault reading; xpud/sampling/health_monitor.cpp), a kind the
        # automatic reset takes (xpud/README.md, "Recovery").
        started = time.monotonic()
        self.node.set_health(card, False, "driver reports state ERROR (3)")
        taint = wait_for(f"{device} tainted NoExecute in the slice", lambda: next(
            (t for t in self.dra_devices()[device].get("taints") or [] if t.get("effect") == "NoExecute"), None), 30)
        figure("fault to the card's NoExecute taint in the ResourceSlice", time.monotonic() - started)
        expect(taint["key"] == f"{DRA_DRIVER}/driver_fault", f"{device}'s taint {taint}")
        failed = self.wait_xpu_condition("False", 30, contains=f"xpu{card}: ")
        figure("fault to XPUHealthy False naming the card", time.monotonic() - started)
        print(f"  taint {taint['key']}={taint['value']}:{taint['effect']}; {XPU_CONDITION}: {failed['message']}")

        def evicted():
            result = self.node.kubectl("get", "pod", "-n", "default", "xpu-recovery-first", "-o", "json", check=False)
            return result.returncode != 0 or json.loads(result.stdout)["metadata"]["uid"] != uid
        wait_for("xpu-recovery-first evicted", evicted, 60)
        figure("fault to the pod holding the card gone (evicted)", time.monotonic() - started)
        events = json.loads(self.node.kubectl("get", "events", "-n", "default", "--field-selector",
                                              f"involvedObject.uid={uid}", "-o", "json"))["items"]
        reasons = sorted({e.get("reason", "") for e in events})
        # pkg/controller/devicetainteviction (kube-controller-manager) marks the pod, then deletes it.
        expect("DeviceTaintManagerEviction" in reasons, f"xpu-recovery-first's events: {reasons}")
        print(f"  xpu-recovery-first evicted; its events: {reasons}")
        # Still Unhealthy: the sim counts one process on every card whatever runs (its
        # simulated workload; a real driver lists the container's processes, gone with the pod),
        # and xpud never resets a card the driver says is in use.
        held = wait_for(f"xpud refusing to reset {device} in use", lambda: self.device(card) if self.device(card)[
            "resets"].get("refused") == 1 else None, 10)
        expect(held["health"] == "Unhealthy" and not held["resets"].get("succeeded") and not held["resets"].get("failed"),
               f"{device} after the eviction, before its process left: {held}")

        # The pod's process has left the card: what the driver would now count.
        self.node.set_metric(card, "process_count", 0)
        left = time.monotonic()
        reset = wait_for(f"{device} reset and Healthy", lambda: self.device(card) if self.device(card)["health"] == "Healthy"
                         else None, 30)
        figure("no process on the card to xpud's reset, the card Healthy", time.monotonic() - left)
        expect(reset["resets"].get("succeeded") == 1, f"{device}'s resets: {reset['resets']}")
        journal = [line for line in self.node.components["xpud"].tail(400).splitlines() if "reset" in line and uuid in line]
        print("  xpud: " + "\n  xpud: ".join(journal[-3:]))
        wait_for(f"{device}'s taint gone", lambda: "taints" not in self.dra_devices()[device], 30)
        figure("no process on the card to its taint gone", time.monotonic() - left)
        self.wait_xpu_condition("True", 30)
        figure("no process on the card to XPUHealthy True", time.monotonic() - left)
        wait_for("the exporter's xpu_resets_total succeeded 1", lambda: any(
            line.startswith("xpu_resets_total{") and f'uuid="{uuid}"' in line and 'result="succeeded"' in line
            and line.endswith(" 1") for line in self.exporter_metrics().splitlines()), 30)

        # A new pod asks for that very card (by its UUID) and gets it.
        placed = time.monotonic()
        self.node.kubectl("apply", "-f", "-", input_text=json.dumps(claim_template(
            "xpu-recovery-same", 1, selector=f'device.attributes["{DRA_DRIVER}"].uuid == "{uuid}"')))
        self.node.kubectl("apply", "-f", "-", input_text=json.dumps(dra_workload("xpu-recovery-second", "xpu-recovery-same")))
        self.wait_pod_running("xpu-recovery-second")
        figure("a new pod for the reset card to Running", time.monotonic() - placed)
        figure("fault to a new pod running on the reset card", time.monotonic() - started)
        got = self.claim_of("xpu-recovery-second")["status"]["allocation"]["devices"]["results"][0]["device"]
        expect(got == device, f"xpu-recovery-second got {got}, not {device}")
        view = self.workload_view("xpu-recovery-second")
        expect(view.get("KUNLUNXIN_XPU_UUIDS") == uuid, f"xpu-recovery-second's container sees {view}")
        print(f"  xpu-recovery-second runs on {device}: KUNLUNXIN_XPU_UUIDS={view['KUNLUNXIN_XPU_UUIDS']}")
        self.delete_pods("xpu-recovery-second")
        return card

    def reset_that_fails(self, card):
        """A fault a reset does not cure: xpud resets the card, it stays Unhealthy past the
        check, and stays out with reason kind reset_failed (tainted, named by XPUHealthy)."""
        device = f"xpu-{card}"
        self.node.set_reset_fails(card, True)  # the sim's card keeps its fault through a reset
        started = time.monotonic()
        self.node.set_health(card, False, "driver reports state ERROR (3)")
        taint = wait_for(f"{device} tainted reset_failed", lambda: next(
            (t for t in self.dra_devices()[device].get("taints") or []
             if t.get("key") == f"{DRA_DRIVER}/reset_failed"), None), 60)
        figure("fault a reset does not cure to the reset_failed taint", time.monotonic() - started)
        failed = self.wait_xpu_condition("False", 30, contains=f"xpu{card}: reset failed")
        state = self.device(card)
        expect(taint["effect"] == "NoExecute" and state["health"] == "Unhealthy" and state["resets"].get("failed") == 1,
               f"{device} after a reset that failed: taint {taint}, xpud {state}")
        print(f"  taint {taint['key']}:{taint['effect']}; {XPU_CONDITION}: {failed['message']}")
        # Left out: xpud does not reset it again by itself (an operator acts). Sampled past the
        # time an automatic reset of a curable fault would take (unhealthy_for_ms + the check).
        until = time.monotonic() + 10
        while time.monotonic() < until:
            state = self.device(card)
            expect(state["resets"].get("failed") == 1 and state["resets"].get("succeeded") == 1
                   and state["health"] == "Unhealthy" and "reset failed" in state["health_reason"],
                   f"{device} left out after its failed reset: {state}")
            time.sleep(1)
        print(f"  {device} left out: {state['health_reason']}; resets {state['resets']}")
        self.node.set_reset_fails(card, False)
        self.node.set_health(card, True)
        wait_for(f"{device}'s taint gone after the fault cleared", lambda: "taints" not in self.dra_devices()[device], 30)
        self.wait_xpu_condition("True", 30)

    def device(self, index):
        """xpud's view of card `index` (xpuctl list --json)."""
        return next(d for d in self.devices() if d["index"] == index)

    def s28_hami_pod_specs(self):
        """hami.compat: HAMi's own Kunlunxin vXPU examples, unchanged, run on the device plugin's
        memory shares (24576 MiB: 24 units of one card; no memory: the whole card), each
        container seeing its card and CXPU_CONTAINER_MEMORY_LIMIT; what cannot be mapped is
        refused at creation with the reason."""
        self.reset_to_device_plugin()
        devices = {d["index"]: d for d in self.devices()}
        card_mib = min(d["memory_total_bytes"] for d in devices.values()) >> 20
        units = {i: d["memory_total_bytes"] // GIB for i, d in devices.items()}
        resource = hami_specs.MEMORY
        # The examples name ubuntu:22.04, which no registry here serves: the test's busybox
        # stands in under that name (the pods pull nothing: imagePullPolicy IfNotPresent).
        self.node.ctr("images", "tag", "--force", images.BUSYBOX, hami_specs.IMAGE)
        compat = ("--set", "devicePlugin.enableXpuShare=true", "--set", "devicePlugin.xpuShareMemoryUnitMiB=1024",
                  "--set", "hami.compat=true", "--set", f"hami.cardMemoryMiB={card_mib}")
        if self.server_minor() < 36:
            # No MutatingAdmissionPolicy served (beta and off before 1.36, and the suite turns no
            # gate on): the chart refuses, saying what the API server needs.
            result = self.helm_install("--reuse-values", *compat, check=False)
            expect(result.returncode != 0 and "--feature-gates=MutatingAdmissionPolicy=true" in result.stderr,
                   f"hami.compat without the API: {result.returncode} {result.stderr}")
            print(f"  refused as it should be: {result.stderr.strip()[-200:]}")
            return
        try:
            self.helm_install("--reuse-values", *compat)
            self.wait_rolled_out()
            self.wait_allocatable(sum(units.values()), 90, resource=resource)
            self.hami_policy_type_check()

            # The API server applies a new policy once its informer has it: wait until a dry run
            # of HAMi's example comes back rewritten.
            def rewritten():
                created = json.loads(self.node.kubectl("create", "--dry-run=server", "-o", "json", "-f", "-",
                                                       input_text=hami_specs.DEFAULT_USE))
                return created["spec"]["containers"][0]["resources"]["limits"] == {resource: "24"}
            wait_for("the mutating policy in force", rewritten, 30)
            # default_use.yaml in default, allocate_exclusive.yaml (the same pod name) in a
            # namespace of its own, both in HAMi's form, unchanged.
            self.node.kubectl("create", "namespace", "hami-exclusive")
            wait_for("the namespace's service account", lambda: self.node.kubectl(
                "get", "serviceaccount", "-n", "hami-exclusive", "default", check=False).returncode == 0, 30)
            for namespace, example in (("default", hami_specs.DEFAULT_USE),
                                       ("hami-exclusive", hami_specs.ALLOCATE_EXCLUSIVE)):
                self.node.kubectl("apply", "-n", namespace, "-f", "-", input_text=example)
                self.wait_pod_running("vxpu-job", namespace)
            shares = {}
            for namespace, grant in (("default", 24), ("hami-exclusive", card_mib // 1024)):
                shares[namespace] = self.hami_share(namespace, grant, devices)
            expect(shares["default"] != shares["hami-exclusive"],
                   f"the whole card went to the card with a share on it: {shares}")
            print(f"  default_use.yaml: 24 units of card {shares['default']}; allocate_exclusive.yaml: "
                  f"all {card_mib // 1024} units of card {shares['hami-exclusive']}")

            for manifest, wanted in hami_specs.rewrites(card_mib):
                created = json.loads(self.node.kubectl("create", "--dry-run=server", "-o", "json", "-f", "-",
                                                       input_text=manifest))
                got = {c["name"]: c["resources"].get("limits", {})
                       for c in created["spec"].get("initContainers", []) + created["spec"]["containers"]}
                for name, count in wanted.items():
                    expect(got[name] == {resource: count},
                           f"{created['metadata']['name']}: container {name} has {got[name]}, expected {count} units")
                expect(all(hami_specs.VXPU not in limits for limits in got.values()),
                       f"{created['metadata']['name']}: {got}")
            print(f"  {len(hami_specs.rewrites(card_mib))} more HAMi forms rewritten as HAMi rounds them "
                  "(server dry run), init containers and several containers each on their own")

            for manifest, wanted in hami_specs.refusals(card_mib):
                name = json.loads(manifest)["metadata"]["name"]
                result = self.node.kubectl("create", "-f", "-", input_text=manifest, check=False)
                alternatives = (wanted,) if isinstance(wanted, str) else wanted
                expect(result.returncode != 0 and any(w in result.stderr for w in alternatives),
                       f"{name}: expected a refusal saying {wanted!r}, got {result.returncode}: "
                       f"{result.stdout}{result.stderr}")
                print(f"  {name}: {result.stderr.strip().splitlines()[-1][-160:]}")
            pods = self.node.kubectl("get", "pods", "-A", "-o", "name").split()
            expect(not [p for p in pods if "/hami-" in p], f"a refused pod exists: {pods}")
        finally:
            # The examples' `sleep infinity` as PID 1 ignores SIGTERM: both pods take their 30 s
            # grace period, side by side.
            self.node.kubectl("delete", "namespace", "hami-exclusive", "--ignore-not-found", "--wait=false",
                              check=False)
            self.node.kubectl("delete", "pod", "-n", "default", "--all", "--wait=false", check=False)
            self.node.kubectl("wait", "--for=delete", "namespace/hami-exclusive", "--timeout=90s", check=False)
            self.node.kubectl("delete", "pod", "-n", "default", "--all", "--wait=true", "--timeout=60s")
            self.helm_install("--reuse-values", "--set", "hami.compat=false",
                              "--set", "hami.cardMemoryMiB=98304",
                              "--set", "devicePlugin.enableXpuShare=false",
                              "--set", "devicePlugin.xpuShareMemoryUnitMiB=0")
            self.wait_rolled_out()
            self.wait_allocatable(8, 90)
        policies = self.node.kubectl("get", "mutatingadmissionpolicies,validatingadmissionpolicies",
                                     "-o", "name")
        expect("xpu-hami-compat" not in policies, f"hami.compat=false left {policies}")

    def hami_share(self, namespace, grant, devices):
        """The card a HAMi pod's container got, checked against the kubelet's record and the
        container's own view: `grant` units of one card, its node and its environment."""
        pod = self.pod("vxpu-job", namespace)
        annotation = pod["metadata"].get("annotations", {}).get("xpu.kunlunxin.com/hami-compat", "")
        limits = pod["spec"]["containers"][0]["resources"]["limits"]
        expect(limits == {hami_specs.MEMORY: str(grant)} and annotation.startswith("trainer: "),
               f"{namespace}/vxpu-job: limits {limits}, annotation {annotation!r}")
        ids = self.allocated_ids(pod["metadata"]["uid"], hami_specs.MEMORY)
        uuids = {i.split("::")[0] for i in ids}
        expect(len(ids) == grant and len(uuids) == 1, f"{namespace}/vxpu-job got {ids}")
        index = next(i for i, d in devices.items() if d["uuid"] in uuids)
        shown = self.node.kubectl("exec", "-n", namespace, "vxpu-job", "--", "sh", "-c",
                                  "env | grep XPU; ls /dev | grep xpu")
        seen = dict(line.split("=", 1) for line in shown.splitlines() if "=" in line)
        nodes = sorted(line for line in shown.splitlines() if "=" not in line)
        expect(seen.get("XPU_VISIBLE_DEVICES") == str(index) and seen.get("CXPU_VISIBLE_DEVICES") == str(index)
               and seen.get("KUNLUNXIN_XPU_UUIDS") == devices[index]["uuid"]
               and seen.get("CXPU_CONTAINER_MEMORY_LIMIT") == str(grant * GIB)
               and nodes == [f"xpu{index}", "xpuctrl"],
               f"{namespace}/vxpu-job sees {shown!r}, expected card {index} with {grant} GiB")
        print(f"  {namespace}/vxpu-job: {annotation}; sees XPU_VISIBLE_DEVICES={index}, "
              f"CXPU_CONTAINER_MEMORY_LIMIT={grant} GiB, /dev/xpu{index} and /dev/xpuctrl")
        return index

    def hami_policy_type_check(self):
        def checked():
            current = self.node.get_json("validatingadmissionpolicy", "xpu-hami-compat")
            status = current.get("status", {})
            if status.get("observedGeneration") != current["metadata"]["generation"]:
                return None
            return [status.get("typeChecking", {}).get("expressionWarnings", [])]
        warnings = wait_for("xpu-hami-compat type-checked", checked, 30)[0]
        expect(not warnings, f"xpu-hami-compat: {warnings}")
        self.node.get_json("mutatingadmissionpolicy", "xpu-hami-compat")
        print("  xpu-hami-compat: both policies accepted by the API server (it compiles their CEL), "
              "the validating one type-checked without warnings")


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

API_PROXY_SRIOV_DIR = "/run/xpud-api-sriov"
CONFIGURE_VFS = ["call", "com.kunlunxin.xpud1", "/com/kunlunxin/xpud1", "com.kunlunxin.xpud1.Manager",
                 "ConfigureVirtualFunctions", "uu", "99", "0"]


def check_sriov_socket_on_the_node():
    """/run/xpud-api-sriov/bus.sock as xpud-api-proxy-sriov.socket makes it: a socket of mode 0600
    in a directory of mode 0700, both root's. Root reads xpud through it; nobody cannot connect."""
    path = f"{API_PROXY_SRIOV_DIR}/bus.sock"
    directory = os.stat(API_PROXY_SRIOV_DIR)
    expect((stat.S_IMODE(directory.st_mode), directory.st_uid) == (0o700, 0),
           f"{API_PROXY_SRIOV_DIR}: mode {stat.S_IMODE(directory.st_mode):o}, owner {directory.st_uid}")
    sock = os.stat(path)
    expect(stat.S_ISSOCK(sock.st_mode) and (stat.S_IMODE(sock.st_mode), sock.st_uid) == (0o600, 0),
           f"{path}: mode {sock.st_mode:o}, owner {sock.st_uid}")
    address = f"--address=unix:path={path}"
    reads = run(["busctl", address, "call", "com.kunlunxin.xpud1", "/com/kunlunxin/xpud1",
                 "com.kunlunxin.xpud1.Manager", "ListDevices"], check=False)
    expect(reads.returncode == 0, f"ListDevices as root through {path} failed: {reads.stderr}")
    other = run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "busctl", address, "call",
                 "com.kunlunxin.xpud1", "/com/kunlunxin/xpud1", "com.kunlunxin.xpud1.Manager", "ListDevices"],
                check=False)
    expect(other.returncode != 0 and "ermission denied" in other.stderr,
           f"uid 65534 through {path}: status {other.returncode}, {other.stderr.strip()}")
    print(f"  {path}: root's 0600 in root's 0700; root reads xpud through it, uid 65534 cannot connect")


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
    # The one write is served on the SR-IOV socket alone: here it is refused even to root (this
    # test runs as root), whatever the host's [sriov] allow_cluster_reconfigure. busctl prints
    # AccessDenied as "Access denied".
    result = run(["busctl", address, *CONFIGURE_VFS], check=False)
    expect(result.returncode != 0 and "Access denied" in result.stderr,
           f"ConfigureVirtualFunctions as root through the pod's socket: status {result.returncode}, "
           f"{result.stderr.strip()}")


def in_container(root, path, depth=0):
    """`path` inside the container whose /proc/PID/root is `root`, its symlinks resolved inside
    the container: an absolute link read through /proc/PID/root (Debian's /var/run -> /run)
    would otherwise be followed on the host."""
    expect(depth < 16, f"too many symlinks resolving {path} in {root}")
    parts = [part for part in path.split("/") if part]
    current = ""
    for index, part in enumerate(parts):
        candidate = f"{current}/{part}"
        if os.path.islink(root + candidate):
            target = os.readlink(root + candidate)
            resolved = target if target.startswith("/") else os.path.normpath(f"{current}/{target}")
            return in_container(root, "/".join([resolved, *parts[index + 1:]]), depth + 1)
        current = candidate
    return root + current


def container_pids(node):
    """containerd's task list: container ID -> host PID."""
    listing = node.ctr("task", "ls").stdout.splitlines()[1:]
    return {fields[0]: int(fields[1]) for fields in (line.split() for line in listing) if len(fields) >= 2}


def workload_container(resources):
    """The container of every workload pod: it prints what it got (workload_view reads it), then
    stays to hold it."""
    return {
        "name": "main", "image": images.BUSYBOX, "imagePullPolicy": "Never",
        "command": ["sh", "-c",
                    "echo XPU_VISIBLE_DEVICES=$XPU_VISIBLE_DEVICES; "
                    "echo CXPU_VISIBLE_DEVICES=$CXPU_VISIBLE_DEVICES; "
                    "echo KUNLUNXIN_XPU_UUIDS=$KUNLUNXIN_XPU_UUIDS; "
                    "echo CXPU_CONTAINER_MEMORY_LIMIT=$CXPU_CONTAINER_MEMORY_LIMIT; "
                    "echo NODES=$(ls /dev | grep xpu | sort | tr '\\n' ' '); "
                    "exec sleep 100000"],
        "resources": resources,
    }


DRA_DRIVER = "xpu.kunlunxin.com"
DRA_DAEMONSET = "xpu-dra-driver"
DRA_PLUGIN_DIR = "/var/lib/kubelet/plugins/xpu.kunlunxin.com"
# Kubernetes' standard device attributes (k8s.io/dynamic-resource-allocation v0.37.2,
# deviceattribute/attribute.go), fully qualified as a slice carries them.
PCI_BUS_ID = "resource.kubernetes.io/pciBusID"
PCIE_ROOT = "resource.kubernetes.io/pcieRoot"
NUMA_NODE = "resource.kubernetes.io/numaNode"
# Another driver's device for scenario 14 to line a card up with; nothing serves it.
NIC_DRIVER = "nic.example.com"
# The chart's admission policies for the driver's writes, and the Node object scenario 14 makes
# to hold a second node's driver token.
DRA_POLICIES = ["xpu-dra-driver-own-node", "xpu-dra-driver-own-claim-status"]
SECOND_NODE = "xpu-second-node"
XPU_CONDITION = "XPUHealthy"
# xpud's [recovery] for scenario 29: on, automatic, with times short enough for a test (the
# shipped defaults are off, 300 s and 30 s).
RECOVERY_CONF = """
[recovery]
enabled = true
auto = true
max_resets_per_hour = 3
unhealthy_for_ms = 2000
check_timeout_ms = 5000
"""
READY_LABEL = "kunlunxin.com/xpu.ready"
NODE_STATUS_POLICY = "xpu-node-status-own-node"
OTHER_NODE = "xpu-node-status-other"
NIC_SLICE = "nic-example-com-slice"


# Device metadata (KEP-5304) as k8s.io/dynamic-resource-allocation v0.37.2 defines it
# (api/metadata/types.go ContainerDir; kubeletplugin/metadata.go writes the newest version first).
METADATA_CONTAINER_DIR = "/var/run/kubernetes.io/dra-device-attributes"
METADATA_VERSIONS = ["metadata.resource.k8s.io/v1beta1", "metadata.resource.k8s.io/v1alpha1"]


def metadata_objects(text):
    """The JSON objects of a metadata stream, in order (devicemetadata.DecodeMetadataFromStream
    reads them one by one the same way)."""
    decoder, objects, at = json.JSONDecoder(), [], 0
    text = text.strip()
    while at < len(text):
        value, at = decoder.raw_decode(text, at)
        objects.append(value)
        while at < len(text) and text[at].isspace():
            at += 1
    return objects


def dra_attribute(device, name):
    """A published attribute's value, whatever its type ({"int": 3} -> 3)."""
    value = device.get("attributes", {}).get(name)
    return None if value is None else next(iter(value.values()))


def claim_template(name, count, selector=None, same=None, device_class=DRA_DRIVER):
    request = {"name": "xpus", "exactly": {"deviceClassName": device_class, "allocationMode": "ExactCount",
                                           "count": count}}
    if selector:
        request["exactly"]["selectors"] = [{"cel": {"expression": selector}}]
    spec = {"devices": {"requests": [request]}}
    if same:
        spec["devices"]["constraints"] = [{"requests": ["xpus"], "matchAttribute": f"{DRA_DRIVER}/{same}"}]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": "default"}, "spec": {"spec": spec}}


SHARE_CLASS = "xpu-share.kunlunxin.com"
VF_CLASS = "vxpu.kunlunxin.com"
GIB = 1 << 30


def share_template(name, memory, index=None, device_class=SHARE_CLASS):
    """A claim for `memory` of one card's memory (or, with the whole-card class, for the card),
    on card `index` when given."""
    exactly = {"deviceClassName": device_class}
    if memory is not None:
        exactly["capacity"] = {"requests": {"memory": memory}}
    if index is not None:
        exactly["selectors"] = [{"cel": {"expression": f'device.attributes["{DRA_DRIVER}"].index == {index}'}}]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [{"name": "xpus", "exactly": exactly}]}}}}


def dra_workload(name, template):
    """The workload pod of the device-plugin scenarios, with a claim from `template` instead of
    a resource limit (callers with a claim of their own replace resourceClaims)."""
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1,
            "resourceClaims": [{"name": "xpus", "resourceClaimTemplateName": template}],
            "containers": [workload_container({"claims": [{"name": "xpus"}]})],
        },
    }


def claim_status_devices(claim):
    return claim.get("status", {}).get("devices") or None


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


def parse_quantity(text):
    """A Kubernetes quantity as the API server writes capacities: digits with an optional
    binary or decimal suffix."""
    suffixes = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
                "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
    for suffix, factor in suffixes.items():
        if text.endswith(suffix):
            return int(text[:-len(suffix)]) * factor
    return int(text)


def websocket_get(path, token, ca_file):
    """Opens a WebSocket (the kubelet's exec protocol, v4.channel.k8s.io) on the API server at path
    with a bearer token; returns the answer's status (101 when it upgraded) and its body."""
    context = ssl.create_default_context(cafile=ca_file)
    key = base64.b64encode(os.urandom(16)).decode()
    request = (f"GET {path} HTTP/1.1\r\nHost: {NODE_IP}:6443\r\nAuthorization: Bearer {token}\r\n"
               "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
               f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Protocol: v4.channel.k8s.io\r\n\r\n")
    with socket.create_connection((NODE_IP, 6443), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname=NODE_IP) as tls:
            tls.sendall(request.encode())
            answer = b""
            while b"\r\n\r\n" not in answer:
                chunk = tls.recv(4096)
                if not chunk:
                    break
                answer += chunk
            head, _, body = answer.partition(b"\r\n\r\n")
            lines = head.decode(errors="replace").split("\r\n")
            length = [int(line.split(":", 1)[1]) for line in lines[1:]
                      if line.lower().startswith("content-length:")]
            while length and len(body) < min(length[0], 65536):
                chunk = tls.recv(4096)
                if not chunk:
                    break
                body += chunk
    parts = lines[0].split()
    expect(len(parts) >= 2 and parts[1].isdigit(), f"the API server answered {lines[0]!r} to a WebSocket GET")
    return int(parts[1]), body.decode(errors="replace")


def api_json_patch(path, token, ca_file, patch, content_type="application/json-patch+json"):
    """A JSON patch (or a patch of `content_type`) on the API server with a bearer token; returns
    the answer's status and the message of its Status object ("" on success)."""
    request = urllib.request.Request(f"https://{NODE_IP}:6443{path}", method="PATCH",
                                     data=json.dumps(patch).encode(),
                                     headers={"Authorization": f"Bearer {token}",
                                              "Content-Type": content_type})
    context = ssl.create_default_context(cafile=ca_file)
    try:
        with urllib.request.urlopen(request, context=context, timeout=30) as answer:
            return answer.status, ""
    except urllib.error.HTTPError as error:
        return error.code, status_message(error.read())


def status_message(body):
    """The message of the API server's Status object in `body`, or "" when it holds none."""
    try:
        return str(json.loads(body).get("message", ""))
    except (ValueError, AttributeError):
        return ""


def reboot_pod(name, resources):
    """A bare pod (no controller) that holds what `resources` asks for and, as any pod of the
    default restartPolicy, comes back after a reboot if the kubelet admits it."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"terminationGracePeriodSeconds": 1, "containers": [workload_container(resources)]}}


def reboot_deployment(name, resources):
    """The same pod owned by a Deployment (through its ReplicaSet)."""
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"terminationGracePeriodSeconds": 1,
                                           "containers": [workload_container(resources)]}}}}


def expect(condition, message):
    if not condition:
        raise AssertionError(message)


SCENARIOS = [
    (1, "s1_install"), (2, "s2_capacity"), (3, "s3_allocation"), (4, "s4_fault"),
    (5, "s5_kubelet_restart"), (6, "s6_xpud_killed"), (7, "s7_prometheus_labels"), (8, "s8_token"),
    (10, "s10_bus_boundary"), (11, "s11_pod_security"), (13, "s13_cdi"), (9, "s9_upgrades"),
    (12, "s12_readme"), (14, "s14_dra"), (15, "s15_takeover"), (16, "s16_memory_shares"),
    (17, "s17_device_plugin_memory_shares"), (18, "s18_dra_virtual_functions"),
    (19, "s19_reboot"), (20, "s20_one_bound_per_share"),
    # Last: each switches the node's mode or release and puts back only the chart's defaults.
    (21, "s21_validator"), (22, "s22_registry"), (23, "s23_footprint"),
    (24, "s24_upgrades_under_pods"), (25, "s25_node_status"), (26, "s26_mode_switches"),
    (27, "s27_device_metadata"), (28, "s28_hami_pod_specs"), (29, "s29_fault_to_recovery"),
]


def run_inside(source_dir, build_dir, run_dir, programs, only):
    with open(os.path.join(run_dir, "images.json"), encoding="utf-8") as f:
        archives = json.load(f)
    node = Node(source_dir, build_dir, programs, run_dir)
    # As the namespace's PID 1 this process gets no signal it has no handler for.
    signal.signal(signal.SIGTERM, stopped)
    failed = []
    reasons = []  # one line per failed scenario
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
            kubelet_log = node.components["kubelet"].log_path
            kubelet_log_start = os.path.getsize(kubelet_log)
            try:
                node.check_components()
                scenario()
                expect_no_refused_registration(kubelet_log, kubelet_log_start)
                print(f"   PASS ({time.monotonic() - scenario_start:.0f} s)", flush=True)
            except Stopped:
                raise
            except Exception as error:  # any failure of a scenario is reported and the next runs
                failed.append(number)
                reasons.append(f"scenario {number}: {type(error).__name__}: {str(error)[:600]}")
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
    for name, value, unit in FIGURES:
        print(f"  {name}: {value:.1f} {unit}")
    if failed:
        # Again at the end, where a log cut short in the middle still shows why.
        for reason in reasons:
            print(f"  {reason}")
        print(f"FAIL: scenarios {failed}; logs in {node.log_dir} (kept with --keep)")
        if len(reasons) > 1:
            # Last of all, since a failure can leave state that fails the scenarios after it, and
            # CI keeps only the log's tail.
            print(f"  the first failure: {reasons[0]}")
        return 1
    print(f"PASS: all scenarios ({time.monotonic() - started:.0f} s)")
    return 0


def expect_no_refused_registration(kubelet_log, offset):
    """A 1.37 kubelet refuses a plugin's second Register for a socket it is connected to, and from
    then on never lets that socket go (the plugin's fallback keeps it served under a spare name,
    but a resource whose plugin is gone keeps its allocatable): no scenario may cause one."""
    with open(kubelet_log, "rb") as log:
        log.seek(offset)
        refusals = [line.decode(errors="replace") for line in log.read().splitlines()
                    if b"device plugin already connected" in line]
    expect(not refusals, "the kubelet refused a device plugin's registration:\n" + "\n".join(refusals))


class Stopped(Exception):
    pass


def stopped(signal_number, frame):
    raise Stopped(f"signal {signal_number}")


def print_shim_logs(node):
    """The chart's pods' last lines here; every pod of the namespace's whole log, of the current
    and of the previous container (where there is one), in files beside xpud's log."""
    result = node.kubectl("logs", "-n", CHART_NAMESPACE, "--all-containers", "--prefix", "--tail=20",
                          "-l", "app.kubernetes.io/name=xpu-k8s-shim", check=False)
    print(result.stdout if hasattr(result, "stdout") else result)
    pods = node.kubectl("get", "pods", "-n", CHART_NAMESPACE, "-o", "name", check=False)
    stamp = time.strftime("%H%M%S")
    for pod in (pods.stdout.split() if pods.returncode == 0 else []):
        name = pod.split("/", 1)[-1]
        for previous in ([], ["--previous"]):
            logs = node.kubectl("logs", "-n", CHART_NAMESPACE, name, "--all-containers", *previous,
                                check=False)
            if previous and logs.returncode != 0:
                continue  # no previous container
            path = os.path.join(node.log_dir, f"{stamp}-{name}{'-previous' if previous else ''}.log")
            with open(path, "w", encoding="utf-8") as f:
                f.write(logs.stdout + logs.stderr)
            print(f"---- {name}{' (previous container)' if previous else ''}: {path}", flush=True)


if __name__ == "__main__":
    sys.exit("run through cluster_test.py")
