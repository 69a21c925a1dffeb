#!/usr/bin/env python3
"""Writes a one-layer container image from a directory, as one tar file that `podman load`,
`ctr images import` (containerd) and `docker load` accept, named with the given reference.

    oci-archive.py --root DIR --ref NAME[:TAG] --output FILE [--entrypoint ARGS] [--cmd ARGS]
                   [--user USER] [--env NAME=VALUE]... [--workdir DIR] [--label KEY=VALUE]...
                   [--architecture ARCH] [--timestamp EPOCH]

The tar is an OCI image layout (oci-layout, index.json, blobs/sha256/...) that also carries a
Docker-style manifest.json pointing at the same blobs, so one file serves both readers:
- containerd's importer reads the OCI layout when `oci-layout` is present and names the image
  from the index's `io.containerd.image.name` annotation (then `org.opencontainers.image.ref.name`);
- podman (containers/image) tries the tar as an OCI archive first and takes its name from the
  same two annotations, in the same order;
- Docker-archive readers use manifest.json's RepoTags.
Every one of them gets the full reference (`busybox` becomes `docker.io/library/busybox:latest`),
which is also the name the kubelet asks a container runtime for.

The layer keeps each file's mode (setuid, setgid and sticky bits included), numeric owner,
symbolic links, hard links (as links to the first of their paths written) and the file capability
(`security.capability`); names are empty so only the numeric ids count. Anything else (device
nodes, FIFOs, sockets) is refused, since a runtime provides /dev itself. The output is
deterministic: entries sorted, every mtime clamped to the timestamp, gzip without a name or time.
Only the Python standard library is used.
"""

import argparse
import datetime
import gzip
import hashlib
import io
import json
import os
import platform
import re
import stat
import sys
import tarfile
import tempfile

DEFAULT_PATH = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
MEDIA_INDEX = "application/vnd.oci.image.index.v1+json"
MEDIA_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MEDIA_CONFIG = "application/vnd.oci.image.config.v1+json"
MEDIA_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
# The one extended attribute carried into the layer: what makes e.g. ping work without setuid.
# SELinux labels and the like belong to the machine that built the tree, not to the image.
KEPT_XATTR = "security.capability"
MACHINE_TO_ARCH = {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm", "ppc64le": "ppc64le",
                   "s390x": "s390x", "riscv64": "riscv64"}

# The grammar of distribution references (the `reference` package that Docker, containerd and
# podman share), restricted to name and tag: a digest does not name an image being written.
_DOMAIN = re.compile(r"^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*"
                     r"|\[[0-9a-fA-F:]+\])(?::[0-9]+)?$")
_PATH = re.compile(r"^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$")
_TAG = re.compile(r"^[\w][\w.-]{0,127}$")


class UsageError(Exception):
    """A bad argument: reported with the usage line, exit status 2."""


class BuildError(Exception):
    """The tree or the output cannot be written as asked: exit status 1."""


def normalize_reference(ref):
    """Returns the full form of an image reference, registry/path:tag, as runtimes store it.

    The first component names a registry only when it looks like one (a dot, a port or
    `localhost`), as every Docker-compatible tool decides; otherwise the image is on docker.io,
    where one-component names sit under `library/`. A missing tag is `latest`.
    """
    name, tag = ref, "latest"
    colon, slash = ref.rfind(":"), ref.rfind("/")
    if colon > slash:
        name, tag = ref[:colon], ref[colon + 1:]
    first, sep, rest = name.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        domain, path = first, rest
    else:
        domain, path = "docker.io", name
    if domain == "index.docker.io":
        domain = "docker.io"
    if domain == "docker.io" and "/" not in path:
        path = "library/" + path
    if "@" in ref or not _DOMAIN.match(domain) or not _PATH.match(path) or not _TAG.match(tag) \
            or len(domain) + 1 + len(path) > 255:
        raise UsageError("--ref %r is not an image reference of the form [REGISTRY/]NAME[:TAG] "
                         "(lowercase name components, no digest)" % ref)
    return "%s/%s:%s" % (domain, path, tag)


