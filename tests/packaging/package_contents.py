"""What each binary package must install, the same for .deb and .rpm except for where the
distribution keeps systemd units."""

import subprocess


def _systemd_unit_dir(fallback):
    """Where this machine's systemd.pc puts units, as debian/rules and the CMake build ask it."""
    try:
        found = subprocess.run(["pkg-config", "--variable=systemdsystemunitdir", "systemd"],
                               capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        found = ""
    return found or fallback


DEB_UNIT_DIR = _systemd_unit_dir("/lib/systemd/system")
RPM_UNIT_DIR = "/usr/lib/systemd/system"


def lib_dir(unit_dir):
    """/lib on Debian 12, /usr/lib on RPM distributions: where udev rules and generators go too."""
    return unit_dir[: -len("/systemd/system")]


# The role programs xpu-k8s-shim runs, each its own executable (k8s-shim/role_program.h).
SHIM_ROLES = ("device-plugin", "exporter", "token-sync", "dra-driver", "validate")


def expected_files(unit_dir):
    return {
        "xpud": {
            "/usr/sbin/xpud",
            "/usr/bin/xpuctl",
            "/usr/share/man/man8/xpud.8",
            "/usr/share/man/man1/xpuctl.1",
            f"{unit_dir}/xpud.service",
            "/usr/libexec/xpud/xpud-api-proxy",
            "/usr/share/man/man8/xpud-api-proxy.8",
            f"{unit_dir}/xpud-api-proxy.socket",
            f"{unit_dir}/xpud-api-proxy-sriov.socket",
            f"{unit_dir}/xpud-api-proxy.service",
            f"{lib_dir(unit_dir)}/systemd/system-generators/xpud-generator",
            f"{lib_dir(unit_dir)}/udev/rules.d/60-xpud.rules",
            "/usr/lib/sysusers.d/xpud-api.conf",
            "/usr/share/dbus-1/system.d/com.kunlunxin.xpud1.conf",
            "/usr/share/dbus-1/interfaces/com.kunlunxin.xpud1.Manager.xml",
            "/usr/share/dbus-1/interfaces/com.kunlunxin.xpud1.Device.xml",
            "/usr/share/dbus-1/interfaces/com.kunlunxin.xpud1.Simulator.xml",
            "/usr/share/dbus-1/interfaces/com.kunlunxin.xpud1.Vfio.xml",
            "/usr/share/xpud/topology.quirk",
            "/etc/xpud",
            "/etc/xpud/xpud.conf",
            "/etc/xpud/xpud.conf.d",
        },
        "xpu-k8s-shim": {
            "/usr/bin/xpu-k8s-shim",
            *(f"/usr/libexec/xpu-k8s-shim/{role}" for role in SHIM_ROLES),
            "/usr/share/man/man1/xpu-k8s-shim.1",
        },
    }



def without_compression(path):
    """Manual pages are compressed on the way into a package (gzip on Debian, the
    distribution's choice in rpm); compare them by their uncompressed names."""
    if path.startswith("/usr/share/man/"):
        for suffix in (".gz", ".xz", ".bz2", ".zst"):
            if path.endswith(suffix):
                return path[: -len(suffix)]
    return path


def verbatim_files(unit_dir):
    """Installed files of the xpud package that must be byte for byte the tree's."""
    return {
        f"{unit_dir}/xpud.service": "systemd/xpud.service",
        f"{unit_dir}/xpud-api-proxy.socket": "systemd/xpud-api-proxy.socket",
        f"{unit_dir}/xpud-api-proxy-sriov.socket": "systemd/xpud-api-proxy-sriov.socket",
        f"{unit_dir}/xpud-api-proxy.service": "systemd/xpud-api-proxy.service",
        f"{lib_dir(unit_dir)}/systemd/system-generators/xpud-generator": "systemd/xpud-generator",
        f"{lib_dir(unit_dir)}/udev/rules.d/60-xpud.rules": "systemd/60-xpud.rules",
        "/usr/lib/sysusers.d/xpud-api.conf": "systemd/xpud-api.sysusers",
        "/usr/share/dbus-1/system.d/com.kunlunxin.xpud1.conf": "dbus/com.kunlunxin.xpud1.conf",
        "/etc/xpud/xpud.conf": "systemd/xpud.conf",
        "/usr/share/xpud/topology.quirk": "xpud/backends/topology.quirk",
    }


CONFFILES = {"/etc/xpud/xpud.conf"}

# Where each distribution keeps licences and documentation, and rpm's build-id links: not
# compared between the formats.
DISTRIBUTION_SPECIFIC = ("/usr/share/doc/", "/usr/share/licenses/", "/usr/lib/.build-id")
