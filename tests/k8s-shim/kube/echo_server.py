#!/usr/bin/env python3
"""A plain-HTTP server for curl_transport_test: answers every method with what it received
(method, path, the headers that matter, body) as JSON; /big answers more than 16 MiB, /redirect a
302, /slow after 5 s. Writes its port to argv[1] once listening; exits when its parent dies."""
import http.server
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from loopback_http import serve  # noqa: E402


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode() if length else ""
        if self.path == "/big":
            chunk = b"x" * (1 << 20)
            self.send_response(200)
            self.send_header("Content-Length", str(17 * len(chunk)))
            self.end_headers()
            try:
                for _ in range(17):
                    self.wfile.write(chunk)
            except (BrokenPipeError, ConnectionResetError):
                pass
            return
        if self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "/elsewhere")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if self.path == "/slow":
            time.sleep(5)
        seen = {
            "method": self.command,
            "path": self.path,
            "authorization": self.headers.get("Authorization"),
            "content_type": self.headers.get("Content-Type"),
            "accept": self.headers.get("Accept"),
            "body": body,
        }
        data = json.dumps(seen).encode()
        self.send_response(201 if self.command == "POST" else 200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = answer

    def log_message(self, *args):
        pass


serve(Handler, sys.argv[1])