def parse_args_list(option, text):
    """ENTRYPOINT/CMD as a Containerfile's exec form: a JSON array of strings, or one word."""
    if not text.lstrip().startswith("["):
        return [text]
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise UsageError("%s %r is not a JSON array: %s" % (option, text, error)) from None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise UsageError("%s %r must be a JSON array of strings" % (option, text))
    return value


def parse_pairs(option, items):
    pairs = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError("%s %r is not KEY=VALUE" % (option, item))
        pairs[key] = value
    return pairs


class DigestWriter:
    """A write-only file that hashes and counts what passes through it to `target`."""

    def __init__(self, target):
        self.target = target
        self.sha256 = hashlib.sha256()
        self.size = 0

    def write(self, data):
        self.sha256.update(data)
        self.size += len(data)
        return self.target.write(data)

    def tell(self):
        return self.size

    def flush(self):
        self.target.flush()

    def digest(self):
        return "sha256:" + self.sha256.hexdigest()


def sorted_entries(directory):
    """The names in `directory`, in byte order: the same tree always gives the same layer."""
    with os.scandir(directory) as it:
        return sorted((entry.name for entry in it), key=os.fsencode)


def layer_member(root, relative, st, timestamp, first_link):
    """The tar header of one path of the tree, or a BuildError for what a layer cannot hold."""
    info = tarfile.TarInfo(relative)
    info.mode = stat.S_IMODE(st.st_mode)
    info.uid, info.gid = st.st_uid, st.st_gid
    info.uname = info.gname = ""
    info.mtime = min(int(st.st_mtime), timestamp)
    path = os.path.join(root, relative)
    if stat.S_ISDIR(st.st_mode):
        info.type = tarfile.DIRTYPE
    elif stat.S_ISLNK(st.st_mode):
        info.type = tarfile.SYMTYPE
        info.linkname = os.readlink(path)
    elif stat.S_ISREG(st.st_mode):
        key = (st.st_dev, st.st_ino)
        if st.st_nlink > 1 and key in first_link:
            info.type = tarfile.LNKTYPE
            info.linkname = first_link[key]
        else:
            info.type = tarfile.REGTYPE
            info.size = st.st_size
            if st.st_nlink > 1:
                first_link[key] = relative
    else:
        kind = ("a device node" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)
                else "a FIFO" if stat.S_ISFIFO(st.st_mode) else "a socket")
        raise BuildError("%s is %s: a layer written here holds files, directories and links only "
                         "(a container runtime provides /dev itself)" % (path, kind))
    if not stat.S_ISLNK(st.st_mode):
        try:
            capability = os.getxattr(path, KEPT_XATTR, follow_symlinks=False)
        except OSError:
            capability = None
        if capability is not None:
            # tarfile writes PAX values as UTF-8; surrogateescape restores the raw bytes.
            info.pax_headers = {"SCHILY.xattr." + KEPT_XATTR:
                                capability.decode("utf-8", "surrogateescape")}
    return info


def write_layer(root, timestamp, out):
    """Writes the tree as a gzipped tar to `out`; returns (digest, size, diff_id, tar size)."""
    compressed = DigestWriter(out)
    with gzip.GzipFile(filename="", mode="wb", fileobj=compressed, compresslevel=6, mtime=0) as gz:
        uncompressed = DigestWriter(gz)
        with tarfile.open(fileobj=uncompressed, mode="w", format=tarfile.PAX_FORMAT) as tar:
            first_link = {}
            pending = [""]
            while pending:
                directory = pending.pop()
                # A directory's entries in order, then each subdirectory's the same way, so a
                # directory always comes before what it holds.
                children = []
                for name in sorted_entries(os.path.join(root, directory)):
                    relative = os.path.join(directory, name)
                    path = os.path.join(root, relative)
                    st = os.lstat(path)
                    info = layer_member(root, relative, st, timestamp, first_link)
                    if info.type == tarfile.REGTYPE:
                        with open(path, "rb") as content:
                            tar.addfile(info, content)
                    else:
                        tar.addfile(info)
                    if info.type == tarfile.DIRTYPE:
                        children.append(relative)
                pending.extend(reversed(children))
    return compressed.digest(), compressed.size, uncompressed.digest(), uncompressed.size


