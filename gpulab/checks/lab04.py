"""Lab 04, sharing a GPU: time-slicing the A100 node, MIG mixed on the H100 node, a pod on a slice, choosing one;
then MPS on the A100 node, and when to choose which of the three."""
from __future__ import annotations

from functools import cache

from .answers import MultipleChoice, choice, normalise
from .gpus import (COUNT, GPU, MIG_CONFIG, MIG_RESOURCE_PREFIX, MIG_STATE, MIG_STRATEGY, PRODUCT, REPLICAS, SHARING,
                   allocatable, labels, name, nodes_of_family, nvidia_allocatable)
from .kube import is_running, node_name, requested_resources, state_text
from ..gpustack.hardware import gpu_model
from ..gpustack.latency import device_plugin_thread_percentage, request_ms_default
from .registry import check
from .settled import gpu_stack_settling
from .result import Result, failed, passed

TIME_SLICES = 4
MIG_LAYOUT = "all-balanced"
MIG_SLICE = "nvidia.com/mig-1g.10gb"
SHARED = "nvidia.com/gpu.shared"

# lab04.choose_sharing: the question, and the facts the verdict is computed from with the latency model.
CHOOSE_SHARING = {
    "gpu": "H100",
    "tenants": 4,
    "isolation_required": True,
    "p99_budget_ms": 5.0,
    "mig_profile": "1g.10gb",
    "question": ("Four teams, each its own tenant that must not see the others' data, serve one model each on a "
                 "single H100 80GB. Every team is busy all day, a request takes the calibration request's time "
                 f"({request_ms_default():.2f} ms alone on a whole H200), and each team's p99 budget "
                 "is 5 ms. Do you share the GPU with MIG (one 1g.10gb slice per team) or with time-slicing "
                 "(4 replicas)? Answer 'MIG' or 'time-slicing'."),
}
ISOLATES = {"mig": True, "time-slicing": False}   # memory and fault isolation between tenants
SHARING_CHOICES = {
    "mig": ("MIG", "multi-instance gpu", "nvidia mig", "mig slices", "mig slice", "a mig slice", "mig partitions"),
    "time-slicing": ("time-slicing", "time slicing", "timeslicing", "time-sliced", "time sliced", "time-slice",
                     "time slice", "timeslice"),
}


def _no_family(wanted: str) -> Result:
    return failed(f"no node's {PRODUCT} names an {wanted.upper()}: the GPU Operator is not running",
                  "this lab starts with the GPU Operator installed: `gpulab lab reset lab04-sharing`")


def _only_the_a100(entry: str) -> str:
    """The hint when the H100 is shared too. Under the GPU Operator config-manager falls back to the empty config
    (FALLBACK_STRATEGIES=empty), so only the label or devicePlugin.config.default can share an unlabelled node."""
    return ("an entry applies to the nodes whose nvidia.com/device-plugin.config label names it, and the "
            "ClusterPolicy's devicePlugin.config.default, when set, to every other node; without one, those nodes "
            f"keep whole GPUs (an entry called `default` is not picked by itself): select the {entry} entry on the "
            "A100 node alone, and leave devicePlugin.config.default unset or naming an entry that does not share")


def _time_sliced(node: dict) -> list[str]:
    """What shows that a node's GPUs are time-sliced (empty when they are whole): GFD's labels, the resources."""
    node_labels = labels(node)
    signs = []
    if node_labels.get(SHARING) == "time-slicing":
        signs.append(f"{SHARING}=time-slicing")
    if node_labels.get(REPLICAS) not in (None, "0", "1"):
        signs.append(f"{REPLICAS}={node_labels.get(REPLICAS)}")
    if (node_labels.get(PRODUCT) or "").endswith("-SHARED"):
        signs.append(f"{PRODUCT}={node_labels.get(PRODUCT)}")
    if allocatable(node, SHARED):
        signs.append(f"{allocatable(node, SHARED)} {SHARED}")
    gpus = int(node_labels.get(COUNT) or 0)
    if gpus and allocatable(node) > gpus:
        signs.append(f"{allocatable(node)} {GPU} for its {gpus} GPUs")
    return signs


