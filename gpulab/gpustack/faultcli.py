"""``gpulab fault inject|clear``: make one emulated GPU fail, and recover it as its owner would.

Both act through the Kubernetes API only (the node's ``gpulab.dev/gpu-faults`` annotation, :mod:`.faults`), so
they work on every engine and a lab's starting state calls :func:`inject` and :func:`clear` with its client.

Recovering follows what the real GPU allows:

* a GPU reset (``nvidia-smi -r``, the default of ``clear``) clears the GPU's faults (the volatile ECC counts
  with them), but cannot reach a GPU off the bus, and refuses while a process computes on the GPU;
* a node reboot (``--reboot``) clears every fault of the node, and with it the device plugin restarts: its pod
  on the node is deleted, its DaemonSet starts a new one. A reset alone leaves the plugin reporting the GPU
  Unhealthy (ListAndWatch never reports a device healthy again), until its pod restarts.
"""
from __future__ import annotations

import argparse
import sys

from .. import kubeclient
from . import faults
from .faults import Fault, FaultError

DEVICE_PLUGIN_APP = "nvidia-device-plugin-daemonset"


def _node(kube: kubeclient.Kube, name: str) -> dict:
    node = kube.try_get(kubeclient.NODES, name)
    if node is None:
        raise FaultError(f'node "{name}" not found; list the nodes with: kubectl get nodes')
    return node


def _check_gpu(node: dict, gpu: int) -> None:
    from .nodestate import node_gpus

    hardware = node_gpus(node)
    name = node["metadata"]["name"]
    if hardware is None:
        raise FaultError(f'node "{name}" has no GPUs; choose a GPU node (kubectl get nodes -L nvidia.com/gpu.product)')
    if not 0 <= gpu < hardware.count:
        raise FaultError(f'node "{name}" has GPUs 0 to {hardware.count - 1}; --gpu {gpu} is not one of them')


def _write(kube: kubeclient.Kube, node_name: str, change) -> tuple[Fault, ...]:
    """Read the node's faults, write ``change(recorded)`` over the version read, again on a conflict (the node agent
    writes the Node often); the faults recorded before."""
    conflicts = 0
    while True:
        node = _node(kube, node_name)
        recorded = faults.read(node["metadata"].get("annotations"))
        wanted = change(recorded)
        if wanted == recorded:
            return recorded
        try:
            kube.patch(kubeclient.NODES, node_name, {"metadata": {
                "resourceVersion": node["metadata"]["resourceVersion"],
                "annotations": {faults.FAULTS_ANNOTATION: faults.write(tuple(wanted))}}})
            return recorded
        except kubeclient.ApiException as exc:
            conflicts += 1
            if exc.status != 409 or conflicts == 8:
                raise


def inject(kube: kubeclient.Kube, node_name: str, gpu: int, xid: int | None = None, *, thermal: bool = False) -> Fault:
    """Record a fault on GPU ``gpu`` of ``node_name``: XID ``xid``, or a thermal slowdown."""
    if (xid is None) == (not thermal):
        raise FaultError("give one fault: --xid N or --thermal")
    if xid is not None:
        faults.check_xid(xid)
    _check_gpu(_node(kube, node_name), gpu)
    fault = Fault(gpu, xid, faults.now_rfc3339())
    recorded = _write(kube, node_name, lambda now: now if thermal and faults.thermal(now, gpu) else now + (fault,))
    if thermal and faults.thermal(recorded, gpu):
        return next(f for f in recorded if f.gpu == gpu and f.thermal)
    return fault


def _busy_pods(kube: kubeclient.Kube, node: dict, gpu: int) -> list[str]:
    """``namespace/pod`` of the containers computing on the GPU (a CUDA context is what a reset waits for)."""
    from .usage import node_usage

    name = node["metadata"]["name"]
    pods = kube.list(kubeclient.PODS, field_selector=f"spec.nodeName={name}").get("items") or []
    use = node_usage(node, pods)
    return sorted({f"{h.namespace}/{h.pod}" for d in (use.devices if use else ()) if d.gpu_index == gpu
                   for h in d.holders if h.busy})


