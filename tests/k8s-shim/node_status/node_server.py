#!/usr/bin/env python3
"""A plain-HTTP stand-in for the API server's Node endpoints, for node_status_process_test: one
Node (argv[2]) with the kubelet's Ready condition; GET /api/v1/nodes/NAME, and server-side apply
(PATCH, application/apply-patch+yaml) of status.conditions (a map list keyed by type: entries of
the applied types replaced, the others kept) and of metadata.labels (a label applied is owned by
the fieldManager; one a manager applied before and now leaves out is removed when no other
manager owns it), as kube-apiserver does for these fields; anything else is 404 or 405. After each
request the Node is written to argv[1]/node.json and the request appended to
argv[1]/requests.jsonl. Writes its port to argv[1]/port once listening; exits when its parent
dies."""
import http.server
import json
import os
import sys
import threading
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from loopback_http import serve  # noqa: E402

OUT = sys.argv[1]
NAME = sys.argv[2]
node = {"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": NAME, "labels": {"kubernetes.io/hostname": NAME}},
        "spec": {},
        "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                   "lastHeartbeatTime": "2026-12-06T10:00:00Z",
                                   "lastTransitionTime": "2026-12-06T09:00:00Z"}]}}
owners = {}
lock = threading.Lock()


def save(request):
    with open(os.path.join(OUT, "node.json.tmp"), "w") as f:
        json.dump(node, f)
    os.rename(os.path.join(OUT, "node.json.tmp"), os.path.join(OUT, "node.json"))
    with open(os.path.join(OUT, "requests.jsonl"), "a") as f:
        f.write(json.dumps(request) + "\n")


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def reply(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def status(self, code, reason):
        self.reply(code, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                          "reason": reason, "message": reason, "code": code})

    def handle_request(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode() if length else ""
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query)
        base = f"/api/v1/nodes/{NAME}"
        with lock:
            request = {"method": self.command, "path": url.path, "query": query,
                       "content_type": self.headers.get("Content-Type"), "body": body}
            if url.path not in (base, base + "/status"):
                self.status(404, "NotFound")
            elif self.command == "GET" and url.path == base:
                self.reply(200, node)
            elif self.command != "PATCH" or request["content_type"] != "application/apply-patch+yaml":
                self.status(405, "MethodNotAllowed")
            else:
                manager = query["fieldManager"][0]
                applied = json.loads(body)
                if url.path.endswith("/status"):
                    for entry in applied.get("status", {}).get("conditions", []):
                        kept = [c for c in node["status"]["conditions"] if c["type"] != entry["type"]]
                        node["status"]["conditions"] = kept + [entry]
                else:
                    labels = applied.get("metadata", {}).get("labels", {})
                    for key, managers in owners.items():
                        if manager in managers and key not in labels:
                            managers.discard(manager)
                            if not managers:
                                node["metadata"]["labels"].pop(key, None)
                    for key, value in labels.items():
                        node["metadata"]["labels"][key] = value
                        owners.setdefault(key, set()).add(manager)
                self.reply(200, node)
            save(request)

    do_GET = do_PATCH = do_PUT = do_POST = do_DELETE = handle_request

    def log_message(self, *args):
        pass


serve(Handler, os.path.join(OUT, "port"))
