"""The Helm chart charts/xpu-k8s-shim, as a cluster would receive it.

Renders the chart with `helm template` (defaults, then each reserved option of the chart it
replaces) and checks the parsed objects: names, kinds, namespaces, the absence of any host
privilege, the flags each value turns on, and RBAC rules equal to the seed's.

Environment: XPU_SOURCE_DIR (the tree), XPU_HELM (the helm binary), XPU_SHIM (the
xpu-k8s-shim binary, when it is built: the rendered arguments are then fed to it).
"""

import json
import os
import shutil
import subprocess
import tempfile
import unittest

import yaml

SOURCE_DIR = os.environ.get("XPU_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
CHART = os.path.join(SOURCE_DIR, "charts", "xpu-k8s-shim")
HELM = os.environ.get("XPU_HELM", "helm")
SHIM = os.environ.get("XPU_SHIM")
NAMESPACE = "xpu-test-ns"
XPUD_API_DIR = "/run/xpud-api"  # xpud-api-proxy.socket's directory
XPUD_API_ARGS = ["--bus-address", "unix:path=/run/xpud-api/bus.sock"]
# xpud-api-proxy-sriov.socket's directory: the one socket that carries ConfigureVirtualFunctions.
XPUD_API_SRIOV_DIR = "/run/xpud-api-sriov"
XPUD_API_SRIOV_ARGS = ["--bus-address", "unix:path=/run/xpud-api-sriov/bus.sock"]
# The kubelet's pod-resources socket's directory: the exporter reads which pod holds which card,
# the device plugin and the DRA driver which cards pods hold through the other of them.
POD_RESOURCES_DIR = "/var/lib/kubelet/pod-resources"
RECONFIG_VXPU = ("devicePlugin.enableSriov=true", "devicePlugin.sriovNumVfs=2", "devicePlugin.reconfigVxpu=true")

DEVICE_PLUGIN = "xpu-device-plugin-daemonset"
EXPORTER = "xpu-exporter"
TOKEN_GEN = "xpu-rbac-token-gen"
DAEMONSETS = (DEVICE_PLUGIN, EXPORTER, TOKEN_GEN)

# The Prometheus Operator's kinds, as `helm template --api-versions` names them.
PROMETHEUS_RULE_API = "monitoring.coreos.com/v1/PrometheusRule"
SERVICE_MONITOR_API = "monitoring.coreos.com/v1/ServiceMonitor"
POD_MONITOR_API = "monitoring.coreos.com/v1/PodMonitor"
OPERATOR_APIS = (PROMETHEUS_RULE_API, SERVICE_MONITOR_API, POD_MONITOR_API)

# The ClusterRoles of the chart this one replaces, rule by rule (apiGroups, resources, verbs).
SEED_RULES = {
    "xpu-device-plugin": [
        ([""], ["nodes", "nodes/proxy"], ["get", "list", "watch", "patch"]),
        ([""], ["events"], ["create", "patch"]),
        ([""], ["pods"], ["update", "patch", "get", "list", "watch"]),
        ([""], ["nodes/status"], ["patch", "update"]),
    ],
    "xpu-exporter": [
        ([""], ["nodes", "nodes/proxy"], ["get", "list", "watch"]),
        ([""], ["events"], ["create", "patch"]),
        ([""], ["pods"], ["update", "patch", "get", "list", "watch"]),
        ([""], ["nodes/status"], ["patch", "update"]),
    ],
    "klx-xpu-clusterrole": [
        ([""], ["nodes", "pods", "nodes/status", "events", "nodes/proxy"], ["get", "list"]),
    ],
}


def seed_rules(role, leave_out=()):
    """The replaced chart's rules of `role` as a ClusterRole's rules, without the resources in
    `leave_out`."""
    return [{"apiGroups": g, "resources": [r for r in resources if r not in leave_out], "verbs": v}
            for g, resources, v in SEED_RULES[role]]


def run_helm(*args):
    return subprocess.run([HELM, *args], capture_output=True, text=True, timeout=120)


def render(*set_args, values_yaml=None, api_versions=(), kube_version=None):
    """helm template with --set arguments, as for a cluster that serves api_versions
    ("group/version/Kind") besides the built-in ones (and runs kube_version, when given);
    returns {(kind, name): object}."""
    args = ["template", "rel", CHART, "--namespace", NAMESPACE]
    if kube_version:
        args += ["--kube-version", kube_version]
    for item in set_args:
        args += ["--set", item]
    for api in api_versions:
        args += ["--api-versions", api]
    if values_yaml is not None:
        args += ["--values", "-"]
    result = subprocess.run([HELM, *args], capture_output=True, text=True, timeout=120,
                            input=values_yaml)
    if result.returncode != 0:
        raise AssertionError(f"helm template {' '.join(set_args)} failed:\n{result.stderr}")
    objects = {}
    for document in yaml.safe_load_all(result.stdout):
        if document is None:
            continue
        key = (document["kind"], document["metadata"]["name"])
        if key in objects:
            raise AssertionError(f"{key} rendered twice")
        objects[key] = document
    return objects


def chart_app_version():
    with open(os.path.join(CHART, "Chart.yaml"), encoding="utf-8") as f:
        return str(yaml.safe_load(f)["appVersion"])


def render_failure(*set_args):
    args = ["template", "rel", CHART, "--namespace", NAMESPACE]
    for item in set_args:
        args += ["--set", item]
    return run_helm(*args)


def pod_spec(objects, daemonset):
    return objects[("DaemonSet", daemonset)]["spec"]["template"]["spec"]


def container(objects, daemonset):
    containers = pod_spec(objects, daemonset)["containers"]
    assert len(containers) == 1, f"{daemonset} has {len(containers)} containers"
    return containers[0]


def args_of(objects, daemonset):
    return container(objects, daemonset)["args"]


def normalized_rules(rules):
    return sorted((tuple(sorted(r.get("apiGroups", []))), tuple(sorted(r.get("resources", []))),
                   tuple(sorted(r.get("resourceNames", []))), tuple(sorted(r.get("verbs", []))))
                  for r in rules)


def option_value(args, flag):
    """The value after `flag`, None when the flag is absent."""
    if flag not in args:
        return None
    index = args.index(flag)
    if index + 1 >= len(args):
        raise AssertionError(f"{flag} has no value in {args}")
    return args[index + 1]


class ChartLint(unittest.TestCase):
    def assert_lint_clean(self, *set_args):
        args = ["lint", CHART, "--strict", "--namespace", NAMESPACE]
        for item in set_args:
            args += ["--set", item]
        result = run_helm(*args)
        print(result.stdout)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertNotIn("[WARNING]", result.stdout)
        self.assertNotIn("[ERROR]", result.stdout)

    def test_lint_defaults(self):
        self.assert_lint_clean()

    def test_lint_reserved_options(self):
        self.assert_lint_clean("devicePlugin.enableSriov=true", "devicePlugin.sriovNumVfs=4",
                               "devicePlugin.reconfigVxpu=true", "devicePlugin.enableXpuShare=true",
                               "devicePlugin.useDetailResName=true", "config.logLevel=debug",
                               "rbac.compat=true")

    def test_lint_token_gen_nodes_proxy(self):
        self.assert_lint_clean("rbac.tokenGen.nodesProxy=true")


class DefaultRender(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.objects = render()

    def test_objects_are_the_seeds_but_the_unused_roles(self):
        # Every object of the replaced chart but the device plugin's and the exporter's
        # ClusterRoles and bindings, which grant what neither role calls (rbac.compat brings them).
        expected = {("DaemonSet", name) for name in DAEMONSETS}
        expected |= {("ServiceAccount", account)
                     for account in ("xpu-device-plugin", "xpu-exporter", "klx-xpu-serviceaccount")}
        expected |= {("ClusterRole", "klx-xpu-clusterrole"), ("ClusterRoleBinding", "klx-xpu-binding"),
                     ("Service", "xpu-exporter")}
        # The node's XPUHealthy condition and ready label (nodeStatus, on by default): the writers'
        # rights and the policy that keeps them to their own node.
        expected |= {("ClusterRole", "xpu-node-status"), ("ClusterRoleBinding", "xpu-node-status"),
                     ("ValidatingAdmissionPolicy", "xpu-node-status-own-node"),
                     ("ValidatingAdmissionPolicyBinding", "xpu-node-status-own-node")}
        # The device plugin's read of the two DaemonSets that may serve a node after it (the
        # hand-over taint only while one of them stays).
        expected |= {("Role", "xpu-device-plugin-handover"), ("RoleBinding", "xpu-device-plugin-handover")}
        # And the validator, a test hook that only `helm test` creates.
        # The DRA driver's account, rights and policies, which no pod runs under in this mode: a
        # driver leaving as the chart switches here drains and releases its ready label with them.
        expected |= DRA_DRIVER_ACCOUNT_OBJECTS
        expected.add(("Pod", "xpu-validator"))
        self.assertEqual(set(self.objects), expected)

    def test_namespaced_objects_live_in_the_release_namespace(self):
        for (kind, name), obj in self.objects.items():
            if kind in ("ClusterRole", "ClusterRoleBinding", "ValidatingAdmissionPolicy",
                        "ValidatingAdmissionPolicyBinding"):
                self.assertNotIn("namespace", obj["metadata"], name)
                for subject in obj.get("subjects", []):
                    self.assertEqual(subject["namespace"], NAMESPACE, name)
            else:
                self.assertEqual(obj["metadata"].get("namespace"), NAMESPACE, f"{kind} {name}")

    def test_each_daemonset_runs_under_its_seed_service_account(self):
        self.assertEqual(pod_spec(self.objects, DEVICE_PLUGIN)["serviceAccountName"], "xpu-device-plugin")
        self.assertEqual(pod_spec(self.objects, EXPORTER)["serviceAccountName"], "xpu-exporter")
        self.assertEqual(pod_spec(self.objects, TOKEN_GEN)["serviceAccountName"], "klx-xpu-serviceaccount")
        self.assertEqual(self.objects[("ClusterRoleBinding", "klx-xpu-binding")]["subjects"],
                         [{"kind": "ServiceAccount", "name": "klx-xpu-serviceaccount", "namespace": NAMESPACE}])

    def test_each_role_gets_only_what_it_calls(self):
        # The exporter never calls the API server: no token in its pod. The device plugin's writes
        # its node's status (NodeStatus below), and nothing else.
        self.assertIs(self.objects[("ServiceAccount", "xpu-exporter")]["automountServiceAccountToken"], False)
        self.assertIs(pod_spec(self.objects, EXPORTER)["automountServiceAccountToken"], False)
        self.assertIs(self.objects[("ServiceAccount", "xpu-device-plugin")]["automountServiceAccountToken"], True)
        self.assertIs(pod_spec(self.objects, DEVICE_PLUGIN)["automountServiceAccountToken"], True)
        self.assertEqual(
            [b["subjects"] for (kind, _), b in self.objects.items() if kind == "ClusterRoleBinding"
             and any(s["name"] == "xpu-device-plugin" for s in b["subjects"])],
            [[{"kind": "ServiceAccount", "name": "xpu-device-plugin", "namespace": NAMESPACE},
              {"kind": "ServiceAccount", "name": "xpu-dra-driver", "namespace": NAMESPACE}]])
        self.assertIs(pod_spec(self.objects, TOKEN_GEN)["automountServiceAccountToken"], True)
        # The token for the XPU runtime: the seed's read-only rules without nodes/proxy, whose get
        # reaches every kubelet's exec and attach.
        self.assertEqual(normalized_rules(self.objects[("ClusterRole", "klx-xpu-clusterrole")]["rules"]),
                         normalized_rules(seed_rules("klx-xpu-clusterrole", leave_out=("nodes/proxy",))))

    def test_no_pod_gets_host_privileges(self):
        for name in DAEMONSETS:
            spec = pod_spec(self.objects, name)
            for field in ("hostPID", "hostNetwork", "hostIPC"):
                self.assertFalse(spec.get(field, False), f"{name} sets {field}")
            self.assertEqual(spec["securityContext"]["seccompProfile"], {"type": "RuntimeDefault"}, name)
            for c in spec["containers"] + spec.get("initContainers", []):
                sc = c["securityContext"]
                self.assertFalse(sc.get("privileged", False), name)
                self.assertIs(sc["allowPrivilegeEscalation"], False, name)
                self.assertIs(sc["readOnlyRootFilesystem"], True, name)
                self.assertEqual(sc["capabilities"], {"drop": ["ALL"]}, name)
                self.assertEqual(sc["seccompProfile"], {"type": "RuntimeDefault"}, name)
                self.assertNotIn("add", sc["capabilities"], name)
                self.assertTrue(c["resources"].get("requests"), f"{name} has no resource requests")
                self.assertTrue(c["resources"].get("limits"), f"{name} has no resource limits")

    def test_only_the_needed_host_paths_are_mounted(self):
        expected = {
            DEVICE_PLUGIN: {XPUD_API_DIR: "Directory", "/var/lib/kubelet/device-plugins": "Directory",
                            POD_RESOURCES_DIR: "Directory"},
            EXPORTER: {XPUD_API_DIR: "Directory", POD_RESOURCES_DIR: "Directory"},
            TOKEN_GEN: {"/xpu-runtime/auth": "DirectoryOrCreate", "/xpu-runtime": "DirectoryOrCreate"},
        }
        # token-sync sees the host's /xpu-runtime apart from auth/ (which is mounted where it
        # writes) and read-only, so that an auth/ replaced on the host shows there.
        apart = {"/xpu-runtime": "/host/xpu-runtime"}
        for name, paths in expected.items():
            spec = pod_spec(self.objects, name)
            volumes = spec["volumes"]
            for volume in volumes:
                self.assertEqual(set(volume) - {"name"}, {"hostPath"}, f"{name}: {volume}")
            host_paths = {v["hostPath"]["path"]: v["hostPath"]["type"] for v in volumes}
            self.assertEqual(host_paths, paths, name)
            # Mounted where the shim looks for them, xpud's API read-only.
            by_volume = {v["name"]: v["hostPath"]["path"] for v in volumes}
            for mount in spec["containers"][0]["volumeMounts"]:
                host_path = by_volume[mount["name"]]
                self.assertEqual(mount["mountPath"], apart.get(host_path, host_path), name)
                if host_path in (XPUD_API_DIR, "/xpu-runtime", POD_RESOURCES_DIR):
                    self.assertIs(mount["readOnly"], True, name)
        args = args_of(self.objects, TOKEN_GEN)
        self.assertEqual(args[args.index("--dest-parent-dir") + 1], "/host/xpu-runtime")

    def test_no_pod_reaches_the_host_system_bus(self):
        # uid 0 on the host's system bus is host root: no pod may see /run/dbus in any form.
        for name in DAEMONSETS:
            spec = pod_spec(self.objects, name)
            for volume in spec["volumes"]:
                path = volume["hostPath"]["path"]
                self.assertFalse(path == "/run" or path.startswith("/run/dbus") or path == "/var/run"
                                 or path.startswith("/var/run/dbus"), f"{name} mounts {path}")
            args = args_of(self.objects, name)
            self.assertNotIn("--system-bus", args, name)
            if name != TOKEN_GEN:
                # The roles that talk to xpud are pointed at the proxy's socket, before the role.
                self.assertEqual(args[:2], XPUD_API_ARGS, name)

    def test_one_image_tagged_with_the_app_version(self):
        # The tag packaging/container/build-image.sh gives the image; the seed's per-role tags,
        # kept in values.yaml, named the replaced add-on's own images.
        images = {name: container(self.objects, name)["image"] for name in DAEMONSETS}
        expected = f"ccr.ccs.tencentyun.com/kunlunxin/xpu-k8s-shim:{chart_app_version()}"
        self.assertEqual(images, {name: expected for name in DAEMONSETS})

    def test_roles_and_default_arguments(self):
        common = ["--v", "5", "--log-level", "info", "--memory-unit", "MiB"]
        self.assertEqual(args_of(self.objects, DEVICE_PLUGIN),
                         XPUD_API_ARGS + ["device-plugin"] + common + [
                             "--cdi=auto", "--node-status", "--handover-taint",
                             "--handover-successor", f"{NAMESPACE}/{DEVICE_PLUGIN}",
                             "--handover-successor", f"{NAMESPACE}/xpu-dra-driver"])
        self.assertEqual(args_of(self.objects, EXPORTER), XPUD_API_ARGS + ["exporter", "--listen", ":9507"] + common)
        self.assertEqual(args_of(self.objects, TOKEN_GEN),
                         ["token-sync", "--dest-parent-dir", "/host/xpu-runtime"] + common)
        for name in DAEMONSETS:
            self.assertNotIn("command", container(self.objects, name), "the image's entrypoint is the shim")

    def test_exporter_port_is_named_metrics_and_discoverable(self):
        exporter = container(self.objects, EXPORTER)
        self.assertEqual(exporter["ports"], [{"name": "metrics", "containerPort": 9507, "protocol": "TCP"}])
        annotations = self.objects[("DaemonSet", EXPORTER)]["spec"]["template"]["metadata"]["annotations"]
        self.assertEqual(annotations["prometheus.io/scrape"], "true")
        self.assertEqual(annotations["prometheus.io/port"], "9507")
        service = self.objects[("Service", "xpu-exporter")]["spec"]
        self.assertEqual(service["clusterIP"], "None")
        self.assertEqual(service["ports"], [{"name": "metrics", "port": 9507, "targetPort": "metrics",
                                             "protocol": "TCP"}])
        pod_labels = self.objects[("DaemonSet", EXPORTER)]["spec"]["template"]["metadata"]["labels"]
        for key, value in service["selector"].items():
            self.assertEqual(pod_labels.get(key), value)

    def test_exporter_resources_are_the_seeds(self):
        self.assertEqual(container(self.objects, EXPORTER)["resources"],
                         {"requests": {"cpu": "100m", "memory": "100Mi"},
                          "limits": {"cpu": "1000m", "memory": "1Gi"}})

    def test_daemonsets_select_their_own_pods_on_labelled_nodes(self):
        selectors = set()
        for name in DAEMONSETS:
            ds = self.objects[("DaemonSet", name)]
            match = ds["spec"]["selector"]["matchLabels"]
            labels = ds["spec"]["template"]["metadata"]["labels"]
            self.assertTrue(match.items() <= labels.items(), name)
            selectors.add(tuple(sorted(match.items())))
            self.assertEqual(pod_spec(self.objects, name)["nodeSelector"], {"kunlun-device-enable": "enable"})
            self.assertIn({"key": "kunlunxin.com/xpu", "operator": "Exists", "effect": "NoSchedule"},
                          pod_spec(self.objects, name)["tolerations"])
        self.assertEqual(len(selectors), 3, "two DaemonSets would fight over the same pods")

    def test_reserved_flags_are_off_by_default(self):
        args = args_of(self.objects, DEVICE_PLUGIN)
        for flag in ("--resource-per-model", "--resource-name", "--enable-sriov", "--sriov-num-vfs",
                     "--reconfig-vxpu", "--enable-xpu-share"):
            self.assertNotIn(flag, args)


class ReservedOptions(unittest.TestCase):
    """Each key the seed declared but ignored now changes what is deployed."""

    def test_use_detail_res_name(self):
        args = args_of(render("devicePlugin.useDetailResName=true"), DEVICE_PLUGIN)
        self.assertIn("--resource-per-model", args)

    def test_customized_resource_name(self):
        args = args_of(render("devicePlugin.customizedResourceName=example.com/vxpu"), DEVICE_PLUGIN)
        self.assertEqual(option_value(args, "--resource-name"), "example.com/vxpu")

    def test_sriov(self):
        args = args_of(render("devicePlugin.enableSriov=true", "devicePlugin.sriovNumVfs=4"), DEVICE_PLUGIN)
        self.assertIn("--enable-sriov", args)
        self.assertEqual(option_value(args, "--sriov-num-vfs"), "4")
        self.assertNotIn("--reconfig-vxpu", args)

    def test_reconfig_vxpu(self):
        args = args_of(render("devicePlugin.enableSriov=true", "devicePlugin.sriovNumVfs=2",
                              "devicePlugin.reconfigVxpu=true"), DEVICE_PLUGIN)
        self.assertIn("--reconfig-vxpu", args)

    def test_reconfig_vxpu_without_sriov_is_refused(self):
        result = render_failure("devicePlugin.reconfigVxpu=true")
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("reconfigVxpu needs devicePlugin.enableSriov", result.stderr)

    def test_enable_xpu_share(self):
        args = args_of(render("devicePlugin.enableXpuShare=true"), DEVICE_PLUGIN)
        self.assertIn("--enable-xpu-share", args)

    def test_xpu_share_memory_unit_needs_both_values(self):
        flag = "--xpu-share-memory-unit-mib"
        both = args_of(render("devicePlugin.enableXpuShare=true",
                              "devicePlugin.xpuShareMemoryUnitMiB=1024"), DEVICE_PLUGIN)
        self.assertIn("--enable-xpu-share", both)
        self.assertEqual(option_value(both, flag), "1024")
        for values in (("devicePlugin.enableXpuShare=true",),
                       ("devicePlugin.enableXpuShare=true", "devicePlugin.xpuShareMemoryUnitMiB=0"),
                       ("devicePlugin.xpuShareMemoryUnitMiB=1024",),
                       ()):
            objects = render(*values)
            self.assertNotIn(flag, args_of(objects, DEVICE_PLUGIN), values)
        # A large value stays an integer in the argument, not 6.5536e+04.
        args = args_of(render("devicePlugin.enableXpuShare=true",
                              "devicePlugin.xpuShareMemoryUnitMiB=65536"), DEVICE_PLUGIN)
        self.assertEqual(option_value(args, flag), "65536")
        args = args_of(render(values_yaml="devicePlugin:\n  enableXpuShare: true\n"
                                          "  xpuShareMemoryUnitMiB: 65536\n"), DEVICE_PLUGIN)
        self.assertEqual(option_value(args, flag), "65536")
        objects = render("devicePlugin.enableXpuShare=true", "devicePlugin.xpuShareMemoryUnitMiB=64")
        for name in (EXPORTER, TOKEN_GEN):
            self.assertNotIn(flag, args_of(objects, name), name)

    def test_xpu_share_memory_unit_out_of_range_is_refused(self):
        for bad in ("10", "63", "-1", "65537", "1.5", "big"):
            result = render_failure("devicePlugin.enableXpuShare=true",
                                    f"devicePlugin.xpuShareMemoryUnitMiB={bad}")
            self.assertNotEqual(result.returncode, 0, bad)
            self.assertIn("xpuShareMemoryUnitMiB", result.stderr, bad)

    def test_reserved_flags_reach_only_the_device_plugin(self):
        objects = render("devicePlugin.enableSriov=true", "devicePlugin.sriovNumVfs=4",
                         "devicePlugin.enableXpuShare=true", "devicePlugin.useDetailResName=true")
        for name in (EXPORTER, TOKEN_GEN):
            args = args_of(objects, name)
            for flag in ("--enable-sriov", "--enable-xpu-share"):
                self.assertNotIn(flag, args, name)
        self.assertNotIn("--resource-per-model", args_of(objects, TOKEN_GEN))

    def test_exporter_gets_the_device_plugins_resource_name(self):
        # The exporter reads pod-resources entries in the domain the plugin advertises in; without
        # the same name, pods holding cards of a customised resource lose their labels.
        for values in (("devicePlugin.customizedResourceName=example.com/accel",),
                       ("devicePlugin.useDetailResName=true",
                        "devicePlugin.customizedResourceName=example.com/xpu")):
            objects = render(*values)
            plugin, exporter = args_of(objects, DEVICE_PLUGIN), args_of(objects, EXPORTER)
            for flag in ("--resource-name", "--resource-per-model"):
                self.assertEqual(flag in exporter, flag in plugin, (values, flag))
            self.assertEqual(option_value(exporter, "--resource-name"),
                             option_value(plugin, "--resource-name"), values)
            self.assertNotIn("--resource-name", args_of(objects, TOKEN_GEN))

    def test_custom_domain_per_model(self):
        # The plugin takes the domain of --resource-name for its per-model resources.
        args = args_of(render("devicePlugin.useDetailResName=true",
                              "devicePlugin.customizedResourceName=example.com/xpu"), DEVICE_PLUGIN)
        self.assertIn("--resource-per-model", args)
        self.assertEqual(option_value(args, "--resource-name"), "example.com/xpu")

    def test_invalid_values_are_refused_with_their_key(self):
        for bad, key in (("config.memoryUnit=TB", "memoryUnit"),
                         ("config.logLevel=loud", "logLevel"),
                         ("config.exporterPort=70000", "exporterPort"),
                         ("devicePlugin.sriovNumVfs=-1", "sriovNumVfs"),
                         ("devicePlugin.customizedResourceName=no-domain", "customizedResourceName"),
                         ("exporter.serviceMonitor.interval=often", "interval"),
                         ("exporter.podMonitor.scrapeTimeout=5", "scrapeTimeout")):
            result = render_failure(bad)
            self.assertNotEqual(result.returncode, 0, bad)
            self.assertIn(key, result.stderr, bad)

    def test_log_level_reaches_every_role(self):
        objects = render("config.logLevel=debug")
        for name in DAEMONSETS:
            self.assertEqual(option_value(args_of(objects, name), "--log-level"), "debug", name)

    def test_empty_log_level_lets_log_verbose_decide(self):
        objects = render("config.logLevel=", "config.logVerbose=2")
        for name in DAEMONSETS:
            args = args_of(objects, name)
            self.assertNotIn("--log-level", args, name)
            self.assertEqual(option_value(args, "--v"), "2", name)

    def test_memory_unit(self):
        objects = render("config.memoryUnit=GiB")
        self.assertEqual(option_value(args_of(objects, DEVICE_PLUGIN), "--memory-unit"), "GiB")
        self.assertEqual(option_value(args_of(objects, EXPORTER), "--memory-unit"), "GiB")

    def test_exporter_port(self):
        objects = render("config.exporterPort=9600")
        exporter = container(objects, EXPORTER)
        self.assertEqual(option_value(exporter["args"], "--listen"), ":9600")
        self.assertEqual(exporter["ports"][0]["containerPort"], 9600)
        self.assertEqual(objects[("Service", "xpu-exporter")]["spec"]["ports"][0]["port"], 9600)
        annotations = objects[("DaemonSet", EXPORTER)]["spec"]["template"]["metadata"]["annotations"]
        self.assertEqual(annotations["prometheus.io/port"], "9600")

    def test_tolerations_are_templated(self):
        values = "tolerations:\n  - key: dedicated\n    operator: Equal\n    value: ai\n    effect: NoExecute\n"
        objects = render(values_yaml=values)
        for name in DAEMONSETS:
            self.assertEqual(pod_spec(objects, name)["tolerations"],
                             [{"key": "dedicated", "operator": "Equal", "value": "ai", "effect": "NoExecute"},
                              # The chart's own, for a node the device plugin is handing over.
                              {"key": "kunlunxin.com/xpu-handover", "operator": "Exists", "effect": "NoSchedule"}])

    def test_node_selector_and_image(self):
        objects = render("nodeSelector.xpu=yes", "global.image.host=registry.local:5000",
                         "images.exporter.tag=v9")
        self.assertEqual(pod_spec(objects, EXPORTER)["nodeSelector"],
                         {"kunlun-device-enable": "enable", "xpu": "yes"})
        self.assertEqual(container(objects, EXPORTER)["image"], "registry.local:5000/kunlunxin/xpu-k8s-shim:v9")

    def test_global_tag_overrides_every_role(self):
        objects = render("global.image.tag=7.7.7", "images.exporter.tag=v9")
        for name in DAEMONSETS:
            self.assertEqual(container(objects, name)["image"],
                             "ccr.ccs.tencentyun.com/kunlunxin/xpu-k8s-shim:7.7.7", name)

    def test_role_tag_set_by_the_user_wins_over_the_app_version(self):
        objects = render("images.devicePlugin.tag=v5.1.0", "images.rbacTokenGen.tag=2")
        images = {name: container(objects, name)["image"] for name in DAEMONSETS}
        self.assertEqual(images, {
            DEVICE_PLUGIN: "ccr.ccs.tencentyun.com/kunlunxin/xpu-k8s-shim:v5.1.0",
            EXPORTER: f"ccr.ccs.tencentyun.com/kunlunxin/xpu-k8s-shim:{chart_app_version()}",
            TOKEN_GEN: "ccr.ccs.tencentyun.com/kunlunxin/xpu-k8s-shim:2",
        })

    def test_no_host_leaves_the_repository_alone(self):
        objects = render("global.image.host=", "global.image.repository=xpu-k8s-shim")
        self.assertEqual(container(objects, EXPORTER)["image"], f"xpu-k8s-shim:{chart_app_version()}")

    def test_go_mem_limit_is_accepted_and_changes_nothing(self):
        self.assertEqual(render("exporter.goMemLimit=2GiB"), render())

    def test_exporter_resources(self):
        objects = render("exporter.resources.limits.memory=512Mi")
        self.assertEqual(container(objects, EXPORTER)["resources"]["limits"], {"cpu": "1000m", "memory": "512Mi"})

    def test_compat_rbac_is_the_seeds(self):
        objects = render("rbac.compat=true")
        for role in SEED_RULES:
            self.assertEqual(normalized_rules(objects[("ClusterRole", role)]["rules"]),
                             normalized_rules(seed_rules(role)), role)
        for binding, role, account in (("xpu-device-plugin", "xpu-device-plugin", "xpu-device-plugin"),
                                       ("xpu-exporter", "xpu-exporter", "xpu-exporter"),
                                       ("klx-xpu-binding", "klx-xpu-clusterrole", "klx-xpu-serviceaccount")):
            obj = objects[("ClusterRoleBinding", binding)]
            self.assertEqual(obj["roleRef"], {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                              "name": role})
            self.assertEqual(obj["subjects"], [{"kind": "ServiceAccount", "name": account,
                                                "namespace": NAMESPACE}])
        for account, daemonset in (("xpu-device-plugin", DEVICE_PLUGIN), ("xpu-exporter", EXPORTER)):
            self.assertIs(objects[("ServiceAccount", account)]["automountServiceAccountToken"], True)
            self.assertIs(pod_spec(objects, daemonset)["automountServiceAccountToken"], True)

    def test_nodes_proxy_for_the_runtime_token_alone(self):
        objects = render("rbac.tokenGen.nodesProxy=true")
        self.assertEqual(normalized_rules(objects[("ClusterRole", "klx-xpu-clusterrole")]["rules"]),
                         normalized_rules(seed_rules("klx-xpu-clusterrole")))
        self.assertNotIn(("ClusterRole", "xpu-device-plugin"), objects)
        self.assertIs(pod_spec(objects, EXPORTER)["automountServiceAccountToken"], False)

    def test_minimal_true_is_the_default_and_false_points_at_compat(self):
        self.assertEqual(render("rbac.minimal=true"), render())
        refused = render_failure("rbac.minimal=false")
        self.assertNotEqual(refused.returncode, 0)
        self.assertIn("rbac.minimal=false is gone", refused.stderr)
        self.assertIn("rbac.compat=true", refused.stderr)
        both = render_failure("rbac.minimal=true", "rbac.compat=true")
        self.assertNotEqual(both.returncode, 0)
        self.assertIn("contradict", both.stderr)

    def test_unknown_rbac_keys_are_refused(self):
        for key in ("rbac.compt=true", "rbac.tokenGen.nodeProxy=true"):
            refused = render_failure(key)
            self.assertNotEqual(refused.returncode, 0, key)
            self.assertIn("additional properties", refused.stderr.lower(), key)

    def test_exporter_service_can_be_turned_off(self):
        self.assertNotIn(("Service", "xpu-exporter"), render("exporter.service.enabled=false"))

    def test_exporter_web_config_secret(self):
        plain = render()
        exporter = container(plain, EXPORTER)
        self.assertNotIn("--web-config-file", exporter["args"])
        self.assertEqual(exporter["livenessProbe"]["httpGet"]["scheme"], "HTTP")
        objects = render("exporter.webConfig.secretName=xpu-exporter-web",
                         "exporter.webConfig.tlsSecretName=xpu-exporter-tls")
        exporter = container(objects, EXPORTER)
        self.assertEqual(option_value(exporter["args"], "--web-config-file"),
                         "/etc/xpu-k8s-shim/web/web-config.yml")
        for probe in ("livenessProbe", "readinessProbe"):
            self.assertEqual(exporter[probe]["httpGet"], {"path": "/healthz", "port": "metrics", "scheme": "HTTPS"})
        annotations = objects[("DaemonSet", EXPORTER)]["spec"]["template"]["metadata"]["annotations"]
        self.assertEqual(annotations["prometheus.io/scheme"], "https")
        volumes = {v["name"]: v for v in pod_spec(objects, EXPORTER)["volumes"]}
        self.assertEqual(volumes["web-config"]["projected"]["sources"],
                         [{"secret": {"name": "xpu-exporter-web"}}, {"secret": {"name": "xpu-exporter-tls"}}])
        self.assertIn({"name": "web-config", "mountPath": "/etc/xpu-k8s-shim/web", "readOnly": True},
                      exporter["volumeMounts"])
        # Basic auth without TLS: the probes stay on HTTP.
        basic = container(render("exporter.webConfig.secretName=web", "exporter.webConfig.probeScheme=HTTP",
                                 "exporter.webConfig.file=auth.yml"), EXPORTER)
        self.assertEqual(basic["readinessProbe"]["httpGet"]["scheme"], "HTTP")
        self.assertEqual(option_value(basic["args"], "--web-config-file"), "/etc/xpu-k8s-shim/web/auth.yml")
        self.assertNotEqual(render_failure("exporter.webConfig.probeScheme=FTP").returncode, 0)


class PrometheusOperatorObjects(unittest.TestCase):
    """The Prometheus Operator's objects: each rendered only when its value enables it and the
    cluster serves its CRD, so that the chart installs the same on a cluster without the operator."""

    def operator_kinds(self, objects):
        return {key for key, obj in objects.items() if obj["apiVersion"].startswith("monitoring.coreos.com/")}

    def test_none_by_default_even_with_the_operator(self):
        self.assertEqual(self.operator_kinds(render(api_versions=OPERATOR_APIS)), set())

    def test_none_without_the_operator_even_when_enabled(self):
        objects = render("exporter.prometheusRule.enabled=true")
        self.assertEqual(self.operator_kinds(objects), set())
        self.assertEqual(set(objects), set(render()))

    def test_none_without_the_operator_even_when_monitors_are_enabled(self):
        for value in ("exporter.serviceMonitor.enabled=true", "exporter.podMonitor.enabled=true"):
            objects = render(value)
            self.assertEqual(self.operator_kinds(objects), set(), value)
            self.assertEqual(set(objects), set(render()), value)

    def assert_scrapes_the_metrics_port(self, endpoints, interval="30s"):
        self.assertEqual(len(endpoints), 1)
        endpoint = endpoints[0]
        self.assertEqual(endpoint["port"], "metrics")
        self.assertEqual(endpoint["path"], "/metrics")
        self.assertEqual(endpoint["interval"], interval)
        # One exporter per node: the target is named after its node.
        self.assertIn({"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "instance",
                       "action": "replace"}, endpoint["relabelings"])

    def test_service_monitor_selects_the_exporter_service(self):
        objects = render("exporter.serviceMonitor.enabled=true", "exporter.serviceMonitor.labels.release=kps",
                         "exporter.serviceMonitor.interval=15s", api_versions=(SERVICE_MONITOR_API,))
        self.assertEqual(self.operator_kinds(objects), {("ServiceMonitor", EXPORTER)})
        monitor = objects[("ServiceMonitor", EXPORTER)]
        self.assertEqual(monitor["apiVersion"], "monitoring.coreos.com/v1")
        self.assertEqual(monitor["metadata"]["namespace"], NAMESPACE)
        self.assertEqual(monitor["metadata"]["labels"]["release"], "kps")
        self.assertEqual(monitor["spec"]["namespaceSelector"], {"matchNames": [NAMESPACE]})
        service = objects[("Service", "xpu-exporter")]
        selector = monitor["spec"]["selector"]["matchLabels"]
        self.assertTrue(selector.items() <= service["metadata"]["labels"].items(), selector)
        for (kind, name), obj in objects.items():
            if kind == "Service" and name != "xpu-exporter":
                self.assertFalse(selector.items() <= obj["metadata"].get("labels", {}).items(), name)
        self.assertIn("metrics", [port["name"] for port in service["spec"]["ports"]])
        self.assert_scrapes_the_metrics_port(monitor["spec"]["endpoints"], "15s")
        self.assertNotIn("scrapeTimeout", monitor["spec"]["endpoints"][0])
        objects = render("exporter.serviceMonitor.enabled=true", "exporter.serviceMonitor.scrapeTimeout=5s",
                         api_versions=(SERVICE_MONITOR_API,))
        self.assertEqual(objects[("ServiceMonitor", EXPORTER)]["spec"]["endpoints"][0]["scrapeTimeout"], "5s")

    def test_pod_monitor_selects_the_exporter_pods_only(self):
        objects = render("exporter.podMonitor.enabled=true", "exporter.service.enabled=false",
                         api_versions=(POD_MONITOR_API,))
        self.assertEqual(self.operator_kinds(objects), {("PodMonitor", EXPORTER)})
        monitor = objects[("PodMonitor", EXPORTER)]
        self.assertEqual(monitor["metadata"]["namespace"], NAMESPACE)
        self.assertEqual(monitor["spec"]["namespaceSelector"], {"matchNames": [NAMESPACE]})
        selector = monitor["spec"]["selector"]["matchLabels"]
        for name in DAEMONSETS:
            pod_labels = objects[("DaemonSet", name)]["spec"]["template"]["metadata"]["labels"]
            self.assertEqual(selector.items() <= pod_labels.items(), name == EXPORTER, name)
        self.assertIn("metrics", [port["name"] for port in container(objects, EXPORTER)["ports"]])
        self.assert_scrapes_the_metrics_port(monitor["spec"]["podMetricsEndpoints"])

    def test_monitors_scrape_over_tls_when_the_exporter_serves_it(self):
        plain = render("exporter.serviceMonitor.enabled=true", api_versions=(SERVICE_MONITOR_API,))
        self.assertEqual(plain[("ServiceMonitor", EXPORTER)]["spec"]["endpoints"][0]["scheme"], "http")
        for kind, key, field, api in (("ServiceMonitor", "serviceMonitor", "endpoints", SERVICE_MONITOR_API),
                                      ("PodMonitor", "podMonitor", "podMetricsEndpoints", POD_MONITOR_API)):
            objects = render(f"exporter.{key}.enabled=true", "exporter.webConfig.secretName=xpu-web",
                             f"exporter.{key}.tlsConfig.serverName=xpu-exporter",
                             f"exporter.{key}.tlsConfig.ca.secret.name=xpu-exporter-tls",
                             f"exporter.{key}.tlsConfig.ca.secret.key=ca.crt",
                             f"exporter.{key}.basicAuth.username.name=scrape-auth",
                             f"exporter.{key}.basicAuth.username.key=user", api_versions=(api,))
            endpoint = objects[(kind, EXPORTER)]["spec"][field][0]
            self.assertEqual(endpoint["scheme"], "https", kind)
            self.assertEqual(endpoint["tlsConfig"], {"serverName": "xpu-exporter",
                                                     "ca": {"secret": {"name": "xpu-exporter-tls", "key": "ca.crt"}}})
            self.assertEqual(endpoint["basicAuth"], {"username": {"name": "scrape-auth", "key": "user"}})
            # The monitor and the exporter's own annotation agree on the scheme.
            annotations = objects[("DaemonSet", EXPORTER)]["spec"]["template"]["metadata"]["annotations"]
            self.assertEqual(annotations["prometheus.io/scheme"], endpoint["scheme"])
        basic_only = render("exporter.podMonitor.enabled=true", "exporter.webConfig.secretName=xpu-web",
                            "exporter.webConfig.probeScheme=HTTP", api_versions=(POD_MONITOR_API,))
        self.assertEqual(basic_only[("PodMonitor", EXPORTER)]["spec"]["podMetricsEndpoints"][0]["scheme"], "http")

    def test_monitors_render_only_their_own_kind(self):
        # A cluster that serves ServiceMonitor but not PodMonitor gets nothing from podMonitor.
        objects = render("exporter.podMonitor.enabled=true", api_versions=(SERVICE_MONITOR_API,))
        self.assertEqual(self.operator_kinds(objects), set())

    def test_both_monitors_are_refused(self):
        result = render_failure("exporter.serviceMonitor.enabled=true", "exporter.podMonitor.enabled=true")
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("enable one, not both", result.stderr)

    def test_service_monitor_without_the_service_is_refused(self):
        result = run_helm("template", "rel", CHART, "--namespace", NAMESPACE,
                          "--set", "exporter.serviceMonitor.enabled=true", "--set", "exporter.service.enabled=false",
                          "--api-versions", SERVICE_MONITOR_API)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("needs exporter.service.enabled", result.stderr)

    def test_prometheus_rule_carries_the_rules_file(self):
        objects = render("exporter.prometheusRule.enabled=true", "exporter.prometheusRule.labels.release=kps",
                         api_versions=(PROMETHEUS_RULE_API,))
        self.assertEqual(self.operator_kinds(objects), {("PrometheusRule", "xpu-exporter")})
        rule = objects[("PrometheusRule", "xpu-exporter")]
        self.assertEqual(rule["apiVersion"], "monitoring.coreos.com/v1")
        self.assertEqual(rule["metadata"]["namespace"], NAMESPACE)
        self.assertEqual(rule["metadata"]["labels"]["release"], "kps")
        self.assertEqual(rule["metadata"]["labels"]["app.kubernetes.io/component"], "exporter")
        with open(os.path.join(CHART, "files", "xpu-alerts.rules.yaml"), encoding="utf-8") as f:
            self.assertEqual(rule["spec"], yaml.safe_load(f))
        alerts = {r["alert"] for group in rule["spec"]["groups"] for r in group["rules"]}
        self.assertEqual(alerts, {"XPUUnhealthy", "XPUHealthFlapping", "XPUTemperatureHigh",
                                  "XPUMemoryNearlyFull", "XPUXpudUnreachable",
                                  "XPUPodResourcesUnreachable", "XPUExporterDown", "XPUExporterAbsent",
                                  "XPUPcieFatalError", "XPUPcieNonfatalErrors",
                                  "XPUPcieCorrectableErrorsHigh", "XPUPcieLinkDowntrained",
                                  "XPUResetFailed"})
        promtool = shutil.which("promtool")
        if promtool:
            # The {{ $labels.x }} of the annotations came through Helm untouched.
            with tempfile.NamedTemporaryFile("w", suffix=".yaml") as rules:
                yaml.safe_dump(rule["spec"], rules)
                rules.flush()
                result = subprocess.run([promtool, "check", "rules", rules.name], capture_output=True,
                                        text=True, timeout=60)
                self.assertEqual(result.returncode, 0, result.stdout + result.stderr)


class GrafanaDashboard(unittest.TestCase):
    def test_off_by_default(self):
        self.assertNotIn(("ConfigMap", "xpu-dashboard"), render())

    def test_config_map_carries_the_dashboard_for_the_sidecar(self):
        objects = render("exporter.grafanaDashboard.enabled=true",
                         "exporter.grafanaDashboard.annotations.grafana_folder=XPU")
        config_map = objects[("ConfigMap", "xpu-dashboard")]
        self.assertEqual(config_map["metadata"]["namespace"], NAMESPACE)
        self.assertEqual(config_map["metadata"]["labels"]["grafana_dashboard"], "1")
        self.assertEqual(config_map["metadata"]["annotations"], {"grafana_folder": "XPU"})
        self.assertEqual(list(config_map["data"]), ["xpu-dashboard.json"])
        with open(os.path.join(CHART, "files", "xpu-dashboard.json"), encoding="utf-8") as f:
            self.assertEqual(json.loads(config_map["data"]["xpu-dashboard.json"]), json.load(f))

    def test_namespace_for_the_sidecar(self):
        objects = render("exporter.grafanaDashboard.enabled=true", "exporter.grafanaDashboard.namespace=monitoring")
        self.assertEqual(objects[("ConfigMap", "xpu-dashboard")]["metadata"]["namespace"], "monitoring")


class NodeFeatureDiscovery(unittest.TestCase):
    """devicePlugin.nodeFeatureDiscovery: the device plugin writes node labels as a feature file
    into NFD's features.d on the host; nothing else changes, and nothing talks to the API server."""

    NFD_DIR = "/etc/kubernetes/node-feature-discovery/features.d"

    def nfd_volumes(self, objects):
        return [v for v in pod_spec(objects, DEVICE_PLUGIN)["volumes"] if v["name"] == "nfd-features"]

    def test_off_by_default(self):
        objects = render()
        self.assertEqual(self.nfd_volumes(objects), [])
        for name in DAEMONSETS:
            self.assertNotIn("--nfd-features-file", args_of(objects, name), name)

    def test_enabled_mounts_features_d_and_passes_the_file(self):
        objects = render("devicePlugin.nodeFeatureDiscovery.enabled=true")
        self.assertEqual(self.nfd_volumes(objects), [
            {"name": "nfd-features", "hostPath": {"path": self.NFD_DIR, "type": "DirectoryOrCreate"}}])
        mounts = [m for m in container(objects, DEVICE_PLUGIN)["volumeMounts"] if m["name"] == "nfd-features"]
        # Read-write, at the host's path (the pod writes a temp file there and renames it).
        self.assertEqual(mounts, [{"name": "nfd-features", "mountPath": self.NFD_DIR}])
        args = args_of(objects, DEVICE_PLUGIN)
        self.assertEqual(option_value(args, "--nfd-features-file"), self.NFD_DIR + "/kunlunxin-xpu")
        # Everything else as without it: the other pods, their mounts, the RBAC.
        plain = render()
        for name in (EXPORTER, TOKEN_GEN):
            self.assertEqual(pod_spec(objects, name), pod_spec(plain, name), name)
        self.assertEqual(set(objects), set(plain), "no new objects (no RBAC, no NodeFeature)")
        for key, obj in plain.items():
            if key[0] in ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"):
                self.assertEqual(objects[key], obj, key)
        self.assertEqual([a for a in args if a not in ("--nfd-features-file", self.NFD_DIR + "/kunlunxin-xpu")],
                         args_of(plain, DEVICE_PLUGIN))

    def test_still_no_token(self):
        objects = render("devicePlugin.nodeFeatureDiscovery.enabled=true", "nodeStatus.enabled=false")
        self.assertIs(pod_spec(objects, DEVICE_PLUGIN)["automountServiceAccountToken"], False)
        self.assertNotIn(("ClusterRole", "xpu-device-plugin"), objects)

    def test_custom_directory_and_file_name(self):
        objects = render("devicePlugin.nodeFeatureDiscovery.enabled=true",
                         "devicePlugin.nodeFeatureDiscovery.featuresDir=/opt/nfd/features.d/",
                         "devicePlugin.nodeFeatureDiscovery.fileName=xpu")
        self.assertEqual(self.nfd_volumes(objects)[0]["hostPath"]["path"], "/opt/nfd/features.d")
        self.assertEqual(option_value(args_of(objects, DEVICE_PLUGIN), "--nfd-features-file"),
                         "/opt/nfd/features.d/xpu")

    def test_bad_values_are_refused_with_their_key(self):
        for bad, key in (("devicePlugin.nodeFeatureDiscovery.featuresDir=features.d", "featuresDir"),
                         ("devicePlugin.nodeFeatureDiscovery.featuresDir=/", "featuresDir"),
                         ("devicePlugin.nodeFeatureDiscovery.fileName=.kunlunxin-xpu", "fileName"),
                         ("devicePlugin.nodeFeatureDiscovery.fileName=a/b", "fileName"),
                         ("devicePlugin.nodeFeatureDiscovery.enable=true", "enable")):
            result = render_failure("devicePlugin.nodeFeatureDiscovery.enabled=true", bad)
            self.assertNotEqual(result.returncode, 0, bad)
            self.assertIn(key, result.stderr, bad)


class SriovSocket(unittest.TestCase):
    """xpud-api-proxy's SR-IOV socket (/run/xpud-api-sriov), the only one through which
    ConfigureVirtualFunctions reaches xpud: mounted into the device plugin's pod alone, and only
    with devicePlugin.reconfigVxpu. Every other pod, and the device plugin without the value,
    reaches xpud only through the read-only socket."""

    def sriov_reach(self, objects):
        """{DaemonSet: True when its pod mounts the SR-IOV directory or names its socket}."""
        reach = {}
        for (kind, name), obj in objects.items():
            if kind != "DaemonSet":
                continue
            spec = obj["spec"]["template"]["spec"]
            paths = [v["hostPath"]["path"] for v in spec["volumes"]]
            mounts = [m["mountPath"] for c in spec["containers"] + spec.get("initContainers", [])
                      for m in c.get("volumeMounts", [])]
            args = [a for c in spec["containers"] + spec.get("initContainers", []) for a in c.get("args", [])]
            reach[name] = any(XPUD_API_SRIOV_DIR in text for text in paths + mounts + args)
        return reach

    def test_no_pod_gets_it_by_default(self):
        for values in ((), ("devicePlugin.enableSriov=true", "devicePlugin.sriovNumVfs=4"),
                       ("allocation=both", "dra.nodeSelector.kunlunxin\\.com/allocation=dra"),
                       ("allocation=dra",)):
            objects = render(*values)
            reach = self.sriov_reach(objects)
            self.assertIn(EXPORTER, reach, values)
            self.assertFalse(any(reach.values()), (values, reach))
            if ("DaemonSet", DEVICE_PLUGIN) in objects:
                self.assertEqual(args_of(objects, DEVICE_PLUGIN)[:2], XPUD_API_ARGS, values)
                paths = [v["hostPath"]["path"] for v in pod_spec(objects, DEVICE_PLUGIN)["volumes"]]
                self.assertIn(XPUD_API_DIR, paths, values)

    def test_reconfig_vxpu_gives_it_to_the_device_plugin_alone(self):
        objects = render(*RECONFIG_VXPU)
        self.assertEqual(self.sriov_reach(objects), {DEVICE_PLUGIN: True, EXPORTER: False, TOKEN_GEN: False})
        spec = pod_spec(objects, DEVICE_PLUGIN)
        # Instead of the read-only directory, not beside it: the SR-IOV socket serves the reads too.
        self.assertEqual({v["hostPath"]["path"]: v["hostPath"]["type"] for v in spec["volumes"]},
                         {XPUD_API_SRIOV_DIR: "Directory", "/var/lib/kubelet/device-plugins": "Directory",
                          POD_RESOURCES_DIR: "Directory"})
        by_volume = {v["name"]: v["hostPath"]["path"] for v in spec["volumes"]}
        mounts = {by_volume[m["name"]]: m for m in container(objects, DEVICE_PLUGIN)["volumeMounts"]}
        self.assertEqual(mounts[XPUD_API_SRIOV_DIR]["mountPath"], XPUD_API_SRIOV_DIR)
        self.assertIs(mounts[XPUD_API_SRIOV_DIR]["readOnly"], True)
        args = args_of(objects, DEVICE_PLUGIN)
        self.assertEqual(args[:3], XPUD_API_SRIOV_ARGS + ["device-plugin"])
        self.assertEqual(args.count("--bus-address"), 1, args)
        self.assertIn("--reconfig-vxpu", args)
        # The exporter keeps the read-only socket, exactly as without the value.
        plain = render("devicePlugin.enableSriov=true", "devicePlugin.sriovNumVfs=2")
        for name in (EXPORTER, TOKEN_GEN):
            self.assertEqual(pod_spec(objects, name), pod_spec(plain, name), name)
        self.assertEqual(args_of(objects, EXPORTER)[:2], XPUD_API_ARGS)

    def test_never_the_dra_driver(self):
        objects = render(*RECONFIG_VXPU, "allocation=both", "dra.nodeSelector.kunlunxin\\.com/allocation=dra")
        self.assertEqual(self.sriov_reach(objects),
                         {DEVICE_PLUGIN: True, EXPORTER: False, TOKEN_GEN: False, DRA_DRIVER: False})
        self.assertEqual(args_of(objects, DRA_DRIVER)[:2], XPUD_API_ARGS)
        # With the DRA driver alone there is no device plugin, and no pod gets the socket.
        objects = render(*RECONFIG_VXPU, "allocation=dra")
        self.assertEqual(self.sriov_reach(objects), {EXPORTER: False, TOKEN_GEN: False, DRA_DRIVER: False})


class DevicePluginCdi(unittest.TestCase):
    """devicePlugin.cdi: --cdi for the device plugin, auto by default; false and true as YAML
    booleans (`--set devicePlugin.cdi=false`, `cdi: false` unquoted) mean what they say."""

    def test_each_value_reaches_the_flag(self):
        self.assertIn("--cdi=auto", args_of(render(), DEVICE_PLUGIN))
        for value, flag in (("auto", "--cdi=auto"), ("true", "--cdi=true"), ("false", "--cdi=false")):
            args = args_of(render(f"devicePlugin.cdi={value}"), DEVICE_PLUGIN)
            self.assertEqual([a for a in args if a.startswith("--cdi")], [flag], value)
            args = args_of(render(values_yaml=f"devicePlugin:\n  cdi: \"{value}\"\n"), DEVICE_PLUGIN)
            self.assertEqual([a for a in args if a.startswith("--cdi")], [flag], value)
        for name in (EXPORTER, TOKEN_GEN):
            self.assertFalse([a for a in args_of(render(), name) if a.startswith("--cdi")], name)

    def test_another_value_is_refused_naming_the_key(self):
        result = render_failure("devicePlugin.cdi=maybe")
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("cdi", result.stderr)


@unittest.skipUnless(SHIM, "xpu-k8s-shim is not built (XPU_BUILD_SHIM=OFF)")
class ArgumentsMeetTheShim(unittest.TestCase):
    """The real binary accepts what the chart renders: it validates every argument before it
    acts on --help, so a flag or value it does not know fails with status 2."""

    def assert_accepted(self, objects):
        for name in DAEMONSETS:
            args = args_of(objects, name)
            result = subprocess.run([SHIM, *args, "--help"], capture_output=True, text=True, timeout=30)
            self.assertEqual(result.returncode, 0, f"{name}: {args}: {result.stderr}")

    def test_defaults(self):
        self.assert_accepted(render())

    def test_options(self):
        self.assert_accepted(render("config.logLevel=", "config.logVerbose=3", "config.memoryUnit=GiB",
                                    "config.exporterPort=9600", "devicePlugin.useDetailResName=true",
                                    "devicePlugin.customizedResourceName=example.com/xpu"))

    def test_web_config(self):
        self.assert_accepted(render("exporter.webConfig.secretName=xpu-exporter-web"))

    def test_node_feature_discovery(self):
        self.assert_accepted(render("devicePlugin.nodeFeatureDiscovery.enabled=true"))
        self.assert_accepted(render("devicePlugin.nodeFeatureDiscovery.enabled=true",
                                    "devicePlugin.nodeFeatureDiscovery.featuresDir=/opt/nfd/features.d/",
                                    "devicePlugin.nodeFeatureDiscovery.fileName=xpu"))

    def test_vxpu_options(self):
        flags = ("--enable-sriov", "--sriov-num-vfs", "--reconfig-vxpu", "--enable-xpu-share")
        usage = subprocess.run([SHIM, "device-plugin", "--help"], capture_output=True, text=True,
                               timeout=30).stdout
        missing = [flag for flag in flags if flag not in usage]
        if missing:
            self.skipTest(f"the device plugin does not implement {', '.join(missing)} yet")
        self.assert_accepted(render("devicePlugin.enableSriov=true", "devicePlugin.sriovNumVfs=4",
                                    "devicePlugin.reconfigVxpu=true", "devicePlugin.enableXpuShare=true"))

    def test_device_metadata_off(self):
        # On by default (no flag), off with the value; an older release's values without the key
        # (helm upgrade --reuse-values) keep it on.
        dra = "xpu-dra-driver"
        self.assertNotIn("--no-device-metadata", args_of(render("allocation=dra"), dra))
        off = render("allocation=dra", "dra.deviceMetadata=false")
        self.assertIn("--no-device-metadata", args_of(off, dra))
        self.assertNotIn("--no-device-metadata",
                         args_of(render("allocation=dra", "dra.deviceMetadata=null"), dra))
        # The kubelet fills $(NODE_NAME) from the pod's spec.nodeName.
        args = [a.replace("$(NODE_NAME)", "node-a") for a in args_of(off, dra)]
        result = subprocess.run([SHIM, *args, "--help"], capture_output=True, text=True, timeout=30)
        self.assertEqual(result.returncode, 0, f"{dra}: {args}: {result.stderr}")

    def test_xpu_share_memory_options(self):
        for unit in ("64", "1024", "65536"):
            objects = render("devicePlugin.enableXpuShare=true",
                             f"devicePlugin.xpuShareMemoryUnitMiB={unit}",
                             "devicePlugin.useDetailResName=true")
            self.assertIn("--xpu-share-memory-unit-mib", args_of(objects, DEVICE_PLUGIN))
            self.assert_accepted(objects)


class NodeStatus(unittest.TestCase):
    """The node's XPUHealthy condition and kunlunxin.com/xpu.ready label: written by the role that
    hands out cards on each node, with only the rights that takes, kept to its own node and to
    that condition and label by an admission policy."""

    WRITES = {("", "nodes"): {"get", "patch"}, ("", "nodes/status"): {"patch"}}

    def writers(self, objects):
        binding = objects[("ClusterRoleBinding", "xpu-node-status")]
        self.assertEqual(binding["roleRef"]["name"], "xpu-node-status")
        return sorted(s["name"] for s in binding["subjects"])

    def test_the_role_that_hands_out_cards_writes_in_each_mode(self):
        # The device plugin's account in every mode: a plugin that leaves its node as the chart
        # switches to dra still hands the node over with its token (no pod holds it in dra).
        for mode, writers, role in (("devicePlugin", ["xpu-device-plugin", "xpu-dra-driver"], DEVICE_PLUGIN),
                                    ("dra", ["xpu-device-plugin", "xpu-dra-driver"], "xpu-dra-driver")):
            objects = render(f"allocation={mode}")
            self.assertEqual(self.writers(objects), writers, mode)
            self.assertIn("--node-status", args_of(objects, role), mode)
            env = {e["name"]: e for e in container(objects, role).get("env", [])}
            self.assertEqual(env["NODE_NAME"]["valueFrom"], {"fieldRef": {"fieldPath": "spec.nodeName"}})
            self.assertIs(pod_spec(objects, role)["automountServiceAccountToken"], True)
        objects = render("allocation=both", "dra.nodeSelector.kunlunxin\\.com/allocation=dra")
        self.assertEqual(self.writers(objects), ["xpu-device-plugin", "xpu-dra-driver"])

    def test_only_patch_of_nodes_and_their_status(self):
        rules = render()[("ClusterRole", "xpu-node-status")]["rules"]
        granted = {}
        for rule in rules:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    granted.setdefault((group, resource), set()).update(rule["verbs"])
            self.assertNotIn("resourceNames", rule)
        self.assertEqual(granted, self.WRITES)

    def test_the_policy_binds_the_two_writers_and_denies(self):
        objects = render()
        policy = objects[("ValidatingAdmissionPolicy", "xpu-node-status-own-node")]["spec"]
        self.assertEqual(policy["failurePolicy"], "Fail")
        self.assertEqual(policy["matchConstraints"]["resourceRules"][0]["resources"], ["nodes", "nodes/status"])
        self.assertIn(f'"system:serviceaccount:{NAMESPACE}:xpu-device-plugin"',
                      policy["matchConditions"][0]["expression"])
        self.assertIn(f'"system:serviceaccount:{NAMESPACE}:xpu-dra-driver"',
                      policy["matchConditions"][0]["expression"])
        binding = objects[("ValidatingAdmissionPolicyBinding", "xpu-node-status-own-node")]["spec"]
        self.assertEqual(binding, {"policyName": "xpu-node-status-own-node", "validationActions": ["Deny"]})

    def test_off_removes_the_rights_the_policy_the_flag_and_the_token(self):
        objects = render("nodeStatus.enabled=false")
        for kind in ("ClusterRole", "ClusterRoleBinding", "ValidatingAdmissionPolicy",
                     "ValidatingAdmissionPolicyBinding"):
            self.assertFalse([key for key in objects if key[0] == kind and "node-status" in key[1]], kind)
        self.assertNotIn("--node-status", args_of(objects, DEVICE_PLUGIN))
        # The hand-over taint is written with the same token: off with it.
        self.assertNotIn("--handover-taint", args_of(objects, DEVICE_PLUGIN))
        self.assertIs(pod_spec(objects, DEVICE_PLUGIN)["automountServiceAccountToken"], False)
        self.assertIs(objects[("ServiceAccount", "xpu-device-plugin")]["automountServiceAccountToken"], False)
        dra = render("nodeStatus.enabled=false", "allocation=dra")
        self.assertNotIn("--node-status", args_of(dra, "xpu-dra-driver"))

    def test_the_hand_over_taint_is_on_by_default_and_may_be_turned_off(self):
        self.assertIn("--handover-taint", args_of(render(), DEVICE_PLUGIN))
        off = render("devicePlugin.handoverTaint=false")
        self.assertNotIn("--handover-taint", args_of(off, DEVICE_PLUGIN))
        self.assertNotIn("--handover-successor", args_of(off, DEVICE_PLUGIN))
        self.assertFalse([key for key in off if "handover" in key[1]], "the read of the successors goes with it")
        # Its budget: at most about 43 s from SIGTERM to exit (device_plugin_role.cpp).
        self.assertEqual(pod_spec(render(), DEVICE_PLUGIN)["terminationGracePeriodSeconds"], 60)

    def test_the_successors_are_read_by_name_and_nothing_else(self):
        # In every mode: a plugin leaving as the chart switches to dra asks whether the DRA
        # driver's DaemonSet stays.
        both = ("allocation=both", "dra.nodeSelector.kunlunxin\\.com/allocation=dra")
        for mode in (("allocation=devicePlugin",), ("allocation=dra",), both):
            objects = render(*mode)
            role = objects[("Role", "xpu-device-plugin-handover")]
            self.assertEqual(role["rules"], [{"apiGroups": ["apps"], "resources": ["daemonsets"],
                                              "resourceNames": [DEVICE_PLUGIN, "xpu-dra-driver"],
                                              "verbs": ["get"]}], mode)
            self.assertEqual(objects[("RoleBinding", "xpu-device-plugin-handover")]["subjects"],
                             [{"kind": "ServiceAccount", "name": "xpu-device-plugin", "namespace": NAMESPACE}], mode)
        # Each name is a DaemonSet the chart makes.
        objects = render(*both)
        self.assertIn(("DaemonSet", DEVICE_PLUGIN), objects)
        self.assertIn(("DaemonSet", "xpu-dra-driver"), objects)

    def test_a_value_that_is_no_boolean_is_refused(self):
        refused = render_failure("nodeStatus.enabled=yes-please")
        self.assertNotEqual(refused.returncode, 0)
        self.assertIn("nodeStatus", refused.stderr)


class Validator(unittest.TestCase):
    """The `helm test` pod: it gets cards the way the release hands them out, runs the shim's
    validate role on them, and reaches nothing else."""

    def validator(self, *set_args):
        objects = render(*set_args)
        return objects.get(("Pod", "xpu-validator")), objects.get(("ResourceClaimTemplate", "xpu-validator"))

    def test_device_plugin_mode_asks_the_extended_resource(self):
        pod, claim = self.validator()
        self.assertIsNone(claim)
        self.assertEqual(pod["metadata"]["annotations"]["helm.sh/hook"], "test")
        container = pod["spec"]["containers"][0]
        self.assertEqual(container["args"], ["validate", "--expect-cards", "1"])
        self.assertEqual(container["resources"]["limits"]["kunlunxin.com/xpu"], "1")
        self.assertEqual(pod["spec"]["nodeSelector"], {"kunlun-device-enable": "enable"})

    def test_it_reaches_nothing_but_its_cards(self):
        pod, _ = self.validator()
        spec = pod["spec"]
        self.assertIs(spec["automountServiceAccountToken"], False)
        self.assertNotIn("volumes", spec)
        for key in ("hostNetwork", "hostPID", "hostIPC"):
            self.assertNotIn(key, spec)
        security = spec["containers"][0]["securityContext"]
        self.assertEqual((security["runAsUser"], security["runAsNonRoot"], security["privileged"],
                          security["allowPrivilegeEscalation"], security["capabilities"]["drop"]),
                         (65534, True, False, False, ["ALL"]))

    def test_the_binary_accepts_its_arguments(self):
        pod, _ = self.validator("validator.cards=4")
        args = pod["spec"]["containers"][0]["args"]
        self.assertEqual(args, ["validate", "--expect-cards", "4"])
        result = subprocess.run([SHIM, *args, "--help"], capture_output=True, text=True, timeout=30)
        self.assertEqual(result.returncode, 0, result.stderr)

    def test_dra_mode_asks_a_claim_of_the_class(self):
        pod, claim = self.validator("allocation=dra", "validator.cards=2")
        request = claim["spec"]["spec"]["devices"]["requests"][0]
        self.assertEqual(request["exactly"], {"deviceClassName": "xpu.kunlunxin.com", "count": 2})
        self.assertEqual(pod["spec"]["resourceClaims"],
                         [{"name": "xpu", "resourceClaimTemplateName": "xpu-validator"}])
        resources = pod["spec"]["containers"][0]["resources"]
        self.assertEqual(resources["claims"], [{"name": "xpu"}])
        self.assertNotIn("kunlunxin.com/xpu", resources["limits"])
        # The template first, then the pod that names it.
        self.assertLess(int(claim["metadata"]["annotations"]["helm.sh/hook-weight"]), 0)

    def test_at_install_runs_it_after_install_and_upgrade_too(self):
        pod, _ = self.validator("validator.atInstall=true")
        self.assertEqual(pod["metadata"]["annotations"]["helm.sh/hook"], "test,post-install,post-upgrade")

    def test_the_resource_follows_the_device_plugins_name(self):
        pod, _ = self.validator("devicePlugin.customizedResourceName=example.com/xpu")
        self.assertEqual(pod["spec"]["containers"][0]["resources"]["limits"]["example.com/xpu"], "1")
        pod, _ = self.validator("devicePlugin.useDetailResName=true")
        self.assertIsNone(pod, "per-model names: no one resource to ask without validator.resourceName")
        pod, _ = self.validator("devicePlugin.useDetailResName=true", "validator.resourceName=kunlunxin.com/R200")
        self.assertEqual(pod["spec"]["containers"][0]["resources"]["limits"]["kunlunxin.com/R200"], "1")

    def test_bad_values_are_refused(self):
        for value in ("validator.cards=0", "validator.cards=257", "validator.unknown=1"):
            self.assertNotEqual(run_helm("template", "rel", CHART, "--set", value).returncode, 0, value)


DRA_DRIVER = "xpu-dra-driver"
# In every allocation mode (rbac-dra-driver.yaml says why).
DRA_DRIVER_ACCOUNT_OBJECTS = {(kind, DRA_DRIVER) for kind in (
    "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")} | {
    (kind, f"{DRA_DRIVER}-{policy}") for kind in ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
    for policy in ("own-node", "own-claim-status")}
DRA_PLUGIN_DIR = "/var/lib/kubelet/plugins/xpu.kunlunxin.com"


class Allocation(unittest.TestCase):
    """allocation: devicePlugin (the default, the seed's objects only), dra (the DRA driver, its
    DeviceClass and its narrow RBAC instead of the device plugin), both (on disjoint nodes)."""

    def test_device_plugin_by_default_and_no_dra_object(self):
        for objects in (render(), render("allocation=devicePlugin")):
            self.assertIn(("DaemonSet", DEVICE_PLUGIN), objects)
            # But the DRA driver's account, rights and policies, which a driver leaving as the
            # chart switches here drains and releases its ready label with.
            self.assertEqual({key for key in objects if "dra" in key[1] or key[0] == "DeviceClass"},
                             DRA_DRIVER_ACCOUNT_OBJECTS)
            # Only its own pods' tokens carry them: no pod of this mode runs under the account.
            self.assertFalse([key for key, obj in objects.items() if key[0] == "DaemonSet" and
                              obj["spec"]["template"]["spec"].get("serviceAccountName") == DRA_DRIVER])

    def test_dra_replaces_the_device_plugin(self):
        objects = render("allocation=dra")
        self.assertNotIn(("DaemonSet", DEVICE_PLUGIN), objects)
        # Not even the replaced chart's rules bring the device plugin's role back without its pods.
        self.assertNotIn(("ClusterRole", "xpu-device-plugin"), render("allocation=dra", "rbac.compat=true"))
        self.assertIn(("DaemonSet", EXPORTER), objects)
        self.assertIn(("DaemonSet", TOKEN_GEN), objects)
        device_class = objects[("DeviceClass", "xpu.kunlunxin.com")]
        self.assertEqual(device_class["apiVersion"], "resource.k8s.io/v1")
        expression = device_class["spec"]["selectors"][0]["cel"]["expression"]
        self.assertIn('device.driver == "xpu.kunlunxin.com"', expression)
        self.assertIn('device.attributes["xpu.kunlunxin.com"].healthy', expression)
        self.assertIn('!has(device.attributes["xpu.kunlunxin.com"].physicalFunction)', expression)
        # Virtual functions have a class of their own, and the device plugin's resource for them.
        vf_class = objects[("DeviceClass", "vxpu.kunlunxin.com")]["spec"]
        self.assertEqual(vf_class["extendedResourceName"], "kunlunxin.com/vxpu")
        self.assertIn('&& has(device.attributes["xpu.kunlunxin.com"].physicalFunction)',
                      vf_class["selectors"][0]["cel"]["expression"])
        # The replaced add-on's pods (limits: kunlunxin.com/xpu) are served by DRA too.
        self.assertEqual(device_class["spec"]["extendedResourceName"], "kunlunxin.com/xpu")
        renamed = render("allocation=dra", "devicePlugin.customizedResourceName=example.com/card")
        self.assertEqual(renamed[("DeviceClass", "xpu.kunlunxin.com")]["spec"]["extendedResourceName"],
                         "example.com/card")
        self.assertEqual(renamed[("DeviceClass", "vxpu.kunlunxin.com")]["spec"]["extendedResourceName"],
                         "example.com/vxpu")
        # Functions on vfio-pci (for virtual machines) have a class of their own, which no
        # compute class overlaps: only they carry the attribute vfio (slice_content.h).
        vfio_class = objects[("DeviceClass", "vfio.xpu.kunlunxin.com")]["spec"]
        self.assertEqual(vfio_class["extendedResourceName"], "kunlunxin.com/xpu_vfio")
        self.assertEqual(vfio_class["selectors"][0]["cel"]["expression"],
                         'device.driver == "xpu.kunlunxin.com" && '
                         'has(device.attributes["xpu.kunlunxin.com"].vfio) && '
                         'device.attributes["xpu.kunlunxin.com"].vfio')
        for name in ("xpu.kunlunxin.com", "vxpu.kunlunxin.com"):
            self.assertIn('&& !has(device.attributes["xpu.kunlunxin.com"].vfio)',
                          objects[("DeviceClass", name)]["spec"]["selectors"][0]["cel"]["expression"],
                          name)
        self.assertEqual(renamed[("DeviceClass", "vfio.xpu.kunlunxin.com")]["spec"]["extendedResourceName"],
                         "example.com/xpu_vfio")
        spec = pod_spec(objects, DRA_DRIVER)
        self.assertEqual(spec["serviceAccountName"], DRA_DRIVER)
        self.assertEqual(spec["nodeSelector"], {"kunlun-device-enable": "enable"})
        args = args_of(objects, DRA_DRIVER)
        self.assertEqual(args[:3], XPUD_API_ARGS + ["dra-driver"])
        self.assertEqual(option_value(args, "--node-name"), "$(NODE_NAME)")
        env = container(objects, DRA_DRIVER)["env"]
        self.assertEqual(env, [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}])

    def test_dra_driver_gets_the_device_plugins_resource_name(self):
        # It leaves out of its slice the cards pods hold through resources in that name's domain.
        self.assertIsNone(option_value(args_of(render("allocation=dra"), DRA_DRIVER), "--resource-name"))
        objects = render("allocation=both", "dra.nodeSelector.kunlunxin\\.com/allocation=dra",
                         "devicePlugin.customizedResourceName=example.com/card")
        self.assertEqual(option_value(args_of(objects, DRA_DRIVER), "--resource-name"), "example.com/card")
        self.assertEqual(option_value(args_of(objects, DEVICE_PLUGIN), "--resource-name"), "example.com/card")

    def test_dra_driver_gets_its_sockets_and_the_cdi_directory_only(self):
        spec = pod_spec(render("allocation=dra"), DRA_DRIVER)
        self.assertFalse(spec.get("hostPID") or spec.get("hostNetwork") or spec.get("hostIPC"))
        host_paths = {v["hostPath"]["path"]: v["hostPath"]["type"] for v in spec["volumes"]}
        self.assertEqual(host_paths, {XPUD_API_DIR: "Directory",
                                      "/var/lib/kubelet/plugins_registry": "Directory",
                                      DRA_PLUGIN_DIR: "DirectoryOrCreate",
                                      "/var/run/cdi": "DirectoryOrCreate",
                                      POD_RESOURCES_DIR: "Directory"})
        by_volume = {v["name"]: v["hostPath"]["path"] for v in spec["volumes"]}
        for mount in spec["containers"][0]["volumeMounts"]:
            self.assertEqual(mount["mountPath"], by_volume[mount["name"]])
            if by_volume[mount["name"]] in (XPUD_API_DIR, POD_RESOURCES_DIR):
                self.assertIs(mount["readOnly"], True, mount)
        sc = spec["containers"][0]["securityContext"]
        self.assertEqual(sc["capabilities"], {"drop": ["ALL"]})
        self.assertIs(sc["allowPrivilegeEscalation"], False)
        self.assertIs(sc["readOnlyRootFilesystem"], True)
        self.assertFalse(sc.get("privileged", False))

    def test_dra_rbac_is_what_the_driver_calls(self):
        objects = render("allocation=dra", "rbac.compat=true")
        rules = objects[("ClusterRole", DRA_DRIVER)]["rules"]
        self.assertEqual(normalized_rules(rules), normalized_rules([
            {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"], "verbs": ["get", "list"]},
            {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims/status"], "verbs": ["patch"]},
            {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims/driver"],
             "resourceNames": ["xpu.kunlunxin.com"], "verbs": ["associated-node:patch"]},
            {"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"],
             "verbs": ["list", "create", "update", "delete"]},
            {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]))
        # Asked when it stops with claims prepared: its own DaemonSet, by name, read-only.
        self.assertEqual(normalized_rules(objects[("Role", DRA_DRIVER)]["rules"]), normalized_rules([
            {"apiGroups": ["apps"], "resources": ["daemonsets"], "resourceNames": [DRA_DRIVER],
             "verbs": ["get"]}]))
        self.assertEqual(objects[("RoleBinding", DRA_DRIVER)]["subjects"],
                         [{"kind": "ServiceAccount", "name": DRA_DRIVER, "namespace": NAMESPACE}])
        pod = objects[("DaemonSet", DRA_DRIVER)]["spec"]["template"]["spec"]
        self.assertEqual(pod["terminationGracePeriodSeconds"], 86400)
        args = pod["containers"][0]["args"]
        self.assertEqual(args[args.index("--daemon-set") + 1], f"{NAMESPACE}/{DRA_DRIVER}")
        binding = objects[("ClusterRoleBinding", DRA_DRIVER)]
        self.assertEqual(binding["subjects"], [{"kind": "ServiceAccount", "name": DRA_DRIVER,
                                                "namespace": NAMESPACE}])
        policy = objects[("ValidatingAdmissionPolicy", "xpu-dra-driver-own-node")]
        self.assertEqual(policy["spec"]["matchConditions"][0]["expression"],
                         f'request.userInfo.username == "system:serviceaccount:{NAMESPACE}:{DRA_DRIVER}"')
        self.assertEqual(objects[("ValidatingAdmissionPolicyBinding", "xpu-dra-driver-own-node")]["spec"],
                         {"policyName": "xpu-dra-driver-own-node", "validationActions": ["Deny"]})

    def driver_policy(self, name):
        """The policy `name` of the DRA driver, after checking that it binds with Deny, fails
        closed and matches only the driver's own service account."""
        objects = render("allocation=dra")
        self.assertEqual(objects[("ValidatingAdmissionPolicyBinding", name)]["spec"],
                         {"policyName": name, "validationActions": ["Deny"]})
        spec = objects[("ValidatingAdmissionPolicy", name)]["spec"]
        self.assertEqual(spec["failurePolicy"], "Fail")
        self.assertEqual([c["expression"] for c in spec["matchConditions"]],
                         [f'request.userInfo.username == "system:serviceaccount:{NAMESPACE}:{DRA_DRIVER}"'])
        variables = {v["name"]: " ".join(v["expression"].split()) for v in spec["variables"]}
        # The node the token is bound to, as the API server sets it for a pod-bound token.
        self.assertEqual(variables["tokenNode"],
                         "request.userInfo.extra[?'authentication.kubernetes.io/node-name'][0].orValue('')")
        self.assertEqual(spec["validations"][0],
                         {"expression": 'variables.tokenNode != ""',
                          "message": "the token of xpu-dra-driver is not bound to a pod on a node"})
        return spec, variables

    def test_slice_policy_pins_node_pool_and_driver(self):
        spec, variables = self.driver_policy("xpu-dra-driver-own-node")
        self.assertEqual(spec["matchConstraints"]["resourceRules"],
                         [{"apiGroups": ["resource.k8s.io"], "apiVersions": ["*"],
                           "operations": ["CREATE", "UPDATE", "DELETE"], "resources": ["resourceslices"]}])
        # An update checks the slice it replaces as well as the one it writes.
        self.assertEqual(variables["slices"], 'request.operation == "DELETE" ? [oldObject] : '
                         'request.operation == "UPDATE" ? [oldObject, object] : [object]')
        # The driver names its pool after its node (k8s-shim/dra/slices/slice_content.cpp).
        self.assertEqual([v["expression"] for v in spec["validations"][1:]], [
            'variables.slices.all(s, s.spec.?nodeName.orValue("") == variables.tokenNode)',
            "variables.slices.all(s, s.spec.pool.name == variables.tokenNode)",
            'variables.slices.all(s, s.spec.driver == "xpu.kunlunxin.com")'])
        self.assertIn('" may write only ResourceSlices of the pool " + variables.tokenNode',
                      " ".join(spec["validations"][2]["messageExpression"].split()))

    def test_claim_status_policy_keeps_the_driver_to_its_entries(self):
        spec, variables = self.driver_policy("xpu-dra-driver-own-claim-status")
        # Only the status subresource, which is all RBAC lets the driver write of a claim.
        self.assertEqual(spec["matchConstraints"]["resourceRules"],
                         [{"apiGroups": ["resource.k8s.io"], "apiVersions": ["*"],
                           "operations": ["UPDATE"], "resources": ["resourceclaims/status"]}])
        mine = '!(e.driver == "xpu.kunlunxin.com" && e.pool == variables.tokenNode)'
        self.assertEqual(variables["othersBefore"], f"oldObject.?status.?devices.orValue([]).filter(e, {mine})")
        self.assertEqual(variables["othersAfter"], f"object.?status.?devices.orValue([]).filter(e, {mine})")
        expressions = [" ".join(v["expression"].split()) for v in spec["validations"][1:]]
        self.assertEqual(expressions, [
            # Every other entry as it was: none added, changed or removed, in any order.
            "variables.othersAfter.size() == variables.othersBefore.size() && "
            "variables.othersAfter.all(e, e in variables.othersBefore)",
            # The scheduler's and the claim controller's fields untouched.
            "object.?status.?allocation == oldObject.?status.?allocation && "
            "object.?status.?reservedFor == oldObject.?status.?reservedFor"])
        self.assertIn("may write only the status.devices entries of driver xpu.kunlunxin.com in the pool",
                      " ".join(spec["validations"][1]["messageExpression"].split()))

    def test_policies_follow_the_release_namespace(self):
        result = run_helm("template", "rel", CHART, "--namespace", "xpu-system", "--set", "allocation=dra")
        self.assertEqual(result.returncode, 0, result.stderr)
        policies = [d for d in yaml.safe_load_all(result.stdout)
                    if d and d["kind"] == "ValidatingAdmissionPolicy"
                    and d["metadata"]["name"].startswith("xpu-dra-driver")]
        self.assertEqual(sorted(p["metadata"]["name"] for p in policies),
                         ["xpu-dra-driver-own-claim-status", "xpu-dra-driver-own-node"])
        for policy in policies:
            self.assertEqual(policy["spec"]["matchConditions"][0]["expression"],
                             'request.userInfo.username == "system:serviceaccount:xpu-system:xpu-dra-driver"')

    def test_unhealthy_cards_are_tainted_and_the_class_filters_where_taints_do_not(self):
        def expression(*set_args, kube_version):
            objects = render("allocation=dra", *set_args, kube_version=kube_version)
            return objects[("DeviceClass", "xpu.kunlunxin.com")]["spec"]["selectors"][0]["cel"]["expression"]
        healthy = 'device.attributes["xpu.kunlunxin.com"].healthy'
        # Device taints are on from 1.36: NoSchedule does what the filter did, and lets a claim
        # that tolerates the taint reach the card.
        self.assertNotIn(healthy, expression(kube_version="1.37.2"))
        self.assertNotIn(healthy, expression(kube_version="1.36.3"))
        self.assertIn(healthy, expression(kube_version="1.35.4"))
        self.assertIn(healthy, expression("dra.deviceTaints.effect=None", kube_version="1.37.2"))
        args = args_of(render("allocation=dra"), DRA_DRIVER)
        self.assertEqual(option_value(args, "--device-taint-effect"), "NoSchedule")
        self.assertIsNone(option_value(args, "--device-taint-no-execute"))
        args = args_of(render("allocation=dra", "dra.deviceTaints.noExecute={driver_fault,xpud_unreachable}"),
                       DRA_DRIVER)
        self.assertEqual(option_value(args, "--device-taint-no-execute"), "driver_fault,xpud_unreachable")
        # xpud's release check has a kind of its own (issue 40).
        args = args_of(render("allocation=dra", "dra.deviceTaints.noExecute={memory_not_released}"),
                       DRA_DRIVER)
        self.assertEqual(option_value(args, "--device-taint-no-execute"), "memory_not_released")
        for bad in ("dra.deviceTaints.effect=NoExecute", "dra.deviceTaints.noExecute={melted}"):
            result = render_failure("allocation=dra", bad)
            self.assertNotEqual(result.returncode, 0, bad)
            self.assertIn("deviceTaints", result.stderr, bad)

    def test_memory_shares_add_a_class_and_keep_the_whole_card_class_off_shares(self):
        def classes(*set_args):
            objects = render("allocation=dra", *set_args, kube_version="1.37.2")
            return {name: obj["spec"]["selectors"][0]["cel"]["expression"]
                    for (kind, name), obj in objects.items() if kind == "DeviceClass"}, objects
        off, objects = classes()
        self.assertEqual(sorted(off), ["vfio.xpu.kunlunxin.com", "vxpu.kunlunxin.com", "xpu.kunlunxin.com"])
        self.assertNotIn("allowMultipleAllocations", off["xpu.kunlunxin.com"])
        self.assertIsNone(option_value(args_of(objects, DRA_DRIVER), "--share-memory-minimum"))
        self.assertNotIn("--memory-shares", args_of(objects, DRA_DRIVER))

        on, objects = classes("dra.sharing.enabled=true", "dra.sharing.memory.minimum=2Gi",
                              "dra.sharing.memory.step=512Mi", "dra.sharing.memory.default=4Gi")
        self.assertEqual(sorted(on), ["vfio.xpu.kunlunxin.com", "vxpu.kunlunxin.com",
                                      "xpu-share.kunlunxin.com", "xpu.kunlunxin.com"])
        self.assertIn("!device.allowMultipleAllocations", on["xpu.kunlunxin.com"])
        self.assertEqual(on["xpu-share.kunlunxin.com"],
                         'device.driver == "xpu.kunlunxin.com" && device.allowMultipleAllocations && '
                         '!has(device.attributes["xpu.kunlunxin.com"].vfio)')
        args = args_of(objects, DRA_DRIVER)
        self.assertIn("--memory-shares", args)
        self.assertEqual(option_value(args, "--share-memory-minimum"), "2Gi")
        self.assertEqual(option_value(args, "--share-memory-step"), "512Mi")
        self.assertEqual(option_value(args, "--share-memory-default"), "4Gi")
        self.assertEqual(option_value(args, "--share-enforcement"), "xpud")
        _, objects = classes("dra.sharing.enabled=true", "dra.sharing.enforcement=runtime")
        self.assertEqual(option_value(args_of(objects, DRA_DRIVER), "--share-enforcement"), "runtime")
        # The extended resource stays the whole card's.
        self.assertNotIn("extendedResourceName",
                         objects[("DeviceClass", "xpu-share.kunlunxin.com")]["spec"])

    def test_memory_shares_are_refused_before_kubernetes_1_36_and_with_bad_amounts(self):
        result = subprocess.run([HELM, "template", "rel", CHART, "--kube-version", "1.35.4",
                                 "--set", "allocation=dra", "--set", "dra.sharing.enabled=true"],
                                capture_output=True, text=True, timeout=120)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("dra.sharing.enabled needs Kubernetes 1.36 or later", result.stderr)
        for bad in ("dra.sharing.memory.step=0.5Gi", "dra.sharing.memory.minimum=0",
                    "dra.sharing.memory.default=lots", "dra.sharing.memory.maximum=8Gi",
                    "dra.sharing.enforcement=nobody"):
            result = render_failure("allocation=dra", bad)
            self.assertNotEqual(result.returncode, 0, bad)
            self.assertIn("/dra/sharing", result.stderr, bad)

    @unittest.skipUnless(SHIM, "xpu-k8s-shim is not built (XPU_BUILD_SHIM=OFF)")
    def test_the_shim_accepts_the_share_arguments_and_refuses_an_off_step_default(self):
        def run(*set_args, extra=()):
            objects = render("allocation=dra", "dra.sharing.enabled=true", *set_args,
                             kube_version="1.37.2")
            args = [a.replace("$(NODE_NAME)", "node-1") for a in args_of(objects, DRA_DRIVER)]
            return subprocess.run([SHIM, *args, *extra], capture_output=True, text=True, timeout=30)
        accepted = run(extra=["--help"])
        self.assertEqual(accepted.returncode, 0, accepted.stderr)
        # --help skips the checks across flags; without it they run before anything is reached.
        off_step = run("dra.sharing.memory.step=2Gi", "dra.sharing.memory.default=2Gi")
        self.assertEqual(off_step.returncode, 2)
        self.assertIn("--share-memory-default", off_step.stderr)

    def test_both_without_disjoint_nodes_is_refused(self):
        result = render_failure("allocation=both")
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("allocation=both would hand every card out twice", result.stderr)
        self.assertIn("dra.nodeSelector", result.stderr)

    def test_both_splits_the_nodes(self):
        objects = render("allocation=both", "dra.nodeSelector.kunlunxin\\.com/allocation=dra")
        dra = pod_spec(objects, DRA_DRIVER)
        self.assertEqual(dra["nodeSelector"], {"kunlun-device-enable": "enable",
                                               "kunlunxin.com/allocation": "dra"})
        plugin = pod_spec(objects, DEVICE_PLUGIN)
        self.assertEqual(plugin["nodeSelector"], {"kunlun-device-enable": "enable"})
        terms = plugin["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        self.assertEqual(terms["nodeSelectorTerms"], [{"matchExpressions": [
            {"key": "kunlunxin.com/allocation", "operator": "NotIn", "values": ["dra"]}]}])

    def test_another_mode_is_refused_naming_the_key(self):
        result = render_failure("allocation=deviceplugin")
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("allocation", result.stderr)

    @unittest.skipUnless(SHIM, "xpu-k8s-shim is not built (XPU_BUILD_SHIM=OFF)")
    def test_the_shim_accepts_the_dra_drivers_arguments(self):
        # As the kubelet runs them: $(NODE_NAME) expanded from the pod's env.
        objects = render("allocation=dra", "dra.deviceTaints.noExecute={driver_fault,xpud_unreachable}")
        args = [a.replace("$(NODE_NAME)", "node-1") for a in args_of(objects, DRA_DRIVER)]
        result = subprocess.run([SHIM, *args, "--help"], capture_output=True, text=True, timeout=30)
        self.assertEqual(result.returncode, 0, f"{args}: {result.stderr}")