def clear(kube: kubeclient.Kube, node_name: str, gpu: int | None = None, *, reboot: bool = False,
          namespace: str = "gpu-operator") -> tuple[Fault, ...]:
    """Recover from the faults: a reset of GPU ``gpu``, or (``reboot``) the node's reboot; the faults cleared."""
    node = _node(kube, node_name)
    if reboot:
        recorded = _write(kube, node_name, lambda now: ())
        plugins = kube.list(kubeclient.PODS, namespace, label_selector=f"app={DEVICE_PLUGIN_APP}",
                            field_selector=f"spec.nodeName={node_name}").get("items") or []
        for pod in plugins:
            kube.delete(kubeclient.PODS, pod["metadata"]["name"], namespace, grace_period=0)
        return recorded
    if gpu is None:
        raise FaultError("give the GPU to reset (--gpu INDEX), or --reboot to reboot the node")
    _check_gpu(node, gpu)
    if faults.off_the_bus(faults.read(node["metadata"].get("annotations")), gpu):
        raise FaultError(f"GPU {gpu} of node {node_name} has fallen off the bus (XID 79): a GPU reset cannot reach "
                         f"it; reboot the node: gpulab fault clear --node {node_name} --reboot")
    busy = _busy_pods(kube, node, gpu)
    if busy:
        raise FaultError(f"GPU {gpu} of node {node_name} is in use by {', '.join(busy)}; a GPU reset needs no "
                         "process on the GPU: delete those pods first (kubectl delete pod -n NAMESPACE NAME)")
    recorded = _write(kube, node_name, lambda now: tuple(f for f in now if f.gpu != gpu))
    return faults.on_gpu(recorded, gpu)


def _describe(fault: Fault) -> str:
    return "a thermal slowdown" if fault.thermal else f"XID {fault.xid} ({faults.XIDS[fault.xid]})"


def add_fault(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("fault", help="inject a fault into an emulated GPU, or recover from it")
    actions = p.add_subparsers(dest="action", required=True, metavar="inject|clear")
    inj = actions.add_parser("inject", help="make one GPU of a node fail (an XID, or a thermal slowdown)")
    inj.add_argument("--node", required=True, help="the node")
    inj.add_argument("--gpu", type=int, required=True, metavar="INDEX", help="the GPU's index on the node")
    kind = inj.add_mutually_exclusive_group(required=True)
    kind.add_argument("--xid", type=int, metavar="N",
                      help="the XID: 79 (fallen off the bus), 48 (double-bit ECC error), 31 (GPU memory page fault)")
    kind.add_argument("--thermal", action="store_true", help="a thermal slowdown")
    clr = actions.add_parser("clear", help="reset a GPU (nvidia-smi -r), or reboot its node")
    clr.add_argument("--node", required=True, help="the node")
    clr.add_argument("--gpu", type=int, metavar="INDEX", help="the GPU to reset")
    clr.add_argument("--reboot", action="store_true", help="reboot the node instead (clears every fault on it)")
    for parser in (inj, clr):
        parser.add_argument("--kubeconfig",
                            help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config, the gpulab cluster)")
        parser.add_argument("--kube-context", dest="context", help="kubeconfig context to use")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    kube = kubeclient.Kube.from_kubeconfig(kubeclient.resolve_kubeconfig(args.kubeconfig), args.context, "gpulab")
    try:
        if args.action == "inject":
            fault = inject(kube, args.node, args.gpu, args.xid, thermal=args.thermal)
            print(f"gpulab: GPU {fault.gpu} of node {args.node}: {_describe(fault)} since {fault.since}")
            return 0
        cleared = clear(kube, args.node, args.gpu, reboot=args.reboot)
    except FaultError as err:
        print(f"gpulab: {err}", file=sys.stderr)
        return 1
    except kubeclient.ApiException as exc:
        print(f"gpulab: {kubeclient.error_message(exc)}", file=sys.stderr)
        return 1
    what = ", ".join(_describe(f) for f in cleared) or "no fault"
    if args.reboot:
        print(f"gpulab: node {args.node} rebooted: cleared {what}; the device plugin restarts")
    else:
        print(f"gpulab: GPU {args.gpu} of node {args.node} reset: cleared {what}; the device plugin still reports it "
              f"Unhealthy until its pod restarts (kubectl delete pod -n gpu-operator -l app={DEVICE_PLUGIN_APP} "
              f"--field-selector spec.nodeName={args.node})")
    return 0
