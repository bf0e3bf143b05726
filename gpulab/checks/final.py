"""The final assessment's two check-yourself questions (its other exercises reuse the labs' checks).

The questions are multiple choice, kept here as data so the notebook prints
the same text the check judges. A wrong option gets a reason that says why
that option is wrong, never which one is right.
"""
from __future__ import annotations

from .answers import choice, normalise
from .registry import check
from .result import Result, failed, passed

QUESTIONS = {
    "final.check_yourself_1": {
        "question": ("A pod asks for nvidia.com/gpu: 1. The cluster's only GPU nodes carry the taint "
                     "nvidia.com/gpu=true:NoSchedule and the pod has no toleration. What happens?"),
        "options": {
            "a": "It runs on a GPU node: asking for a GPU is enough to pass the taint.",
            "b": "It stays Pending: no node both tolerates it and has a free GPU.",
            "c": "It runs on a CPU node, without a GPU.",
            "d": "The API server refuses to create it.",
        },
        "answer": "b",
        "why_not": {
            "a": "a resource request does not tolerate a taint: the scheduler checks taints and resources "
                 "separately, and every node must pass both",
            "c": "a node that advertises no nvidia.com/gpu cannot satisfy a request for one",
            "d": "the API server validates the pod's fields, not whether some node can take it",
        },
        "hint": "lab 02 (taints and tolerations) and lab 03 (reading why a pod is Pending)",
    },
    "final.check_yourself_2": {
        "question": ("A blog post time-slices each GPU with replicas: 10 to pack more inference replicas per GPU. "
                     "Your service is latency-sensitive. What do you do before copying the setting?"),
        "options": {
            "a": "Nothing: time-sliced replicas are isolated, so density does not change latency.",
            "b": "Measure p99 latency under your own load at that density, since time-sliced replicas wait for "
                 "each other's slices.",
            "c": "Set replicas to the number of GPUs on the node.",
            "d": "Nothing: the device plugin refuses densities that hurt latency.",
        },
        "answer": "b",
        "why_not": {
            "a": "time-slicing isolates neither memory nor time: each busy neighbour adds about one time slice "
                 "to a request's tail",
            "c": "replicas is how many pods share one GPU; it has nothing to do with how many GPUs a node has",
            "d": "the device plugin advertises whatever the config says; it knows nothing of your latency",
        },
        "hint": "lab 04: p99 under busy neighbours, and the latency plot",
    },
}


def _spellings(question: dict) -> dict[str, tuple[str, ...]]:
    return {key: (text,) for key, text in question["options"].items()}


def _judge(check_id: str, answer) -> Result:
    question = QUESTIONS[check_id]
    picked = choice(answer, _spellings(question))
    letters = ", ".join(question["options"])
    if picked is None:
        return failed(f"{normalise(answer)!r} is not one of the options ({letters})",
                      f"answer with the option's letter; {question['hint']}")
    if picked == question["answer"]:
        return passed(f"right: ({picked}) {question['options'][picked]}")
    return failed(f"({picked}) is not it: {question['why_not'][picked]}", question["hint"])


@check("final.check_yourself_1", "check yourself: a GPU pod on a tainted pool", answer=True)
def check_yourself_1(cluster, answer) -> Result:
    return _judge("final.check_yourself_1", answer)


@check("final.check_yourself_2", "check yourself: copying a time-slicing density", answer=True)
def check_yourself_2(cluster, answer) -> Result:
    return _judge("final.check_yourself_2", answer)