class HamiCompat(unittest.TestCase):
    """hami.compat: the admission policies that rewrite HAMi's Kunlunxin vXPU requests onto the
    device plugin's memory shares (their CEL runs in the real-node suite's scenario 28)."""

    MAP_V1 = "admissionregistration.k8s.io/v1/MutatingAdmissionPolicy"
    MAP_V1BETA1 = "admissionregistration.k8s.io/v1beta1/MutatingAdmissionPolicy"
    SHARES = ("devicePlugin.enableXpuShare=true", "devicePlugin.xpuShareMemoryUnitMiB=1024")
    NAME = "xpu-hami-compat"

    def render(self, *set_args, api_versions=(MAP_V1,)):
        return render("hami.compat=true", *self.SHARES, *set_args, api_versions=api_versions)

    def failure(self, *set_args, api_versions=(MAP_V1,)):
        args = ["template", "rel", CHART, "--namespace", NAMESPACE]
        for item in set_args:
            args += ["--set", item]
        for api in api_versions:
            args += ["--api-versions", api]
        result = run_helm(*args)
        self.assertNotEqual(result.returncode, 0, set_args)
        return result.stderr

    def expression(self, objects, kind, variable):
        policy = objects[(kind, self.NAME)]
        return next(v["expression"] for v in policy["spec"]["variables"] if v["name"] == variable)

    def test_off_by_default(self):
        for objects in (render(api_versions=(self.MAP_V1,)), render(*self.SHARES, api_versions=(self.MAP_V1,))):
            self.assertFalse([key for key in objects if key[1] == self.NAME])

    def test_four_cluster_objects_and_no_rights(self):
        objects = self.render()
        plain = render(*self.SHARES, api_versions=(self.MAP_V1,))
        added = set(objects) - set(plain)
        self.assertEqual(added, {(kind, self.NAME) for kind in (
            "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding",
            "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")})
        # No webhook, no account, no role: the API server runs the CEL.
        self.assertEqual(set(plain) - set(objects), set())
        for key in added:
            self.assertNotIn("namespace", objects[key]["metadata"], key)
        mutating = objects[("MutatingAdmissionPolicy", self.NAME)]
        self.assertEqual(mutating["apiVersion"], "admissionregistration.k8s.io/v1")
        for kind in ("MutatingAdmissionPolicy", "ValidatingAdmissionPolicy"):
            spec = objects[(kind, self.NAME)]["spec"]
            self.assertEqual(spec["failurePolicy"], "Fail", kind)
            self.assertEqual(spec["matchConstraints"]["resourceRules"],
                             [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                               "resources": ["pods"]}], kind)
        self.assertEqual(mutating["spec"]["reinvocationPolicy"], "IfNeeded")
        self.assertEqual([m["patchType"] for m in mutating["spec"]["mutations"]], ["JSONPatch"])
        self.assertEqual(objects[("MutatingAdmissionPolicyBinding", self.NAME)]["spec"], {"policyName": self.NAME})
        self.assertEqual(objects[("ValidatingAdmissionPolicyBinding", self.NAME)]["spec"],
                         {"policyName": self.NAME, "validationActions": ["Deny"]})

    def test_both_policies_judge_with_the_same_cel(self):
        objects = self.render()
        for variable in ("podProblem", "requests", "verdicts"):
            self.assertEqual(self.expression(objects, "MutatingAdmissionPolicy", variable),
                             self.expression(objects, "ValidatingAdmissionPolicy", variable), variable)
        verdicts = self.expression(objects, "ValidatingAdmissionPolicy", "verdicts")
        # Every asInteger() is behind isQuantity and isInteger, so that no number fails with a CEL error.
        self.assertIn("!(isQuantity(r.count) && quantity(r.count).isInteger()) ||", verdicts)
        self.assertIn("!(isQuantity(r.memory) && quantity(r.memory).isInteger()) ||", verdicts)
        self.assertIn("from 1 to 98304 (a whole card)", verdicts)

    def test_units_follow_hamis_rounding(self):
        cases = {
            # (unit MiB, card MiB, steps): the units of each step and of the whole card
            ("1024", None, None): ["<= 24576 ? 24 :", "<= 49152 ? 48 :", "== '' ? 96 :"],
            ("2048", None, None): ["<= 24576 ? 12 :", "<= 49152 ? 24 :", "== '' ? 48 :"],
            # The sim's 32 GiB card: the half-card step lies above it and is left out.
            ("1024", "32768", None): ["<= 24576 ? 24 :", "== '' ? 32 :"],
            # A unit that does not divide a step: rounded up, and never above the whole card.
            ("1000", "32768", "{1000,32001}"): ["<= 1000 ? 1 :", "<= 32001 ? 32 :", "== '' ? 32 :"],
        }
        for (unit, card, steps), fragments in cases.items():
            values = [f"devicePlugin.xpuShareMemoryUnitMiB={unit}"]
            if card:
                values.append(f"hami.cardMemoryMiB={card}")
            if steps:
                values.append(f"hami.memoryStepsMiB={steps}")
            units = self.expression(self.render(*values), "MutatingAdmissionPolicy", "units")
            for fragment in fragments:
                self.assertIn(fragment, units, (unit, card, steps))
            if card == "32768" and not steps:
                self.assertNotIn("49152", units)
        # Without steps: the MiB rounded up to whole units, at most the whole card.
        units = self.expression(self.render("hami.memoryStepsMiB=null"), "MutatingAdmissionPolicy", "units")
        self.assertIn("(quantity(variables.requests[j].memory).asInteger() + 1023) / 1024 > 96 ? 96 :", units)

    def test_the_device_plugins_domain(self):
        objects = self.render("devicePlugin.customizedResourceName=example.com/xpu")
        patch = objects[("MutatingAdmissionPolicy", self.NAME)]["spec"]["mutations"][0]["jsonPatch"]["expression"]
        self.assertIn("/resources/limits/example.com~1vxpu-memory'", patch)
        # HAMi's memory name is then removed rather than replaced in place.
        self.assertIn("'remove', path: r.path + '/resources/limits/kunlunxin.com~1vxpu-memory'", patch)
        validating = objects[("ValidatingAdmissionPolicy", self.NAME)]["spec"]
        self.assertNotIn("countless", [v["name"] for v in validating["variables"]])
        same = self.render()[("MutatingAdmissionPolicy", self.NAME)]["spec"]["mutations"][0]["jsonPatch"]
        self.assertNotIn("'remove', path: r.path + '/resources/limits/kunlunxin.com~1vxpu-memory'", same["expression"])
        # SR-IOV's <domain>/vxpu no longer collides with HAMi's kunlunxin.com/vxpu.
        self.render("devicePlugin.customizedResourceName=example.com/xpu", "devicePlugin.enableSriov=true")

    def test_v1beta1_where_only_the_beta_api_serves(self):
        objects = self.render(api_versions=(self.MAP_V1BETA1,))
        for kind in ("MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"):
            self.assertEqual(objects[(kind, self.NAME)]["apiVersion"], "admissionregistration.k8s.io/v1beta1", kind)
        for kind in ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"):
            self.assertEqual(objects[(kind, self.NAME)]["apiVersion"], "admissionregistration.k8s.io/v1", kind)

    def test_refused_where_no_mutating_policy_serves(self):
        error = self.failure("hami.compat=true", *self.SHARES, api_versions=())
        self.assertIn("hami.compat rewrites HAMi's requests with a MutatingAdmissionPolicy", error)
        self.assertIn("--feature-gates=MutatingAdmissionPolicy=true "
                      "--runtime-config=admissionregistration.k8s.io/v1beta1=true", error)

    def test_refused_combinations_name_what_to_change(self):
        cases = [
            ((), "set devicePlugin.enableXpuShare=true and devicePlugin.xpuShareMemoryUnitMiB"),
            (("devicePlugin.enableXpuShare=true",), "devicePlugin.xpuShareMemoryUnitMiB"),
            ((*self.SHARES, "allocation=dra"), "allocation=dra runs no device plugin"),
            ((*self.SHARES, "devicePlugin.useDetailResName=true"), "devicePlugin.useDetailResName"),
            ((*self.SHARES, "devicePlugin.enableSriov=true"), "devicePlugin.enableSriov advertises"),
            ((*self.SHARES, "devicePlugin.xpuShareMemoryUnitMiB=64"),
             "is 1536 units of devicePlugin.xpuShareMemoryUnitMiB (64), and the device plugin advertises "
             "at most 256 per card: raise xpuShareMemoryUnitMiB to at least 384"),
            ((*self.SHARES, "hami.cardMemoryMiB=512"), "less than one unit"),
            ((*self.SHARES, "hami.memoryStepsMiB={49152,24576}"), "ascending order"),
            ((*self.SHARES, "hami.memoryStepsMiB={1024,1024}"), "ascending order"),
        ]
        for values, wanted in cases:
            self.assertIn(wanted, self.failure("hami.compat=true", *values), values)

    def test_bad_values_are_refused_by_the_schema(self):
        for bad in ("hami.compat=yes", "hami.cardMemoryMiB=0", "hami.cardMemoryMiB=1.5",
                    "hami.memoryStepsMiB={0}", "hami.unknown=1"):
            self.assertIn("hami", self.failure(bad, *self.SHARES), bad)


