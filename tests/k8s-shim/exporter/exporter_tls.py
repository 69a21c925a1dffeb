#!/usr/bin/env python3
"""The exporter's --web-config-file end to end (ctest label `e2e`).

Makes a CA, a server certificate and client certificates with openssl, a web config with
RequireAndVerifyClientCert and a bcrypt basic-auth user, and starts xpud (sim) and the exporter
on a private bus. Then, as a user would see it:
  - curl: no client certificate -> 403 on /metrics, 200 on /healthz (the kubelet's probe);
    a certificate from another CA -> 403; no password -> 401 with WWW-Authenticate; wrong
    password -> 401; the right one -> 200 with the cards; plain HTTP -> no answer;
  - with no min_version in the web config, TLS 1.0 and 1.1 handshakes are refused, 1.2 and 1.3
    served (exporter-toolkit's floor);
  - the web config and the server certificate rewritten (renamed into place, as Kubernetes
    does): the new password and the new certificate are served within seconds, no restart;
    a broken edit is logged and the last good config keeps serving;
  - Debian's Prometheus (/usr/bin/prometheus, run on a temporary folder) scrapes over TLS with a
    client certificate and basic auth and stores the 8 cards' series.
Ends with 'N passed, M failed'; exits 1 on any failure.

Usage: exporter_tls.py [BUILD_DIR]; XPUD_BIN, XPU_K8S_SHIM_BIN and PROMETHEUS_BIN override.
"""

import ctypes
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../support"))
from exporter_hostile import SHIM, SetupError, start_stack  # noqa: E402
from hostile_checks import Process, check, finish, print_logs_if_failed, wait_until  # noqa: E402

PROMETHEUS = os.environ.get("PROMETHEUS_BIN", shutil.which("prometheus") or "/usr/bin/prometheus")
RELOAD_WITHIN_S = 12  # the exporter checks the files every 5 s


def bcrypt(password):
    libcrypt = ctypes.CDLL("libcrypt.so.1")
    libcrypt.crypt_gensalt.restype = ctypes.c_char_p
    libcrypt.crypt_gensalt.argtypes = [ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p, ctypes.c_int]
    libcrypt.crypt.restype = ctypes.c_char_p
    libcrypt.crypt.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    salt = libcrypt.crypt_gensalt(b"$2y$", 8, None, 0)
    return libcrypt.crypt(password.encode(), salt).decode()


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def make_ca(d, name):
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", f"{d}/{name}.key", "-out", f"{d}/{name}.crt", "-days", "2", "-subj", f"/CN={name}")


def make_cert(d, name, ca, usage, san=None):
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", f"{d}/{name}.key", "-out", f"{d}/{name}.csr", "-subj", f"/CN={name}")
    with open(f"{d}/{name}.ext", "w") as f:
        f.write(f"extendedKeyUsage={usage}\n" + (f"subjectAltName={san}\n" if san else ""))
    openssl("x509", "-req", "-in", f"{d}/{name}.csr", "-CA", f"{d}/{ca}.crt", "-CAkey", f"{d}/{ca}.key",
            "-CAcreateserial", "-out", f"{d}/{name}.crt", "-days", "2", "-extfile", f"{d}/{name}.ext")


def replace_file(path, text):
    """Writes next to `path` and renames into place, as the kubelet updates a Secret."""
    with open(path + ".new", "w") as f:
        f.write(text)
    os.rename(path + ".new", path)


def curl(url, *args):
    """(HTTP status or 0, body, headers text) as curl sees them."""
    result = subprocess.run(["curl", "-sS", "--max-time", "5", "-D", "-", "-o", "-", "-w", "\n%{http_code}",
                             *args, url], capture_output=True, text=True)
    lines = result.stdout.rsplit("\n", 1)
    status = int(lines[-1]) if lines[-1].isdigit() else 0
    return status, lines[0] if len(lines) > 1 else "", result.stderr


def served_certificate(port, d):
    context = ssl.create_default_context(cafile=f"{d}/ca.crt")
    context.load_cert_chain(f"{d}/client.crt", f"{d}/client.key")
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            return tls.getpeercert(binary_form=True)