@check("lab04.timeslicing_a100", "A100 node time-sliced 4 ways (16 nvidia.com/gpu, product -SHARED), H100 node whole",
       settles=gpu_stack_settling)
def timeslicing_a100(cluster) -> Result:
    all_nodes = cluster.nodes()
    nodes = nodes_of_family(all_nodes, "a100")
    if not nodes:
        return _no_family("a100")
    hint = ("time-slicing is a device plugin config: a ConfigMap in the operator's namespace named by the "
            "ClusterPolicy's devicePlugin.config, picked per node by the nvidia.com/device-plugin.config label")
    for node in nodes:
        node_labels, node_name_ = labels(node), name(node)
        strategy, replicas = node_labels.get(SHARING), node_labels.get(REPLICAS)
        if strategy != "time-slicing":
            return failed(f"A100 node {node_name_} is not time-sliced ({SHARING}={strategy or 'unset'})", hint)
        if allocatable(node, SHARED) and not allocatable(node):
            return failed(f"A100 node {node_name_} advertises {SHARED}: the config renames the shared resource "
                          f"(renameByDefault: true), and the exercise keeps the name {GPU}", hint)
        if replicas != str(TIME_SLICES):
            return failed(f"A100 node {node_name_} is time-sliced {replicas} ways ({REPLICAS}={replicas}); the "
                          f"exercise asks for {TIME_SLICES}", hint)
    for node in nodes_of_family(all_nodes, "h100"):
        signs = _time_sliced(node)
        if signs:
            return failed(f"the H100 node {name(node)} is time-sliced too ({', '.join(signs)}); the exercise "
                          "time-slices the A100 node only and leaves the H100's GPUs whole",
                          _only_the_a100("time-slicing"))
    summary = ", ".join(f"{name(n)} {allocatable(n)} {GPU} ({labels(n).get(PRODUCT)})" for n in nodes)
    whole = ", ".join(f"{name(n)} {labels(n).get(COUNT)} whole GPUs" for n in nodes_of_family(all_nodes, "h100"))
    return passed(f"A100 time-sliced {TIME_SLICES} ways: {summary}" + (f"; H100 untouched: {whole}" if whole else ""))


# lab04.latency_sensitive: the source's mistake "time-slicing for latency-sensitive serving", on exercise 1's A100.
A100_MODEL = "A100-SXM4-40GB"
LATENCY_BUDGET_MS = 5.0


def _a100_p99(neighbours: int) -> float:
    from ..gpustack.latency import expected_latency

    return expected_latency("time-slicing", neighbours=neighbours, model=A100_MODEL)["p99_ms"]


@cache
def latency_sensitive_question() -> MultipleChoice:
    """The question, its numbers from the latency model (computed on first use: the model loads the GPU catalog)."""
    return MultipleChoice(
        options={
            "a": f"p99 stays near {_a100_p99(0):.1f} ms: each replica has a quarter of the GPU to itself.",
            "b": "p99 rises slightly yet stays within the budget: inference pods get priority.",
            "c": f"p99 climbs to about {_a100_p99(TIME_SLICES - 1):.1f} ms, over budget: each busy neighbour adds "
                 "a slice.",
            "d": "The pod is refused: a time-sliced GPU cannot serve inference at all.",
        },
        why_not={
            "a": "time-sliced replicas do not own a quarter of the GPU: they take turns on all of it, and a busy "
                 "neighbour's turn is time your request waits",
            "b": "the device plugin only advertises replicas; nothing in time-slicing knows priorities or latency "
                 "budgets",
            "d": f"a replica is an ordinary {GPU} to the scheduler: the pod runs, only slowly at the tail",
        },
        hint=f"read the time-slicing p99 at {TIME_SLICES - 1} busy neighbours off "
             f"widgets.latency_figure(model=\"{A100_MODEL}\", max_neighbours={TIME_SLICES - 1}, "
             f"p99_budget_ms={LATENCY_BUDGET_MS:g})",
        key="c",
        because="Time-slicing is the wrong way to share a GPU with latency-sensitive serving; give it a MIG slice "
                "or a GPU of its own.",
    )


