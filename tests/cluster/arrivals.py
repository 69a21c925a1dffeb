"""Pods of the replaced add-on's own spec (`limits: kunlunxin.com/xpu: 1`, no controller) arriving
one a second while the node changes how it hands out cards, each holding its card a few seconds.
What an operator must never see through a switch, and what this records to check it:

- a pod rejected at admission (`UnexpectedAdmissionError`, "no healthy devices present"): a bare
  pod stays Failed for good;
- a card held by two pods at once (the device plugin and the DRA driver each handing it out);
- a pod that cannot be deleted (its claim prepared by a DRA driver that went away).

A pod's card is what its container printed (XPU_VISIBLE_DEVICES); its time on the card is its
container's startedAt..finishedAt. Finished pods are read and deleted as they finish, so the node
holds only the pods in flight."""

import calendar
import json
import threading
import time

import images
from processes import wait_for

LABEL = "xpu-test"
LABEL_VALUE = "arrivals"
HOLD_SECONDS = 3
# The kubelet's record of what the device plugin gave each pod (read inside the node's namespace).
DEVICE_CHECKPOINT = "/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"


def checkpoint_devices():
    """{pod UID: sorted device IDs} from the kubelet's device checkpoint; {} when unreadable."""
    try:
        with open(DEVICE_CHECKPOINT, encoding="utf-8") as f:
            entries = json.load(f)["Data"].get("PodDeviceEntries") or []
    except (OSError, ValueError, KeyError):
        return {}
    devices = {}
    for entry in entries:
        for ids in entry["DeviceIDs"].values():
            devices.setdefault(entry["PodUID"], set()).update(ids)
    return {uid: sorted(ids) for uid, ids in devices.items()}


def arrival_manifest(name, resource):
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {LABEL: LABEL_VALUE}},
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1,
            "containers": [{
                "name": "main", "image": images.BUSYBOX, "imagePullPolicy": "Never",
                "command": ["sh", "-c", f"echo XPU_VISIBLE_DEVICES=$XPU_VISIBLE_DEVICES; sleep {HOLD_SECONDS}"],
                "resources": {"limits": {resource: "1"}},
            }],
        },
    }