def negotiated_version(port, d, version):
    """The TLS version a handshake offering only `version` settles on, or None when refused."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.load_verify_locations(f"{d}/ca.crt")
    # OpenSSL's default security level keeps this client from offering TLS 1.0 and 1.1 at all;
    # at level 0 it offers them, so that a refusal seen here is the server's.
    context.set_ciphers("DEFAULT:@SECLEVEL=0")
    with warnings.catch_warnings():  # Python calls TLS 1.0 and 1.1 deprecated: that is the point
        warnings.simplefilter("ignore", DeprecationWarning)
        context.minimum_version = version
        context.maximum_version = version
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
            with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                return tls.version()
    except (ssl.SSLError, OSError):
        return None


def check_tls_versions(port, d):
    """The web config names no min_version: TLS 1.2 and 1.3 are served, 1.0 and 1.1 refused."""
    for version, name, served in [(ssl.TLSVersion.TLSv1, "TLSv1", False),
                                  (ssl.TLSVersion.TLSv1_1, "TLSv1.1", False),
                                  (ssl.TLSVersion.TLSv1_2, "TLSv1.2", True),
                                  (ssl.TLSVersion.TLSv1_3, "TLSv1.3", True)]:
        got = negotiated_version(port, d, version)
        check(f"no min_version in the web config: a {name} handshake is "
              f"{'served' if served else 'refused'}", (got == name) == served, f"got {got}")


def pem_to_der(path):
    return ssl.PEM_cert_to_DER_cert(open(path).read())


WEB_CONFIG = """tls_server_config:
  cert_file: server.crt
  key_file: server.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: ca.crt
basic_auth_users:
  prometheus: {hash}
"""


def check_curl(port, d, password):
    url = f"https://127.0.0.1:{port}"
    tls = ["--cacert", f"{d}/ca.crt"]
    cert = ["--cert", f"{d}/client.crt", "--key", f"{d}/client.key"]
    status, _, _ = curl(url + "/metrics", *tls)
    check("https without a client certificate: 403 on /metrics", status == 403, f"got {status}")
    status, body, _ = curl(url + "/healthz", *tls)
    check("https without a client certificate: 200 on /healthz (the probe)", status == 200, f"got {status}")
    status, _, _ = curl(url + "/metrics", *tls, "--cert", f"{d}/rogue-client.crt", "--key", f"{d}/rogue-client.key")
    check("a client certificate from another CA: 403", status == 403, f"got {status}")
    status, body, _ = curl(url + "/metrics", *tls, *cert)
    check("client certificate without a password: 401 asking for Basic",
          status == 401 and "WWW-Authenticate: Basic" in body, f"got {status}")
    status, _, _ = curl(url + "/metrics", *tls, *cert, "-u", "prometheus:wrong")
    check("client certificate and a wrong password: 401", status == 401, f"got {status}")
    status, body, _ = curl(url + "/metrics", *tls, *cert, "-u", f"prometheus:{password}")
    check("client certificate and the password: 200 with 8 cards",
          status == 200 and body.count("\nxpu_info{") == 8, f"got {status}")
    status, _, err = curl(f"http://127.0.0.1:{port}/metrics")
    check("plain HTTP to the TLS port: no HTTP answer", status == 0 or status == 400, f"got {status} {err.strip()}")


def check_prometheus(run, d, port, password):
    if not os.access(PROMETHEUS, os.X_OK):
        check("Prometheus is installed (Debian package prometheus)", False, f"{PROMETHEUS} missing")
        return
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    prom_port = probe.getsockname()[1]
    probe.close()
    with open(f"{run}/prometheus.yml", "w") as f:
        f.write(f"""global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: xpu
    scheme: https
    tls_config:
      ca_file: {d}/ca.crt
      cert_file: {d}/client.crt
      key_file: {d}/client.key
      server_name: 127.0.0.1
    basic_auth:
      username: prometheus
      password: {password}
    static_configs:
      - targets: ["127.0.0.1:{port}"]