@check("lab04.latency_sensitive", "answer: a latency-sensitive service on a time-sliced GPU with busy neighbours",
       answer="latency_sensitive", question=latency_sensitive_question)
def latency_sensitive(cluster, answer) -> Result:
    return latency_sensitive_question().judge(answer)


@check("lab04.mig_mixed_h100", "H100 node all-balanced under the mixed strategy, state success",
       settles=gpu_stack_settling)
def mig_mixed_h100(cluster) -> Result:
    nodes = nodes_of_family(cluster.nodes(), "h100")
    if not nodes:
        return _no_family("h100")
    for node in nodes:
        node_labels, node_name_ = labels(node), name(node)
        layout, state = node_labels.get(MIG_CONFIG), node_labels.get(MIG_STATE)
        if layout in (None, "all-disabled"):
            return failed(f"MIG is off on H100 node {node_name_} ({MIG_CONFIG}={layout or 'unset'})",
                          f"the MIG manager applies the layout the node's {MIG_CONFIG} label names")
        if layout != MIG_LAYOUT:
            return failed(f"H100 node {node_name_} is partitioned as {layout}; the exercise asks for {MIG_LAYOUT}",
                          f"relabel the node (`kubectl label node ... {MIG_CONFIG}=... --overwrite`)")
        if state == "failed":
            return failed(f"the MIG manager failed to apply {layout} on {node_name_} ({MIG_STATE}=failed)",
                          "`kubectl logs -n gpu-operator` of the nvidia-mig-manager pod on that node says why")
        strategy = node_labels.get(MIG_STRATEGY)
        if strategy != "mixed":
            return failed(f"H100 node {node_name_} runs MIG strategy {strategy or 'unset'}: with single, every "
                          "slice is advertised as nvidia.com/gpu and a balanced layout cannot be advertised; the "
                          "exercise asks for mixed", "the strategy is the ClusterPolicy's spec.mig.strategy")
        slices = {k: v for k, v in nvidia_allocatable(node).items() if k.startswith(MIG_RESOURCE_PREFIX) and v}
    summary = ", ".join(f"{k}: {v}" for k, v in slices.items())
    return passed(f"H100 node {name(nodes[-1])} runs {MIG_LAYOUT} under the mixed strategy ({summary})")


@check("lab04.mig_pod_running", "a pod on a nvidia.com/mig-1g.10gb slice, Running")
def mig_pod_running(cluster) -> Result:
    pods = [(p, requested_resources(p)) for p in cluster.pods()]
    on_slice = [p for p, wanted in pods if wanted.get(MIG_SLICE)]
    running = [p for p in on_slice if is_running(p)]
    if running:
        pod = running[0]
        return passed(f"pod {pod['metadata']['namespace']}/{name(pod)} runs on a 1g.10gb MIG slice on "
                      f"{node_name(pod)}")
    if on_slice:
        pod = on_slice[0]
        return failed(f"pod {name(pod)} requests {MIG_SLICE} but is {state_text(pod)}",
                      f"`kubectl describe pod {name(pod)}`")
    other = [(p, k) for p, wanted in pods for k in wanted if k.startswith(MIG_RESOURCE_PREFIX)]
    if other:
        pod, resource = other[0]
        return failed(f"pod {name(pod)} requests {resource}, not a 1g.10gb slice", "request the 1g.10gb resource")
    return failed(f"no pod requests {MIG_SLICE}",
                  "under the mixed strategy each MIG profile is a resource of its own, requested in "
                  "resources.limits like nvidia.com/gpu")


