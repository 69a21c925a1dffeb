"""An OCI registry on the node, as operators run one: TLS with a certificate of the node's test CA
and a password (htpasswd, bcrypt), served by the CNCF Distribution registry (build-registry.sh).
The node's containerd trusts it through a hosts.toml under the runtime's registry config_path;
what is pushed, the README's block pushes (skopeo for the image index, helm for the chart)."""

import hashlib
import io
import json
import os
import secrets
import ssl
import tarfile
import urllib.error
import urllib.request

from processes import run, wait_for

PORT = 5000
USER = "xpu-puller"
INDEX = "application/vnd.oci.image.index.v1+json"


def relabelled_archive(archive, output, label, value):
    """A copy of an OCI image archive whose images carry one more config label, so that their
    image IDs (config digests) differ from the original's. The kubelet ties an image ID it pulled
    with a pull secret to that secret (KEP-2535, ensure secret-pulled images): once the registry
    scenario pulled the shim's image with its secret, the other scenarios' pods, which run the
    same image ID imported without credentials, would be refused it."""
    with tarfile.open(archive) as source:
        members = {m.name: m for m in source.getmembers()}
        files = {name: source.extractfile(m).read() for name, m in members.items() if m.isfile()}

    def blob(digest):
        return files[f"blobs/sha256/{digest.split(':', 1)[1]}"]

    def put(data):
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        files[f"blobs/sha256/{digest.split(':', 1)[1]}"] = data
        return digest, len(data)

    def relabel(descriptor):
        if descriptor["mediaType"] == INDEX:
            index = json.loads(blob(descriptor["digest"]))
            index["manifests"] = [relabel(d) for d in index["manifests"]]
            descriptor["digest"], descriptor["size"] = put(json.dumps(index).encode())
            return descriptor
        manifest = json.loads(blob(descriptor["digest"]))
        config = json.loads(blob(manifest["config"]["digest"]))
        config.setdefault("config", {}).setdefault("Labels", {})[label] = value
        old_config = manifest["config"]["digest"]
        manifest["config"]["digest"], manifest["config"]["size"] = put(json.dumps(config).encode())
        configs[old_config] = manifest["config"]["digest"]
        descriptor["digest"], descriptor["size"] = put(json.dumps(manifest).encode())
        return descriptor

    configs = {}
    index = json.loads(files["index.json"])
    index["manifests"] = [relabel(d) for d in index["manifests"]]
    files["index.json"] = json.dumps(index).encode()
    if "manifest.json" in files:  # the Docker archive's view, for tools that read that
        entries = json.loads(files["manifest.json"])
        for entry in entries:
            old = "sha256:" + entry["Config"].rsplit("/", 1)[-1]
            if old in configs:
                entry["Config"] = f"blobs/sha256/{configs[old].split(':', 1)[1]}"
        files["manifest.json"] = json.dumps(entries).encode()
    with tarfile.open(output, "w") as target:
        for name in ["oci-layout", "index.json", "manifest.json"] + sorted(
                n for n in files if n not in ("oci-layout", "index.json", "manifest.json")):
            if name in files:
                info = tarfile.TarInfo(name)
                info.size = len(files[name])
                info.mode = 0o644
                target.addfile(info, io.BytesIO(files[name]))
    return output


class Registry:
    def __init__(self, node, program, node_ip):
        self.node = node
        self.host = f"{node_ip}:{PORT}"
        self.directory = os.path.join(node.run_dir, "registry")
        os.makedirs(self.directory, exist_ok=True)
        self.password = secrets.token_hex(16)
        self.cert, self.key = node.pki.issue("registry", "xpu-test-registry", sans=[f"IP:{node_ip}"],
                                             server=True)
        htpasswd = os.path.join(self.directory, "htpasswd")
        with open(htpasswd, "w", encoding="utf-8") as f:
            f.write(run(["htpasswd", "-Bbn", USER, self.password]).strip() + "\n")
        config = os.path.join(self.directory, "config.yml")
        with open(config, "w", encoding="utf-8") as f:
            f.write(f"""version: 0.1
log:
  level: info
storage:
  filesystem:
    rootdirectory: {os.path.join(self.directory, "data")}
http:
  addr: {self.host}
  tls:
    certificate: {self.cert}
    key: {self.key}
auth:
  htpasswd:
    realm: xpu-test-registry
    path: {htpasswd}
""")
        # containerd reads a registry's hosts.toml at each pull: no restart needed.
        hosts = os.path.join(node.registry_config_path, self.host)
        os.makedirs(hosts, exist_ok=True)
        with open(os.path.join(hosts, "hosts.toml"), "w", encoding="utf-8") as f:
            f.write(f'server = "https://{self.host}"\n\n[host."https://{self.host}"]\n'
                    f'  capabilities = ["pull", "resolve"]\n  ca = "{node.pki.ca_cert}"\n')
        self.program = node.add("registry", [program, "serve", config])

    def start(self):
        self.program.start()
        context = ssl.create_default_context(cafile=self.node.pki.ca_cert)

        def asks_for_a_password():
            try:
                urllib.request.urlopen(f"https://{self.host}/v2/", context=context, timeout=5)
            except urllib.error.HTTPError as error:
                return error.code == 401
            except OSError:
                return False
            return False  # answered without a password: the auth config was not taken
        wait_for(f"the registry at {self.host} asking for a password", asks_for_a_password, 30)

    def stop(self):
        self.program.stop()
        del self.node.components["registry"]

    def log_lines(self, needle):
        with open(self.program.log_path, encoding="utf-8", errors="replace") as f:
            return [line for line in f if needle in line]
