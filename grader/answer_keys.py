"""The final assessment's answer keys: loaded into the grading process only (``c.HermeticExecute.check_modules``).

The learner's installation registers these questions with the form of their
answers alone (``gpulab.checks.final``), so a learner's check records an
answer and cannot say whether it is right. This file, in the instructor's
course directory, gives the grader the judges: the options' texts (as the
final assessment's notebook prints them), the key, and why each other option
is wrong, which the feedback shows after grading. Keep it out of what learners
receive, as the solutions are.
"""
from gpulab.checks import keys, lab01
from gpulab.checks.answers import MultipleChoice

FORGOTTEN_TOLERATION = MultipleChoice(
    options={
        "a": "It runs on a GPU node: asking for a GPU is enough to pass the taint.",
        "b": "It runs on a CPU node, without a GPU, until a GPU node has room.",
        "c": "It stays Pending: no node both tolerates it and has a free GPU.",
        "d": "It is refused: the API server rejects a GPU pod with no toleration.",
    },
    why_not={
        "a": "a resource request does not tolerate a taint: the scheduler checks taints and resources separately, "
             "and every node must pass both",
        "b": "a node that advertises no nvidia.com/gpu cannot satisfy a request for one",
        "d": "the API server validates the pod's fields, not whether some node can take it",
    },
    hint="lab 02 (taints and tolerations) and lab 03 (reading why a pod is Pending)",
    key="c",
    because="The scheduler checks taints and resources on every node: the GPU nodes fail the taint, the others the "
            "GPU request.",
)

COPIED_DENSITY = MultipleChoice(
    options={
        "a": "Measure p99 under your own load at that density before copying it.",
        "b": "Nothing: time-sliced replicas are isolated, so latency stays put.",
        "c": "Set replicas to the number of GPUs on the node instead of 10.",
        "d": "Nothing: the device plugin refuses densities that hurt latency.",
    },
    why_not={
        "b": "time-slicing isolates neither memory nor time: each busy neighbour adds about one time slice to a "
             "request's tail",
        "c": "replicas is how many pods share one GPU; it has nothing to do with how many GPUs a node has",
        "d": "the device plugin advertises whatever the config says; it knows nothing of your latency",
    },
    hint="lab 04: p99 under busy neighbours, and the latency plot",
    key="a",
    because="Time-sliced replicas wait for each other's slices, so p99 grows with every busy neighbour.",
)

DRA_MEMORY_SELECTOR = MultipleChoice(
    options={
        "a": "device.attributes['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0",
        "b": "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0",
        "c": "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) <= 0",
        "d": "device.capacity['gpu.nvidia.com'].memory.isGreaterThan(quantity('40'))",
    },
    why_not={
        "a": "NVIDIA's driver publishes memory as a capacity, not an attribute: the expression fails at run time "
             "on every device (no such key: memory)",
        "c": "compareTo(...) <= 0 keeps devices with at most 40Gi, the opposite of what the request needs",
        "d": "quantity('40') is 40 bytes, not 40 GiB: every GPU has more, so nothing is kept out",
    },
    hint="module 06: the ResourceSlice read like a datasheet, and the Pending pod whose selector named a missing "
         "attribute",
    key="b",
    because="NVIDIA's driver publishes each GPU's memory as a capacity, a quantity compared with compareTo.",
)

DRA_OR_DEVICE_PLUGIN = MultipleChoice(
    options={
        "a": "A ResourceClaim: the device plugin cannot give one pod two GPUs.",
        "b": "nvidia.com/gpu: 2 with a product nodeSelector, as quotas count it.",
        "c": "Always a ResourceClaim: nvidia.com/gpu is deprecated in v1.37.",
        "d": "Two ResourceClaims, since one claim can only hold one device.",
    },
    why_not={
        "a": "nvidia.com/gpu: N asks for N whole GPUs",
        "c": "the device plugin and extended resources are stable and remain the GPU Operator's default",
        "d": "one claim's request may ask for several devices (count: 2); a claim is not limited to one",
    },
    hint="module 06: when to use DRA and when nvidia.com/gpu",
    key="b",
    because="Every cluster, quota and autoscaler understands it; DRA pays off when you select GPUs by their "
            "attributes or share them.",
)

KEYS = {"final.forgotten_toleration": FORGOTTEN_TOLERATION, "final.copied_density": COPIED_DENSITY,
        "final.dra_memory_selector": DRA_MEMORY_SELECTOR, "final.dra_or_device_plugin": DRA_OR_DEVICE_PLUGIN}

for check_id, question in KEYS.items():
    keys.install(check_id, lambda cluster, answer, question=question: question.judge(answer))
keys.install("final.allocatable_gpus", lab01.allocatable_gpus)     # the count is the cluster's, read when graded
