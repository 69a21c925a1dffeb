"""Pod specs written for HAMi's Kunlunxin vXPU, for the scenario of the chart's hami.compat.

hami/default_use.yaml and hami/allocate_exclusive.yaml are written here in the form HAMi's
Kunlunxin vXPU examples use (github.com/Project-HAMi/HAMi, examples/kunlun/; the user guide,
docs/userguide/kunlunxin-device/ of Project-HAMi/website): the same resource names, values, image
and pull policy, in our own files. The scenario applies them as they are. default_use asks one
vXPU with 24576 MiB of its card, allocate_exclusive one vXPU without memory, which HAMi makes a
whole card.
"""

import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def example(name):
    with open(os.path.join(HERE, "hami", name), encoding="utf-8") as f:
        return f.read()


DEFAULT_USE = example("default_use.yaml")
ALLOCATE_EXCLUSIVE = example("allocate_exclusive.yaml")

# The image both name, which the node has no registry for: the scenario tags its busybox so.
IMAGE = "docker.io/library/ubuntu:22.04"

VXPU = "kunlunxin.com/vxpu"
MEMORY = "kunlunxin.com/vxpu-memory"


def pod(name, containers, init_containers=None, annotations=None):
    """A bare pod in HAMi's form, for the server's dry run (never scheduled)."""
    metadata = {"name": name, "namespace": "default"}
    if annotations:
        metadata["annotations"] = annotations
    spec = {"containers": containers}
    if init_containers:
        spec["initContainers"] = init_containers
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec})


def container(name, limits):
    return {"name": name, "image": IMAGE, "resources": {"limits": limits}}


def rewrites(card_mib):
    """(pod, {container: units of 1 GiB it must end with}) for the mapping on a node whose cards
    have card_mib MiB: HAMi's rounding to 24576 and 49152 MiB (its P800 quarter and half card)
    where that is below a card, else the whole card; several containers and an init container
    each mapped on their own, a container without HAMi's names left alone."""
    whole = card_mib // 1024
    return [
        (pod("hami-small", [container("main", {VXPU: "1", MEMORY: "4000"})]), {"main": "24"}),
        (pod("hami-above-steps", [container("main", {VXPU: "1", MEMORY: "30000"})]),
         {"main": str(whole if card_mib <= 49152 else 48)}),
        (pod("hami-several", [container("a", {VXPU: "1", MEMORY: "1024"}), container("b", {VXPU: "1"}),
                              container("plain", {"cpu": "10m"})],
             init_containers=[container("init", {VXPU: "1", MEMORY: "24576"})],
             annotations={"hami.io/use-xpu-uuid": "", "hami.io/gpu-scheduler-policy": "binpack"}),
         {"init": "24", "a": "24", "b": str(whole)}),
    ]


def refusals(card_mib):
    """(pod, what the refusal must say, or a tuple of what it may say) for requests that have no
    equivalent here."""
    whole = card_mib // 1024
    huge = "9" * 40
    return [
        (pod("hami-two-cards", [container("main", {VXPU: "2", MEMORY: "24576"})]),
         "kunlunxin.com/vxpu: 2 asks a share of each of 2 cards"),
        (pod("hami-zero", [container("main", {VXPU: "0"})]),
         "kunlunxin.com/vxpu must be 1 (one vXPU, a share of one card), not 0"),
        (pod("hami-huge-count", [container("main", {VXPU: "1e30"})]),
         "kunlunxin.com/vxpu must be 1 (one vXPU, a share of one card), not 1e30"),
        (pod("hami-above-card", [container("main", {VXPU: "1", MEMORY: str(card_mib + 1)})]),
         f"kunlunxin.com/vxpu-memory must be a whole number of MiB from 1 to {card_mib} (a whole card), "
         f"not {card_mib + 1}"),
        (pod("hami-huge-memory", [container("main", {VXPU: "1", MEMORY: "1e30"})]),
         f"from 1 to {card_mib} (a whole card), not 1e30"),
        # The API server's own validation, which runs between the two policies.
        (pod("hami-negative", [container("main", {VXPU: "1", MEMORY: "-1"})]),
         "must be greater than or equal to 0"),
        (pod("hami-fraction", [container("main", {VXPU: "1", MEMORY: "24576.5"})]),
         ("must be an integer", "must be a whole number of MiB")),
        # 1.37.2 keeps this number (9...9500m) and its validation refuses it as no integer;
        # 1.38.0-beta.0 reads it as 10e39, an integer, which the policy then refuses.
        (pod("hami-not-whole", [container("main", {VXPU: "1", MEMORY: huge + ".5"})]),
         ("must be an integer", f"from 1 to {card_mib} (a whole card), not 10e39")),
        (pod("hami-cores", [container("main", {VXPU: "1", MEMORY: "1024", "kunlunxin.com/vxpu-cores": "50"})]),
         "no compute share (hami.compat): container main asks kunlunxin.com/vxpu-cores"),
        (pod("hami-memory-alone", [container("main", {MEMORY: "24576"})]),
         f"container main asks 24576, more than a whole card's {whole} units; "
         "HAMi's MiB need kunlunxin.com/vxpu: 1 beside them"),
        (pod("hami-card-chosen", [container("main", {VXPU: "1", MEMORY: "24576"})],
             annotations={"hami.io/use-xpu-uuid": "0000:3b:00.0"}),
         "the annotation hami.io/use-xpu-uuid chooses cards"),
        (pod("hami-mutex", [container("main", {VXPU: "1"})],
             annotations={"hami.io/gpu-scheduler-policy": "mutex"}),
         "hami.io/gpu-scheduler-policy mutex (an idle card) cannot be honoured here"),
        (pod("hami-one-of-two", [container("fine", {VXPU: "1", MEMORY: "24576"}),
                                 container("wide", {VXPU: "3"})]),
         "container wide: kunlunxin.com/vxpu: 3 asks a share of each of 3 cards"),
        (pod("hami-init", [container("main", {"cpu": "10m"})],
             init_containers=[container("init", {VXPU: "4"})]),
         "container init: kunlunxin.com/vxpu: 4"),
    ]
