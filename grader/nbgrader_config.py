"""nbgrader course directory of gpulab: source in ../solutions, release in ../labs.

Run nbgrader from this directory (``cd grader``): ``nbgrader generate_assignment
LAB``, ``validate``, ``autograde``, ``generate_feedback``, ``export`` and the
formgrader in JupyterLab all read this file. Autograding is hermetic and
tamper resistant (see README.md); ``gpulab grade LAB --jobs N`` runs the same
pipeline on every submission at once.
"""
from pathlib import Path

from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from nbgrader.preprocessors import (
    AssignLatePenalties, CheckCellMetadata, ClearOutput, DeduplicateIds, GetGrades, IgnorePattern, LimitOutput,
    OverwriteKernelspec,
)

import gpulab.learner
from gpulab.grading.execute import HermeticExecute
from gpulab.grading.feedback import ExplainGrades
from gpulab.grading.sanitize import RestoreGradedCells
from gpulab.grading.scoring import SaveVerifiedGrades

c = get_config()  # noqa: F821 - provided by traitlets when nbgrader loads this file

c.CourseDirectory.course_id = "gpulab"
c.CourseDirectory.source_directory = "../solutions"
c.CourseDirectory.release_directory = "../labs"

# The exchange (release_assignment, submit, collect) lives in this directory, not in nbgrader's /srv default;
# nbgrader wants it to exist before the first release.
EXCHANGE = Path(__file__).resolve().parent / "exchange"
EXCHANGE.mkdir(exist_ok=True)
c.Exchange.root = str(EXCHANGE)

# Autograde: nbgrader's pipeline with three steps replaced (sanitising, execution, scoring).
c.Autograde.sanitize_preprocessors = [
    ClearOutput, DeduplicateIds, OverwriteKernelspec, RestoreGradedCells, CheckCellMetadata,
]
c.Autograde.autograde_preprocessors = [
    HermeticExecute, IgnorePattern, LimitOutput, SaveVerifiedGrades, AssignLatePenalties, CheckCellMetadata,
]
# How cells run (c.Execute.timeout): one file, read by the learner's Validate too, so it says what grading says.
load_subconfig(str(Path(gpulab.learner.__file__).parent / "jupyter" / "nbgrader_config.py"))  # noqa: F821
# A check of GPU-stack state waits for it to settle, up to 90 s on a loaded host (gpulab.checks.settled): the
# grader's recheck of a test cell gets longer than that, so load never turns a correct answer into a timeout.
c.HermeticExecute.recheck_timeout = 100
# What each submission may use (README.md, "Limits"); a cell over a limit earns nothing, the rest is graded.
# gpulab grade --memory/--disk/--processes/--cpu-seconds override them for one run.
c.HermeticExecute.memory_limit = "2Gi"      # per process
c.HermeticExecute.disk_limit = "512Mi"      # all it writes: its folder, home and /tmp (held in memory)
c.HermeticExecute.process_limit = 128       # processes and threads at once
c.HermeticExecute.cpu_limit = 300           # seconds of CPU time per process
# The final assessment's answer keys, judged in the grading process only (learners' checks just record answers).
c.HermeticExecute.check_modules = ["answer_keys.py"]

# Feedback: reasons and hints from the grader's checks; hidden tests stay hidden.
c.GenerateFeedback.preprocessors = [GetGrades, ExplainGrades, CSSHTMLHeaderPreprocessor]