def json_blob(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def iso_time(timestamp):
    return datetime.datetime.fromtimestamp(timestamp, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def add_bytes(tar, name, data, timestamp):
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), 0o644, timestamp
    tar.addfile(info, io.BytesIO(data))


def build(args):
    root = os.path.realpath(args.root)
    if not os.path.isdir(root):
        raise UsageError("--root %s is not a directory" % args.root)
    reference = normalize_reference(args.ref)
    output = os.path.abspath(args.output)
    out_dir = os.path.dirname(output)
    if not os.path.isdir(out_dir):
        raise UsageError("--output %s: directory %s does not exist" % (args.output, out_dir))

    if os.path.commonpath([root, out_dir]) == root:
        raise UsageError("--output %s is inside --root %s: the archive would contain itself"
                         % (args.output, args.root))
    if not args.workdir.startswith("/"):
        raise UsageError("--workdir %r is not an absolute path" % args.workdir)
    env = list(args.env)
    for item in env:
        if "=" not in item or item.startswith("="):
            raise UsageError("--env %r is not NAME=VALUE" % item)
    if not any(item.startswith("PATH=") for item in env):
        env.insert(0, DEFAULT_PATH)
    image_config = {}
    if args.user:
        image_config["User"] = args.user
    image_config["Env"] = env
    if args.entrypoint is not None:
        image_config["Entrypoint"] = parse_args_list("--entrypoint", args.entrypoint)
    if args.cmd is not None:
        image_config["Cmd"] = parse_args_list("--cmd", args.cmd)
    image_config["WorkingDir"] = args.workdir
    labels = parse_pairs("--label", args.label)
    if labels:
        image_config["Labels"] = labels

    timestamp = args.timestamp
    created = iso_time(timestamp)
    with tempfile.NamedTemporaryFile(dir=out_dir, prefix=".layer-", delete=True) as layer:
        layer_digest, layer_size, diff_id, tar_size = write_layer(root, timestamp, layer)
        layer.flush()

        config = json_blob({
            "created": created,
            "architecture": args.architecture,
            "os": "linux",
            "config": image_config,
            "rootfs": {"type": "layers", "diff_ids": [diff_id]},
            "history": [{"created": created, "created_by": "oci-archive.py --root (one layer)"}],
        })
        config_digest = "sha256:" + hashlib.sha256(config).hexdigest()
        manifest = json_blob({
            "schemaVersion": 2,
            "mediaType": MEDIA_MANIFEST,
            "config": {"mediaType": MEDIA_CONFIG, "digest": config_digest, "size": len(config)},
            "layers": [{"mediaType": MEDIA_LAYER, "digest": layer_digest, "size": layer_size}],
        })
        manifest_digest = "sha256:" + hashlib.sha256(manifest).hexdigest()
        index = json_blob({
            "schemaVersion": 2,
            "mediaType": MEDIA_INDEX,
            "manifests": [{
                "mediaType": MEDIA_MANIFEST,
                "digest": manifest_digest,
                "size": len(manifest),
                "platform": {"architecture": args.architecture, "os": "linux"},
                "annotations": {"io.containerd.image.name": reference,
                                "org.opencontainers.image.ref.name": reference},
            }],
        })

        def blob(digest):
            return "blobs/sha256/" + digest.split(":", 1)[1]

        docker_manifest = json_blob([{"Config": blob(config_digest), "RepoTags": [reference],
                                      "Layers": [blob(layer_digest)]}])

        with tempfile.NamedTemporaryFile(dir=out_dir, prefix=".archive-", delete=False) as partial:
            try:
                with tarfile.open(fileobj=partial, mode="w", format=tarfile.PAX_FORMAT) as tar:
                    add_bytes(tar, "oci-layout", json_blob({"imageLayoutVersion": "1.0.0"}), timestamp)
                    add_bytes(tar, "index.json", index, timestamp)
                    add_bytes(tar, "manifest.json", docker_manifest, timestamp)
                    for directory in ("blobs/", "blobs/sha256/"):
                        info = tarfile.TarInfo(directory)
                        info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, timestamp
                        tar.addfile(info)
                    add_bytes(tar, blob(config_digest), config, timestamp)
                    add_bytes(tar, blob(manifest_digest), manifest, timestamp)
                    info = tarfile.TarInfo(blob(layer_digest))
                    info.size, info.mode, info.mtime = layer_size, 0o644, timestamp
                    layer.seek(0)
                    tar.addfile(info, layer)
                partial.flush()
                os.fchmod(partial.fileno(), 0o644)
                os.replace(partial.name, output)
            except BaseException:
                os.unlink(partial.name)
                raise
    return {"reference": reference, "manifest": manifest_digest, "config": config_digest,
            "layer": layer_digest, "layer_size": layer_size, "diff_id": diff_id,
            "layer_tar_size": tar_size}


def default_architecture():
    machine = platform.machine()
    return MACHINE_TO_ARCH.get(machine, machine)


def default_timestamp():
    value = os.environ.get("SOURCE_DATE_EPOCH")
    if value is None:
        return None
    if not value.isdigit():
        raise UsageError("SOURCE_DATE_EPOCH=%r is not a number of seconds" % value)
    return int(value)


def main(argv):
    parser = argparse.ArgumentParser(
        prog="oci-archive.py",
        description="Write a directory as a one-layer container image archive "
                    "(OCI layout plus Docker manifest.json in one tar).")
    parser.add_argument("--root", required=True, help="directory that becomes the image's /")
    parser.add_argument("--ref", required=True, help="image reference, [REGISTRY/]NAME[:TAG]")
    parser.add_argument("--output", required=True, help="tar file to write (replaced atomically)")
    parser.add_argument("--entrypoint", help='JSON array, e.g. \'["/usr/bin/app"]\', or one word')
    parser.add_argument("--cmd", help="JSON array or one word: the default arguments")
    parser.add_argument("--user", default="", help="USER[:GROUP], names or numbers (default: root)")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="environment (repeatable); PATH gets a default unless given")
    parser.add_argument("--workdir", default="/", help="working directory (default /)")
    parser.add_argument("--label", action="append", default=[], metavar="KEY=VALUE",
                        help="image label (repeatable)")
    parser.add_argument("--architecture", default=default_architecture(),
                        help="OCI architecture name (default: this machine's, e.g. amd64)")
    parser.add_argument("--timestamp", type=int, metavar="EPOCH",
                        help="creation time and mtime clamp (default: $SOURCE_DATE_EPOCH, "
                             "else the newest mtime in the tree)")
    args = parser.parse_args(argv)
    try:
        if args.timestamp is None:
            args.timestamp = default_timestamp()
        if args.timestamp is None:
            args.timestamp = newest_mtime(args.root)
        if args.timestamp < 0:
            raise UsageError("--timestamp must not be negative")
        result = build(args)
    except UsageError as error:
        parser.print_usage(sys.stderr)
        print("oci-archive.py: error: %s" % error, file=sys.stderr)
        return 2
    except (BuildError, OSError) as error:
        print("oci-archive.py: error: %s" % error, file=sys.stderr)
        return 1
    print(json.dumps(result, indent=2))
    return 0


def newest_mtime(root):
    if not os.path.isdir(root):
        raise UsageError("--root %s is not a directory" % root)
    newest = 0
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            newest = max(newest, int(os.lstat(os.path.join(directory, name)).st_mtime))
    return newest


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
