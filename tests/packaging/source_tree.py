"""The project's source tree as the packaging tests hand it to dpkg-buildpackage and rpmbuild:
the files git would put in a release (tracked plus new, never ignored ones such as build
directories), so a test sees uncommitted work as well as what CI sees in a fresh clone."""

import os
import re
import shutil
import subprocess
import tarfile


def project_version(source_dir):
    with open(os.path.join(source_dir, "CMakeLists.txt"), encoding="utf-8") as f:
        match = re.search(r"project\(\s*xpud\s+VERSION\s+([0-9.]+)", f.read())
    if not match:
        raise RuntimeError(f"{source_dir}/CMakeLists.txt: no project(xpud VERSION x.y.z)")
    return match.group(1)


def release_files(source_dir):
    if os.path.isdir(os.path.join(source_dir, ".git")):
        listing = subprocess.run(["git", "-C", source_dir, "ls-files", "-z", "--cached", "--others",
                                  "--exclude-standard"], capture_output=True, check=True).stdout
        names = sorted({n.decode() for n in listing.split(b"\0") if n})
        # Deleted but not yet committed files are still listed as cached.
        return [n for n in names if os.path.lexists(os.path.join(source_dir, n))]
    names = []
    for root, dirs, files in os.walk(source_dir):
        rel_root = os.path.relpath(root, source_dir)
        dirs[:] = [d for d in dirs if not (rel_root == "." and (d.startswith("build") or d.startswith(".")))]
        names += [os.path.normpath(os.path.join(rel_root, f)) for f in files]
    return sorted(names)


def copy_tree(source_dir, destination):
    for name in release_files(source_dir):
        target = os.path.join(destination, name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy2(os.path.join(source_dir, name), target, follow_symlinks=False)


def write_tarball(source_dir, path, prefix):
    with tarfile.open(path, "w:gz") as tar:
        for name in release_files(source_dir):
            tar.add(os.path.join(source_dir, name), arcname=f"{prefix}/{name}", recursive=False)
