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
        "b": "It stays Pending: no node both tolerates it and has a free GPU.",
        "c": "It runs on a CPU node, without a GPU.",
        "d": "The API server refuses to create it.",
    },
    why_not={
        "a": "a resource request does not tolerate a taint: the scheduler checks taints and resources separately, "
             "and every node must pass both",
        "c": "a node that advertises no nvidia.com/gpu cannot satisfy a request for one",
        "d": "the API server validates the pod's fields, not whether some node can take it",
    },
    hint="lab 02 (taints and tolerations) and lab 03 (reading why a pod is Pending)",
)

COPIED_DENSITY = MultipleChoice(
    options={
        "a": "Nothing: time-sliced replicas are isolated, so density does not change latency.",
        "b": "Measure p99 latency under your own load at that density, since time-sliced replicas wait for each "
             "other's slices.",
        "c": "Set replicas to the number of GPUs on the node.",
        "d": "Nothing: the device plugin refuses densities that hurt latency.",
    },
    why_not={
        "a": "time-slicing isolates neither memory nor time: each busy neighbour adds about one time slice to a "
             "request's tail",
        "c": "replicas is how many pods share one GPU; it has nothing to do with how many GPUs a node has",
        "d": "the device plugin advertises whatever the config says; it knows nothing of your latency",
    },
    hint="lab 04: p99 under busy neighbours, and the latency plot",
)

DRA_MEMORY_SELECTOR = MultipleChoice(
    options={
        "a": "device.attributes['gpu.nvidia.com'].memory >= 40",
        "b": "device.attributes['gpu.nvidia.com'].productName == '40Gi'",
        "c": "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0",
        "d": "resources.limits['nvidia.com/gpu-memory'] >= 40Gi",
    },
    why_not={
        "a": "NVIDIA's driver publishes memory as a capacity, not an attribute: the expression fails at run time "
             "on every device (no such key: memory)",
        "b": "productName is the GPU's name; no product is called 40Gi, so nothing matches",
        "d": "that is not CEL over a device, and no device plugin advertises a memory resource",
    },
    hint="module 06: the ResourceSlice read like a datasheet, and the Pending pod whose selector named a missing "
         "attribute",
)

DRA_OR_DEVICE_PLUGIN = MultipleChoice(
    options={
        "a": "nvidia.com/gpu: 2 with a product nodeSelector, which every cluster and quota tool understands.",
        "b": "Always DRA: nvidia.com/gpu is deprecated in v1.37.",
        "c": "A ResourceClaim shared by both pods, since DRA is the only way to get two GPUs.",
        "d": "DRA, because the device plugin cannot count past one GPU per pod.",
    },
    why_not={
        "b": "the device plugin and extended resources are stable and remain the GPU Operator's default",
        "c": "a shared claim gives the same device to every pod that names it; two whole GPUs are two devices",
        "d": "nvidia.com/gpu: N asks for N whole GPUs",
    },
    hint="module 06: when to use DRA and when nvidia.com/gpu",
)

KEYS = {"final.forgotten_toleration": (FORGOTTEN_TOLERATION, "b"), "final.copied_density": (COPIED_DENSITY, "b"),
        "final.dra_memory_selector": (DRA_MEMORY_SELECTOR, "c"), "final.dra_or_device_plugin": (DRA_OR_DEVICE_PLUGIN, "a")}

for check_id, (question, key) in KEYS.items():
    keys.install(check_id, lambda cluster, answer, question=question, key=key: question.judge(answer, key))
keys.install("final.allocatable_gpus", lab01.allocatable_gpus)     # the count is the cluster's, read when graded
