#!/usr/bin/env python3
"""README.md's "Cards for virtual machines" against the code, since its blocks cannot run here
(no KubeVirt, no IOMMU-capable Kunlunxin host):

- the KubeVirt CR permits the resource the device plugin serves (common/names.h), left to it
  (externalResourceProvider: true), with a PCI vendor selector of Kunlunxin's ids
  (xpud/backends/pci_ids.h) and the HostDevices feature gate;
- the VMI asks for a permitted resource;
- the variable the README names is the one KubeVirt makes from that resource name (upper case,
  '/' and '.' made '_': ResourceNameToEnvVar with prefix PCI_RESOURCE) and the one the device
  plugin and the CDI spec set (names.h's pci_resource_env, checked in vfio_resource_test);
- the xpuctl commands it shows are xpuctl's;
- the DRA block: its claim asks for the chart's VFIO DeviceClass (which selects on the attribute
  the driver publishes, slice_content.h) with a selector over an attribute the driver publishes,
  and its VMI names that claim and request;
- the drop-in it names is the one docs/examples ships.

Usage: readme_vfio_test.py SOURCE_DIR
"""
import re
import sys
import unittest

import yaml

from markdown_text import fenced_blocks, read_file, section

SOURCE_DIR = sys.argv.pop(1) if len(sys.argv) > 1 else "."


def read(path):
    return read_file(SOURCE_DIR, path)


def blocks(text, language):
    return fenced_blocks(text, (language,))


def kubevirt_env_name(resource):
    return "PCI_RESOURCE_" + resource.upper().replace("/", "_").replace(".", "_")


class ReadmeVfioSection(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.text = section(read("README.md"), "Cards for virtual machines")
        names = read("common/names.h")
        vfio = names[names.index("namespace vfio {"):names.index("}  // namespace vfio")]
        cls.resource = re.search(r'kResourceName = "([^"]+)"', vfio).group(1)
        cls.cdi_kind = re.search(r'kCdiKind = "([^"]+)"', vfio).group(1)
        cls.cdi_file = re.search(r'kCdiFile = "([^"]+)"', vfio).group(1)
        ids = read("xpud/backends/pci_ids.h")
        cls.vendor = int(re.search(r"kVendorKunlunxin = (0x[0-9a-f]+)", ids).group(1), 16)
        cls.devices = {int(d, 16) for d in re.findall(r"kDevice\w+ = (0x[0-9a-f]+)", ids)}
        documents = [d for block in blocks(cls.text, "yaml") for d in yaml.safe_load_all(block)]
        cls.all_of_kind = {}
        for document in documents:
            cls.all_of_kind.setdefault(document["kind"], []).append(document)
        # The device plugin's VMI: the first; the DRA one asks for a claim.
        cls.by_kind = {kind: found[0] for kind, found in cls.all_of_kind.items()}

    def test_the_kubevirt_cr_permits_the_device_plugins_resource(self):
        configuration = self.by_kind["KubeVirt"]["spec"]["configuration"]
        self.assertIn("HostDevices", configuration["developerConfiguration"]["featureGates"])
        permitted = configuration["permittedHostDevices"]["pciHostDevices"]
        self.assertTrue(permitted)
        for entry in permitted:
            self.assertEqual(entry["resourceName"], self.resource)
            self.assertIs(entry["externalResourceProvider"], True)
            vendor, device = (int(part, 16) for part in entry["pciVendorSelector"].split(":"))
            self.assertEqual(vendor, self.vendor)
            self.assertIn(device, self.devices)

    def test_the_vmi_asks_for_a_permitted_resource(self):
        permitted = {e["resourceName"] for e in
                     self.by_kind["KubeVirt"]["spec"]["configuration"]["permittedHostDevices"]["pciHostDevices"]}
        host_devices = self.by_kind["VirtualMachineInstance"]["spec"]["domain"]["devices"]["hostDevices"]
        self.assertTrue(host_devices)
        for device in host_devices:
            self.assertIn(device["deviceName"], permitted)

    def test_the_variable_is_kubevirts_for_the_resource(self):
        name = kubevirt_env_name(self.resource)
        self.assertEqual(name, "PCI_RESOURCE_KUNLUNXIN_COM_XPU_VFIO")
        self.assertIn(f"`{name}=<addresses>`", self.text)
        # A '-' in the resource would stay in the variable's name: no shell could read it.
        self.assertRegex(name, r"^[A-Z0-9_]+$")
        self.assertIn(f"kind `{self.cdi_kind}`", self.text)
        self.assertIn(f"/var/run/cdi/{self.cdi_file}", self.text)

    def test_the_commands_are_xpuctls(self):
        main = read("xpuctl/main.cpp")
        self.assertIn('Command{"vfio", "list | bind TARGET | unbind TARGET"', main)
        for line in blocks(self.text, "sh")[0].splitlines():
            command = line.split("#")[0].split()
            self.assertEqual(command[:2], ["xpuctl", "vfio"], line)
            self.assertIn(command[2], ("list", "bind", "unbind"), line)
            self.assertEqual(len(command), 3 if command[2] == "list" else 4, line)

    def test_the_dra_claim_asks_for_the_vfio_class_and_the_vmi_uses_it(self):
        chart = read("charts/xpu-k8s-shim/templates/deviceclass.yaml")
        content = read("k8s-shim/dra/slices/slice_content.h")
        vfio_attribute = re.search(r'kVfio = "([^"]+)"', content).group(1)
        published = set(re.findall(r'= "([A-Za-z]+)";', content))
        self.assertIn("name: vfio.xpu.kunlunxin.com", chart)
        self.assertIn(f'has(device.attributes["xpu.kunlunxin.com"].{vfio_attribute})', chart)
        template, = self.all_of_kind["ResourceClaimTemplate"]
        request, = template["spec"]["spec"]["devices"]["requests"]
        self.assertEqual(request["exactly"]["deviceClassName"], "vfio.xpu.kunlunxin.com")
        for selector in request["exactly"].get("selectors", []):
            for attribute in re.findall(r'device\.attributes\["xpu\.kunlunxin\.com"\]\.(\w+)',
                                        selector["cel"]["expression"]):
                self.assertIn(attribute, published)
        vmi = next(v for v in self.all_of_kind["VirtualMachineInstance"] if "resourceClaims" in v["spec"])
        claim, = vmi["spec"]["resourceClaims"]
        self.assertEqual(claim["resourceClaimTemplateName"], template["metadata"]["name"])
        device, = vmi["spec"]["domain"]["devices"]["hostDevices"]
        self.assertEqual(device["claimRequest"], {"claimName": claim["name"], "requestName": request["name"]})
        self.assertIn("`HostDevicesWithDRA`", self.text)

    def test_the_drop_in_it_names_is_shipped(self):
        link = re.search(r"\]\((docs/examples/xpud\.service\.d/[^)]+)\)", self.text).group(1)
        self.assertIn("DeviceAllow=char-vfio rw", read(link))
        self.assertIn(f"`/etc/systemd/system/xpud.service.d/{link.rsplit('/', 1)[1]}`", self.text)

    def test_it_says_what_is_unproven(self):
        self.assertIn("**Unproven here:**", self.text)


if __name__ == "__main__":
    unittest.main(verbosity=2)