""")
    prometheus = Process([PROMETHEUS, f"--config.file={run}/prometheus.yml", f"--storage.tsdb.path={run}/tsdb",
                          f"--web.listen-address=127.0.0.1:{prom_port}"], f"{run}/prometheus.log")
    try:
        def query():
            try:
                url = f"http://127.0.0.1:{prom_port}/api/v1/query?query=count(xpu_info)"
                with urllib.request.urlopen(url, timeout=2) as reply:
                    result = json.load(reply)["data"]["result"]
                return result[0]["value"][1] if result else None
            except (OSError, ValueError, KeyError):
                return None

        seen = wait_until(lambda: query() == "8", 30, step=0.5)
        health = ""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{prom_port}/api/v1/targets", timeout=2) as reply:
                targets = json.load(reply)["data"]["activeTargets"]
                health = ", ".join(f"{t['health']} {t.get('lastError', '')}" for t in targets)
        except (OSError, ValueError, KeyError):
            pass
        check("Prometheus scrapes over TLS with a client certificate and basic auth: count(xpu_info) = 8",
              seen, f"targets: {health}")
    finally:
        prometheus.stop()


def main():
    run = tempfile.mkdtemp(prefix="xpu-tls.")
    d = f"{run}/web"
    os.mkdir(d)
    procs = []
    try:
        make_ca(d, "ca")
        make_ca(d, "rogue")
        make_cert(d, "server", "ca", "serverAuth", "IP:127.0.0.1,IP:::1,DNS:localhost")
        make_cert(d, "client", "ca", "clientAuth")
        make_cert(d, "rogue-client", "rogue", "clientAuth")
        with open(f"{d}/web-config.yml", "w") as f:
            f.write(WEB_CONFIG.format(hash=bcrypt("secret")))
        exporter, port = start_stack(run, procs, ["--listen", "127.0.0.1:0",
                                                  "--web-config-file", f"{d}/web-config.yml"])
        check("the exporter says it serves https with basic auth", "over https with basic auth" in exporter.output(),
              exporter.output().strip().splitlines()[-1])
        wait_until(lambda: curl(f"https://127.0.0.1:{port}/metrics", "--cacert", f"{d}/ca.crt", "--cert",
                                f"{d}/client.crt", "--key", f"{d}/client.key", "-u", "prometheus:secret")[1]
                   .count("\nxpu_info{") == 8, 15)
        check_curl(port, d, "secret")
        check_tls_versions(port, d)
        check_prometheus(run, d, port, "secret")

        # Rotation: a new password and a new server certificate, renamed into place.
        before = exporter.output().count("reloaded web config")
        replace_file(f"{d}/web-config.yml", WEB_CONFIG.format(hash=bcrypt("rotated")))
        os.rename(f"{d}/server.crt", f"{d}/server-old.crt")
        make_cert(d, "server-new", "ca", "serverAuth", "IP:127.0.0.1")
        os.rename(f"{d}/server-new.key", f"{d}/server.key.tmp")
        os.rename(f"{d}/server-new.crt", f"{d}/server.crt.tmp")
        os.rename(f"{d}/server.key.tmp", f"{d}/server.key")
        os.rename(f"{d}/server.crt.tmp", f"{d}/server.crt")
        cert = ["--cacert", f"{d}/ca.crt", "--cert", f"{d}/client.crt", "--key", f"{d}/client.key"]
        rotated = wait_until(lambda: curl(f"https://127.0.0.1:{port}/metrics", *cert, "-u", "prometheus:rotated")[0] == 200,
                             RELOAD_WITHIN_S, step=0.25)
        check(f"a rotated password works within {RELOAD_WITHIN_S} s, without a restart", rotated)
        status, _, _ = curl(f"https://127.0.0.1:{port}/metrics", *cert, "-u", "prometheus:secret")
        check("the old password is refused after the rotation", status == 401, f"got {status}")
        check("the rotated server certificate is served",
              wait_until(lambda: served_certificate(port, d) == pem_to_der(f"{d}/server.crt"), 5))
        check("the exporter logged the reload", exporter.output().count("reloaded web config") > before)

        replace_file(f"{d}/web-config.yml", "tls_server_config:\n  cert_file: [unclosed\n")
        logged = wait_until(lambda: "keeping the previous web config" in exporter.output(), RELOAD_WITHIN_S)
        status, _, _ = curl(f"https://127.0.0.1:{port}/metrics", *cert, "-u", "prometheus:rotated")
        check("a broken edit is logged and the last good config keeps serving", logged and status == 200,
              f"logged {logged}, status {status}")
        check("the exporter is still running", exporter.proc.poll() is None)

        replace_file(f"{d}/web-config.yml", "basic_auth_users:\n  prometheus: plaintext\n")
        bad = subprocess.run([SHIM, "exporter",
                              "--web-config-file", f"{d}/web-config.yml"], capture_output=True, text=True, timeout=10)
        check("a bad web config at start: exit 2 naming the file and the key",
              bad.returncode == 2 and "basic_auth_users.prometheus: not a bcrypt hash" in bad.stderr + bad.stdout,
              f"exit {bad.returncode}: {(bad.stderr + bad.stdout).strip()}")
    except (SetupError, subprocess.CalledProcessError) as e:
        check("setup", False, str(e))
    finally:
        for p in reversed(procs):
            p.stop()
        print_logs_if_failed(run)
        shutil.rmtree(run, ignore_errors=True)
    return finish("loopback, this machine")


if __name__ == "__main__":
    sys.exit(main())
