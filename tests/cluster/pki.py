"""The test node's certificates, made with openssl: one CA, the API server's serving
certificate, client certificates for the admin, the kubelet and the control-plane components,
and the service-account signing key."""

import os

from processes import run


class Pki:
    def __init__(self, directory, node_name, node_ip, service_ip):
        self.directory = directory
        os.makedirs(directory, exist_ok=True)
        self.ca_cert = self.path("ca.crt")
        self.ca_key = self.path("ca.key")
        run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
             "-nodes", "-keyout", self.ca_key, "-out", self.ca_cert, "-days", "2",
             "-subj", "/CN=xpu-cluster-test-ca"])
        self.apiserver = self.issue(
            "apiserver", "kube-apiserver", None,
            sans=["DNS:kubernetes", "DNS:kubernetes.default", "DNS:kubernetes.default.svc",
                  "DNS:localhost", f"DNS:{node_name}", "IP:127.0.0.1", f"IP:{node_ip}",
                  f"IP:{service_ip}"],
            server=True)
        self.admin = self.issue("admin", "kubernetes-admin", "system:masters")
        self.kubelet = self.issue("kubelet", f"system:node:{node_name}", "system:nodes")
        self.controller_manager = self.issue("controller-manager", "system:kube-controller-manager")
        self.scheduler = self.issue("scheduler", "system:kube-scheduler")
        self.apiserver_kubelet_client = self.issue("apiserver-kubelet-client",
                                                   "kube-apiserver-kubelet-client", "system:masters")
        self.service_account_key = self.path("sa.key")
        self.service_account_public = self.path("sa.pub")
        run(["openssl", "genrsa", "-out", self.service_account_key, "2048"])
        run(["openssl", "rsa", "-in", self.service_account_key, "-pubout",
             "-out", self.service_account_public])

    def path(self, name):
        return os.path.join(self.directory, name)

    def issue(self, name, common_name, organization=None, sans=None, server=False):
        """Returns (certificate path, key path) signed by the CA."""
        key, request, cert = self.path(f"{name}.key"), self.path(f"{name}.csr"), self.path(f"{name}.crt")
        subject = f"/CN={common_name}" + (f"/O={organization}" if organization else "")
        run(["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
             "-nodes", "-keyout", key, "-out", request, "-subj", subject])
        extensions = self.path(f"{name}.ext")
        with open(extensions, "w", encoding="utf-8") as f:
            f.write("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n")
            f.write(f"extendedKeyUsage={'serverAuth' if server else 'clientAuth'}\n")
            if sans:
                f.write(f"subjectAltName={','.join(sans)}\n")
        run(["openssl", "x509", "-req", "-in", request, "-CA", self.ca_cert, "-CAkey", self.ca_key,
             "-CAcreateserial", "-out", cert, "-days", "2", "-extfile", extensions])
        return cert, key

    def kubeconfig(self, name, server, credentials):
        """Writes a kubeconfig for one client certificate and returns its path."""
        cert, key = credentials
        path = self.path(f"{name}.kubeconfig")
        with open(path, "w", encoding="utf-8") as f:
            f.write(f"""apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: {server}
    certificate-authority: {self.ca_cert}
users:
- name: {name}
  user:
    client-certificate: {cert}
    client-key: {key}
contexts:
- name: test
  context:
    cluster: test
    user: {name}
current-context: test
""")
        return path