def seconds(timestamp):
    """An API timestamp (RFC 3339, whole seconds, UTC) as seconds since the epoch."""
    return calendar.timegm(time.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ"))


class Arrivals:
    def __init__(self, node, resource):
        self.node = node
        self.resource = resource
        self.created = 0
        self.finished = {}  # name -> {"phase", "reason", "message", "card", "start", "end", "step", "ids"}
        self.device_ids = {}  # name -> the device IDs the kubelet's checkpoint gave it while it ran
        self.step = "start"
        self.failures = []  # what the threads themselves hit (a kubectl that failed)
        self._stop = threading.Event()  # no more arrivals
        self._closing = threading.Event()  # the collector ends too
        self._lock = threading.Lock()  # finished and failures: the collector writes, the scenario reads
        self._threads = []

    def __enter__(self):
        self._threads = [threading.Thread(target=self._create, daemon=True),
                         threading.Thread(target=self._collect, daemon=True)]
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._closing.set()
        for thread in self._threads:
            thread.join(timeout=120)

    def during(self, step):
        """Names the switch the pods arriving from now on meet, for the report."""
        self.step = step
        print(f"  [{time.strftime('%H:%M:%S')}] {step} ({self.created} pods so far)", flush=True)

    def stop_arriving(self):
        self._stop.set()
        self._threads[0].join(timeout=60)

    # ---- the two threads --------------------------------------------------------------------

    def _create(self):
        next_at = time.monotonic()
        while not self._stop.is_set():
            name = f"xpu-arrival-{self.created:03d}"
            manifest = arrival_manifest(name, self.resource)
            manifest["metadata"]["annotations"] = {"xpu-test/step": self.step}
            try:
                self.node.kubectl("create", "-f", "-", input_text=json.dumps(manifest))
                self.created += 1
            except Exception as error:  # recorded; the scenario fails on it
                with self._lock:
                    self.failures.append(f"creating {name}: {error}")
            next_at += 1.0
            # The arrival rate, not a wait for a condition.
            self._stop.wait(max(0.0, next_at - time.monotonic()))

    def _collect(self):
        while not self._closing.is_set():
            try:
                self.collect_once()
            except Exception as error:
                with self._lock:
                    self.failures.append(f"reading the pods: {error}")
            self._closing.wait(1)  # a polling interval

    def pods(self):
        return self.node.get_json("pods", "-n", "default", "-l", f"{LABEL}={LABEL_VALUE}")["items"]

    def in_flight(self):
        with self._lock:
            finished = set(self.finished)
        return [p for p in self.pods() if p["metadata"]["name"] not in finished]

    def collect_once(self):
        done = []
        checkpoint = checkpoint_devices()
        for pod in self.pods():
            name = pod["metadata"]["name"]
            phase = pod["status"].get("phase")
            ids = checkpoint.get(pod["metadata"]["uid"])
            with self._lock:
                seen = name in self.finished
                if ids and name not in self.device_ids:
                    self.device_ids[name] = ids
            if seen or phase not in ("Succeeded", "Failed"):
                continue
            record = {"phase": phase, "reason": pod["status"].get("reason", ""),
                      "message": pod["status"].get("message", ""), "card": None, "start": None,
                      "end": None, "step": pod["metadata"].get("annotations", {}).get("xpu-test/step"),
                      "node": pod["spec"].get("nodeName"), "claims": [
                          c.get("resourceClaimName") for c in pod["status"].get("resourceClaimStatuses") or []
                          if c.get("resourceClaimName")] or pod["status"].get("extendedResourceClaimStatus")}
            statuses = pod["status"].get("containerStatuses") or []
            terminated = statuses[0]["state"].get("terminated") if statuses else None
            if terminated and terminated.get("startedAt"):
                record["start"] = seconds(terminated["startedAt"])
                record["end"] = seconds(terminated["finishedAt"])
                log = self.node.kubectl("logs", "-n", "default", name, check=False).stdout
                for line in log.splitlines():
                    if line.startswith("XPU_VISIBLE_DEVICES="):
                        record["card"] = line.split("=", 1)[1].strip()
            with self._lock:
                self.finished[name] = record
            done.append(name)
        if done:
            self.node.kubectl("delete", "pod", "-n", "default", "--wait=false", *done, check=False)

    # ---- what the scenario asserts ----------------------------------------------------------

    def wait_all_finished(self, timeout):
        def all_finished():
            with self._lock:
                count = len(self.finished)
            return count >= self.created and not self.in_flight()
        wait_for(f"all {self.created} arrivals finished", all_finished, timeout)

    def records(self):
        with self._lock:
            return {name: dict(record, ids=self.device_ids.get(name)) for name, record in self.finished.items()}

    def describe(self, name):
        """One pod's record for a failure message: its step, card, seconds and how it got it."""
        record = self.records().get(name, {})
        how = f"claims {record.get('claims')}" if record.get("claims") else f"device plugin IDs {record.get('ids')}"
        return (f"{name} ({record.get('step')}): card {record.get('card')} from {record.get('start')} to "
                f"{record.get('end')}, {how}")

    def rejected(self):
        return {name: r for name, r in self.records().items() if r["phase"] != "Succeeded"}

    def cards_held_twice(self):
        """(card, pod, pod) for every two pods whose times on one card overlap. Timestamps are whole
        seconds, truncated: a pod that took the card after another left never starts in an earlier
        second than that one finished."""
        by_card = {}
        for name, record in self.records().items():
            if record["card"] and record["start"] is not None:
                by_card.setdefault(record["card"], []).append((record["start"], record["end"], name))
        overlaps = []
        for card, spans in by_card.items():
            spans.sort()
            latest_end, latest = spans[0][1], spans[0][2]
            for start, end, name in spans[1:]:
                if start < latest_end:
                    overlaps.append((card, latest, name))
                if end > latest_end:
                    latest_end, latest = end, name
        return overlaps

    def by_step(self):
        counts = {}
        for record in self.records().values():
            counts[record["step"]] = counts.get(record["step"], 0) + 1
        return counts