def _sharing_facts() -> dict[str, dict]:
    from ..gpustack.latency import expected_latency

    s = CHOOSE_SHARING
    return {
        "time-slicing": expected_latency("time-slicing", neighbours=s["tenants"] - 1, model=s["gpu"]),
        "mig": expected_latency("mig", mig_profile=s["mig_profile"], model=s["gpu"]),
    }


def sharing_problems(mode: str) -> list[str]:
    """Why ``mode`` does not suit the scenario (empty: it does): over the p99 budget, or no isolation when needed."""
    p99, budget = _sharing_facts()[mode]["p99_ms"], CHOOSE_SHARING["p99_budget_ms"]
    problems = []
    if p99 > budget:
        problems.append(f"its p99 in the latency model is about {p99:.1f} ms, over the {budget:g} ms budget"
                        + (" (time-slicing latency-sensitive serving is the mistake: each busy neighbour adds "
                           "about one time slice to the tail)" if mode == "time-slicing" else ""))
    if CHOOSE_SHARING["isolation_required"] and not ISOLATES[mode]:
        problems.append("time-sliced replicas share the GPU's memory, with no isolation between tenants")
    return problems


@check("lab04.choose_sharing", "answer: MIG or time-slicing for the scenario's latency budget and tenancy",
       answer="sharing_choice")
def choose_sharing(cluster, answer) -> Result:
    picked = choice(answer, SHARING_CHOICES)
    hint = ("read each mode's p99 off widgets.latency_figure(model=\"H100\", max_neighbours=3, p99_budget_ms=5) "
            "(time-slicing: the other teams are busy neighbours; MIG: the 1g.10gb slice) and compare it with the "
            "budget; then ask what each mode isolates")
    if picked is None:
        return failed(f"{normalise(answer)!r} is neither MIG nor time-slicing", hint)
    problems = sharing_problems(picked)
    if problems:
        return failed(f"{picked} does not fit this scenario: " + "; ".join(problems), hint)
    p99 = _sharing_facts()[picked]["p99_ms"]
    isolation = ", and each tenant gets its own memory, SMs and L2" if ISOLATES[picked] else ""
    return passed(f"right: {picked} keeps p99 at about {p99:.1f} ms, within the "
                  f"{CHOOSE_SHARING['p99_budget_ms']:g} ms budget{isolation}")


CHECK_YOURSELF = MultipleChoice(
    options={
        "a": "Each slice owns its memory, compute and cache, isolated in hardware.",
        "b": "More pods per GPU than time-slicing can give, at the same latency.",
        "c": "Nothing: both share one GPU in software, by taking turns on it.",
        "d": "It works on every NVIDIA GPU, while time-slicing needs an A100 or H100.",
    },
    why_not={
        "b": "time-slicing gives as many replicas as the config says; MIG gives at most seven slices of an H100",
        "c": "taking turns is time-slicing only: MIG partitions the GPU in hardware, each slice with its own memory "
             "and SMs",
        "d": "the other way round: MIG needs MIG-capable GPUs (A100, H100 and newer), time-slicing works on any "
             "GPU the device plugin supports",
    },
    hint="compare what `nvidia-smi -L` shows inside a pod on a MIG slice and on a time-sliced replica, and what "
         "each isolates",
    key="a",
    because="So one tenant cannot touch or crowd another's; time-slicing shares one GPU in software, with weaker "
            "isolation.",
)


@check("lab04.check_yourself", "check yourself: what MIG gives you that time-slicing does not",
       answer="check_yourself", question=CHECK_YOURSELF)
def check_yourself(cluster, answer) -> Result:
    return CHECK_YOURSELF.judge(answer)


# lab04.mps_a100: MPS, the device plugin's third strategy, on the A100 node; refused under the mixed MIG strategy.
MPS_REPLICAS = 4
MPS_CAPABLE = "nvidia.com/mps.capable"
CLUSTERPOLICY = ("nvidia.com", "v1", "clusterpolicies")