class SeedValues(unittest.TestCase):
    """values.yaml keeps every key of the seed with the seed's default."""

    def test_seed_keys_and_defaults(self):
        with open(os.path.join(CHART, "values.yaml"), encoding="utf-8") as f:
            values = yaml.safe_load(f)

        def get(path):
            node = values
            for part in path.split("."):
                self.assertIn(part, node, path)
                node = node[part]
            return node

        seed = {
            "global.image.host": "ccr.ccs.tencentyun.com",
            "config.exporterPort": 9507,
            "config.logVerbose": 5,
            "config.memoryUnit": "MiB",
            "config.logLevel": "info",
            "images.devicePlugin.tag": "v5.0.2-alpha.3",
            "images.exporter.tag": "v5.0.3-alpha.6",
            "images.rbacTokenGen.tag": "v1.0.0",
            "exporter.goMemLimit": "800MiB",
            "exporter.resources.requests.cpu": "100m",
            "exporter.resources.requests.memory": "100Mi",
            "exporter.resources.limits.cpu": "1000m",
            "exporter.resources.limits.memory": "1Gi",
            "nodeSelector": {"kunlun-device-enable": "enable"},
            "devicePlugin.enableSriov": False,
            "devicePlugin.sriovNumVfs": 0,
            "devicePlugin.reconfigVxpu": False,
            "devicePlugin.enableXpuShare": False,
            "devicePlugin.useDetailResName": False,
            "devicePlugin.customizedResourceName": "",
        }
        for path, default in seed.items():
            self.assertEqual(get(path), default, path)
        self.assertIsInstance(get("tolerations"), list)


if __name__ == "__main__":
    unittest.main(verbosity=2)
