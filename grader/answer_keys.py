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

KEYS = {"final.forgotten_toleration": (FORGOTTEN_TOLERATION, "b"), "final.copied_density": (COPIED_DENSITY, "b")}

for check_id, (question, key) in KEYS.items():
    keys.install(check_id, lambda cluster, answer, question=question, key=key: question.judge(answer, key))
keys.install("final.allocatable_gpus", lab01.allocatable_gpus)     # the count is the cluster's, read when graded