def _mig_strategy(cluster) -> str | None:
    policies = cluster.custom_objects(*CLUSTERPOLICY)
    return ((policies[0].get("spec") or {}).get("mig") or {}).get("strategy") if policies else None


def _shared(node: dict) -> list[str]:
    """What shows that a node's GPUs are shared in any way (time-slicing or MPS); empty when they are whole."""
    node_labels = labels(node)
    signs = _time_sliced(node)
    if node_labels.get(SHARING) == "mps":
        signs.insert(0, f"{SHARING}=mps")
    if node_labels.get(MPS_CAPABLE) == "true":
        signs.append(f"{MPS_CAPABLE}=true")
    return signs


@check("lab04.mps_a100", "A100 node shared with MPS 4 ways (16 nvidia.com/gpu, sharing-strategy mps), H100 node whole",
       settles=gpu_stack_settling)
def mps_a100(cluster) -> Result:
    all_nodes = cluster.nodes()
    nodes = nodes_of_family(all_nodes, "a100")
    if not nodes:
        return _no_family("a100")
    hint = ("MPS is a device plugin config like time-slicing (`sharing.mps` instead of `sharing.timeSlicing`): add an "
            "entry to the ConfigMap the ClusterPolicy names and select it with the A100 node's "
            "nvidia.com/device-plugin.config label")
    for node in nodes:
        node_labels, node_name_ = labels(node), name(node)
        gpus = int(node_labels.get(COUNT) or 0)
        strategy, replicas = node_labels.get(SHARING), node_labels.get(REPLICAS)
        advertised_mps = strategy == "mps" and allocatable(node) == gpus * int(replicas or 0)
        if not advertised_mps and _mig_strategy(cluster) == "mixed":
            return failed(f"A100 node {node_name_} advertises {allocatable(node)} {GPU} ({SHARING}="
                          f"{strategy or 'unset'}) while the ClusterPolicy runs mig.strategy=mixed, under which the "
                          "device plugin refuses MPS (using --mig-strategy=mixed is not supported with MPS)",
                          "`kubectl get events -n gpu-operator --field-selector reason=DevicePluginFailed`; free the "
                          "H100's MIG slices, put it back to all-disabled, then patch the ClusterPolicy's "
                          "spec.mig.strategy to single")
        if strategy != "mps":
            return failed(f"A100 node {node_name_} is not shared with MPS ({SHARING}={strategy or 'unset'})", hint)
        if allocatable(node, SHARED) and not allocatable(node):
            return failed(f"A100 node {node_name_} advertises {SHARED}: the config renames the shared resource "
                          f"(renameByDefault: true), and the exercise keeps the name {GPU}", hint)
        if replicas != str(MPS_REPLICAS):
            return failed(f"A100 node {node_name_} is shared with MPS {replicas} ways ({REPLICAS}={replicas}); the "
                          f"exercise asks for {MPS_REPLICAS}", hint)
    for node in nodes_of_family(all_nodes, "h100"):
        signs = _shared(node)
        if signs:
            return failed(f"the H100 node {name(node)} is shared too ({', '.join(signs)}); the exercise shares the "
                          "A100 node only and leaves the H100's GPUs unshared",
                          _only_the_a100("MPS"))
    summary = ", ".join(f"{name(n)} {allocatable(n)} {GPU} ({labels(n).get(PRODUCT)})" for n in nodes)
    unshared = ", ".join(name(n) for n in nodes_of_family(all_nodes, "h100"))
    return passed(f"A100 shared with MPS {MPS_REPLICAS} ways: {summary}"
                  + (f"; H100 not shared: {unshared}" if unshared else ""))


