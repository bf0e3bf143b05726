"""Hermetic, tamper-resistant, parallel nbgrader grading of the live-cluster labs.

The pipeline is nbgrader's own ``Autograde`` converter with three steps
replaced through ``grader/nbgrader_config.py``, so ``nbgrader autograde``, the
formgrader and ``gpulab grade`` all grade the same way:

* :mod:`.sanitize`: graded cells restored from the gradebook (flags, sources,
  deleted cells) and stripped of ``skip-execution`` / ``raises-exception``;
* :mod:`.execute`: the notebook re-executed from the top on its own fresh
  embedded cluster (:mod:`.clusters`), each test cell re-checked by the grader
  itself (:mod:`.recheck`), per-cell timeouts that never stop the rest, the
  kernel in a sandbox that reaches only its notebook and its cluster
  (:mod:`.sandbox`, :mod:`.kernel`, :mod:`.bridge`, :mod:`.sandbox_entry`);
* :mod:`.scoring`: scores into the gradebook where the grader's re-check
  decides and warnings cost nothing;

plus :mod:`.feedback` for ``nbgrader generate_feedback`` and :mod:`.parallel`
(``gpulab grade LAB --jobs N``), which runs that converter in N processes.
"""
