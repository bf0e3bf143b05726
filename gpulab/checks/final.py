"""The final assessment's questions: recorded by the learner's checks, judged only by the grader.

The assessment's other exercises reuse the labs' cluster checks (the state a
learner builds is the work, and a check of it gives nothing away). Its
questions are keyed (:mod:`.keys`): this package knows only the form of each
answer, and the grader's ``grader/answer_keys.py`` holds the keys, the reason
each wrong option is wrong, and the judge of the GPU count.
"""
from __future__ import annotations

from .keys import keyed_question, one_of, whole_number
from .settled import gpu_stack_settling

QUESTIONS = {     # check id -> (title, the answer's variable, its form)
    "final.allocatable_gpus": ("answer: total allocatable nvidia.com/gpu in the cluster", "allocatable_gpus",
                               whole_number()),
    "final.forgotten_toleration": ("question: a GPU pod without a toleration on a tainted pool", "answer_1",
                                   one_of("abcd")),
    "final.copied_density": ("question: copying a time-slicing density from a blog", "answer_2", one_of("abcd")),
    "final.dra_memory_selector": ("question: a DRA selector for a GPU's memory", "answer_3", one_of("abcd")),
    "final.dra_or_device_plugin": ("question: DRA or nvidia.com/gpu for a request", "answer_4", one_of("abcd")),
}

COUNTED = {"final.allocatable_gpus"}      # judged from the cluster's GPU stack, once it has settled

for _check_id, (_title, _variable, _form) in QUESTIONS.items():
    keyed_question(_check_id, _title, answer=_variable, form=_form,
                   settles=gpu_stack_settling if _check_id in COUNTED else None)