# lab04.choose_strategy: when each of the three ways fits, for a scenario only one of them serves.
CHOOSE_STRATEGY = {
    "gpu": "A100-SXM4-40GB",
    "servers": 8,
    "server_memory_mib": 4096,
    "p99_budget_ms": 8.0,
    "question": ("One team runs 8 copies of the same small inference server on one A100 40GB. Each needs 4 GiB of "
                 "GPU memory, all 8 are busy all day, each must keep its p99 under 8 ms, and the team accepts that "
                 "a crash of one server may take the others down with it and that the device plugin still calls "
                 "its MPS support experimental. Do you share the GPU with MIG, time-slicing or MPS (8 replicas)? "
                 "Answer 'MIG', 'time-slicing' or 'MPS'."),
}
STRATEGY_CHOICES = {**SHARING_CHOICES, "mps": ("MPS", "multi-process service", "cuda mps", "nvidia mps",
                                               "multi process service", "cuda multi-process service")}


def _max_mig_slices(model: str) -> int:
    return max(p.instances for p in gpu_model(model).mig_profiles)


def _mps_p99() -> float:
    """An MPS client's p99 beside the other busy servers, with the thread share the device plugin sets."""
    from ..gpustack.latency import expected_latency

    s = CHOOSE_STRATEGY
    return expected_latency("mps", neighbours=s["servers"] - 1, model=s["gpu"],
                            active_thread_percentage=device_plugin_thread_percentage(s["servers"]))["p99_ms"]


def _mps_share_mib() -> int:
    """Each client's pinned-memory limit: the GPU's memory over the replicas (the MPS control daemon's division)."""
    return gpu_model(CHOOSE_STRATEGY["gpu"]).memory_mib // CHOOSE_STRATEGY["servers"]


def strategy_problems(mode: str) -> list[str]:
    """Why ``mode`` does not serve the CHOOSE_STRATEGY scenario (empty: it does)."""
    s = CHOOSE_STRATEGY
    if mode == "mig":
        most = _max_mig_slices(s["gpu"])
        return [f"an A100 40GB has at most {most} MIG slices, not {s['servers']} (and a slice's fixed share "
                "isolates tenants, which one team does not need)"] if most < s["servers"] else []
    if mode == "time-slicing":
        from ..gpustack.latency import expected_latency

        p99 = expected_latency("time-slicing", neighbours=s["servers"] - 1, model=s["gpu"])["p99_ms"]
        return [f"with {s['servers'] - 1} busy neighbours its p99 in the latency model is about {p99:.1f} ms, over "
                f"the {s['p99_budget_ms']:g} ms budget: each waits for the others' time slices"]
    problems = []
    p99 = _mps_p99()
    if p99 > s["p99_budget_ms"]:
        problems.append(f"its p99 in the latency model is about {p99:.1f} ms, over the {s['p99_budget_ms']:g} ms "
                        "budget")
    share = _mps_share_mib()
    if share < s["server_memory_mib"]:
        problems.append(f"each client's {share} MiB is less than the server needs")
    return problems


@check("lab04.choose_strategy", "answer: MIG, time-slicing or MPS for many small servers of one team",
       answer="strategy_choice")
def choose_strategy(cluster, answer) -> Result:
    picked = choice(answer, STRATEGY_CHOICES)
    hint = ("compare the three on granularity (how many MIG slices an A100 has), latency under busy neighbours "
            "(widgets.latency_figure(model=\"A100\", max_neighbours=7, p99_budget_ms=8)) and what the team can "
            "accept (shared faults)")
    if picked is None:
        return failed(f"{normalise(answer)!r} is none of MIG, time-slicing and MPS", hint)
    problems = strategy_problems(picked)
    if problems:
        return failed(f"{picked} does not fit this scenario: " + "; ".join(problems), hint)
    s = CHOOSE_STRATEGY
    return passed(f"right: MPS runs the {s['servers']} servers' kernels at the same time (p99 about "
                  f"{_mps_p99():.1f} ms in the latency model), each capped at {_mps_share_mib()} MiB "
                  f"and {device_plugin_thread_percentage(s['servers'])} % of the threads, and the team accepts that they share faults "
                  "and that the device plugin's MPS support is experimental")
