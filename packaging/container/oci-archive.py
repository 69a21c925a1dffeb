#!/usr/bin/env python3
"""Writes a one-layer container image from a directory, as one tar file that `podman load`,
`ctr images import` (containerd) and `docker load` accept, named with the given reference.

    oci-archive.py --root DIR [--architecture ARCH] | --platform ARCH=DIR...
                   --ref NAME[:TAG] --output FILE [--entrypoint ARGS] [--cmd ARGS]
                   [--user USER] [--env NAME=VALUE]... [--workdir DIR] [--label KEY=VALUE]...
                   [--timestamp EPOCH]

The tar is an OCI image layout (oci-layout, index.json, blobs/sha256/...) that also carries a
Docker-style manifest.json pointing at the same blobs, so one file serves both readers:
- containerd's importer reads the OCI layout when `oci-layout` is present and names the image
  from the index's `io.containerd.image.name` annotation (then `org.opencontainers.image.ref.name`);
- podman (containers/image) tries the tar as an OCI archive first and takes its name from the
  same two annotations, in the same order;
- Docker-archive readers use manifest.json's RepoTags.
Every one of them gets the full reference (`busybox` becomes `docker.io/library/busybox:latest`),
which is also the name the kubelet asks a container runtime for.

With several --platform trees (amd64=DIR --platform arm64=DIR), index.json names one nested
image index holding a manifest per architecture, the shape of a multi-architecture tag in a
registry: containerd and podman unpack the manifest of their own platform. Docker's manifest.json
cannot express that and is then left out (Docker 25 and later read the OCI index).

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
# OCI architecture names (GOARCH values: amd64, arm64, ppc64le, ...).
_ARCHITECTURE = re.compile(r"^[a-z][a-z0-9]{1,15}$")


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


def parse_platforms(args):
    """[(architecture, root)]: --platform ARCH=DIR (repeatable), or --root with --architecture."""
    if args.platform and args.root:
        raise UsageError("give either --root (with --architecture) or --platform ARCH=DIR, not both")
    if not args.platform and not args.root:
        raise UsageError("give --root DIR, or --platform ARCH=DIR once per architecture")
    if args.root:
        return [(args.architecture or default_architecture(), args.root)]
    if args.architecture:
        raise UsageError("--architecture goes with --root; --platform names its own")
    platforms = []
    for item in args.platform:
        architecture, sep, root = item.partition("=")
        if not sep or not _ARCHITECTURE.match(architecture) or not root:
            raise UsageError("--platform %r is not ARCH=DIR (an OCI architecture name such as amd64 "
                             "or arm64, then the tree)" % item)
        if any(architecture == seen for seen, _ in platforms):
            raise UsageError("--platform %s given twice" % architecture)
        platforms.append((architecture, root))
    return platforms


def runtime_config(args):
    """The image config's `config` member (user, environment, entrypoint...): checked once, the
    same for every architecture."""
    env = list(args.env)
    for item in env:
        if "=" not in item or item.startswith("="):
            raise UsageError("--env %r is not NAME=VALUE" % item)
    if not any(item.startswith("PATH=") for item in env):
        env.insert(0, DEFAULT_PATH)
    if not args.workdir.startswith("/"):
        raise UsageError("--workdir %r is not an absolute path" % args.workdir)
    config = {}
    if args.user:
        config["User"] = args.user
    config["Env"] = env
    if args.entrypoint is not None:
        config["Entrypoint"] = parse_args_list("--entrypoint", args.entrypoint)
    if args.cmd is not None:
        config["Cmd"] = parse_args_list("--cmd", args.cmd)
    config["WorkingDir"] = args.workdir
    labels = parse_pairs("--label", args.label)
    if labels:
        config["Labels"] = labels
    return config


def image_config_blob(runtime, architecture, diff_id, created):
    return json_blob({
        "created": created,
        "architecture": architecture,
        "os": "linux",
        "config": runtime,
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        "history": [{"created": created, "created_by": "oci-archive.py --root (one layer)"}],
    })


def digest_of(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def blob_name(digest):
    return "blobs/sha256/" + digest.split(":", 1)[1]


def build(args):
    platforms = parse_platforms(args)
    reference = normalize_reference(args.ref)
    output = os.path.abspath(args.output)
    out_dir = os.path.dirname(output)
    if not os.path.isdir(out_dir):
        raise UsageError("--output %s: directory %s does not exist" % (args.output, out_dir))
    roots = []
    for architecture, given in platforms:
        root = os.path.realpath(given)
        if not os.path.isdir(root):
            raise UsageError("%s is not a directory" % (("--root " + given) if args.root else
                                                        ("--platform %s=%s" % (architecture, given))))
        if os.path.commonpath([root, out_dir]) == root:
            raise UsageError("--output %s is inside the tree %s: the archive would contain itself"
                             % (args.output, given))
        roots.append((architecture, root))
    runtime = runtime_config(args)

    timestamp = args.timestamp
    created = iso_time(timestamp)
    names = {"io.containerd.image.name": reference, "org.opencontainers.image.ref.name": reference}
    with tempfile.TemporaryDirectory(dir=out_dir, prefix=".layers-") as scratch:
        small_blobs = {}   # digest: bytes (configs, manifests, the nested index)
        layer_files = {}   # digest: (path of the gzipped layer, size)
        images = []
        for architecture, root in roots:
            layer_path = os.path.join(scratch, architecture)
            with open(layer_path, "wb") as layer:
                layer_digest, layer_size, diff_id, tar_size = write_layer(root, timestamp, layer)
            layer_files[layer_digest] = (layer_path, layer_size)
            config = image_config_blob(runtime, architecture, diff_id, created)
            config_digest = digest_of(config)
            manifest = json_blob({
                "schemaVersion": 2,
                "mediaType": MEDIA_MANIFEST,
                "config": {"mediaType": MEDIA_CONFIG, "digest": config_digest, "size": len(config)},
                "layers": [{"mediaType": MEDIA_LAYER, "digest": layer_digest, "size": layer_size}],
            })
            manifest_digest = digest_of(manifest)
            small_blobs[config_digest] = config
            small_blobs[manifest_digest] = manifest
            images.append({"architecture": architecture, "manifest": manifest_digest,
                           "manifest_size": len(manifest), "config": config_digest,
                           "layer": layer_digest, "layer_size": layer_size, "diff_id": diff_id,
                           "layer_tar_size": tar_size})

        def manifest_descriptor(image):
            return {"mediaType": MEDIA_MANIFEST, "digest": image["manifest"],
                    "size": image["manifest_size"],
                    "platform": {"architecture": image["architecture"], "os": "linux"}}

        if len(images) == 1:
            # One architecture: the manifest itself is named, and Docker's manifest.json points
            # at the same blobs.
            image = images[0]
            index = json_blob({"schemaVersion": 2, "mediaType": MEDIA_INDEX,
                               "manifests": [dict(manifest_descriptor(image), annotations=names)]})
            docker_manifest = json_blob([{"Config": blob_name(image["config"]), "RepoTags": [reference],
                                          "Layers": [blob_name(image["layer"])]}])
            index_digest = None
        else:
            # Several: the name is on one nested index of the per-architecture manifests, which
            # is what a registry serves for a multi-architecture tag; a runtime pulls or unpacks
            # the manifest of its own platform. Docker's manifest.json has no such notion (Docker
            # 25 and later read index.json), so it is left out.
            nested = json_blob({"schemaVersion": 2, "mediaType": MEDIA_INDEX,
                                "manifests": [manifest_descriptor(image) for image in images]})
            index_digest = digest_of(nested)
            small_blobs[index_digest] = nested
            index = json_blob({"schemaVersion": 2, "mediaType": MEDIA_INDEX,
                               "manifests": [{"mediaType": MEDIA_INDEX, "digest": index_digest,
                                              "size": len(nested), "annotations": names}]})
            docker_manifest = None

        with tempfile.NamedTemporaryFile(dir=out_dir, prefix=".archive-", delete=False) as partial:
            try:
                with tarfile.open(fileobj=partial, mode="w", format=tarfile.PAX_FORMAT) as tar:
                    add_bytes(tar, "oci-layout", json_blob({"imageLayoutVersion": "1.0.0"}), timestamp)
                    add_bytes(tar, "index.json", index, timestamp)
                    if docker_manifest is not None:
                        add_bytes(tar, "manifest.json", docker_manifest, timestamp)
                    for directory in ("blobs/", "blobs/sha256/"):
                        info = tarfile.TarInfo(directory)
                        info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, timestamp
                        tar.addfile(info)
                    for digest in sorted(small_blobs):
                        add_bytes(tar, blob_name(digest), small_blobs[digest], timestamp)
                    for digest in sorted(layer_files):
                        path, size = layer_files[digest]
                        info = tarfile.TarInfo(blob_name(digest))
                        info.size, info.mode, info.mtime = size, 0o644, timestamp
                        with open(path, "rb") as layer:
                            tar.addfile(info, layer)
                partial.flush()
                os.fchmod(partial.fileno(), 0o644)
                os.replace(partial.name, output)
            except BaseException:
                os.unlink(partial.name)
                raise
    if len(images) == 1:
        result = {"reference": reference}
        result.update({key: value for key, value in images[0].items()
                       if key not in ("architecture", "manifest_size")})
        return result
    return {"reference": reference, "index": index_digest,
            "images": [{key: value for key, value in image.items() if key != "manifest_size"}
                       for image in images],
            "layer_tar_size": sum(image["layer_tar_size"] for image in images)}


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
    parser.add_argument("--root", help="directory that becomes the image's /")
    parser.add_argument("--platform", action="append", default=[], metavar="ARCH=DIR",
                        help="an architecture's tree (repeatable, instead of --root): with more "
                             "than one, the archive holds an image index of one manifest each")
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
    parser.add_argument("--architecture",
                        help="OCI architecture name of --root (default: this machine's, e.g. amd64)")
    parser.add_argument("--timestamp", type=int, metavar="EPOCH",
                        help="creation time and mtime clamp (default: $SOURCE_DATE_EPOCH, "
                             "else the newest mtime in the tree)")
    args = parser.parse_args(argv)
    try:
        if args.timestamp is None:
            args.timestamp = default_timestamp()
        if args.timestamp is None:
            args.timestamp = max(newest_mtime(root) for _, root in parse_platforms(args))
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
