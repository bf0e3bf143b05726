"""How nbgrader runs a lab's cells, the same wherever it runs them.

The learner's JupyterLab puts this directory on ``JUPYTER_CONFIG_PATH``, so its
Validate button and ``nbgrader validate`` in its terminal read this file; the
grader's course directory loads it too (``grader/nbgrader_config.py``). A cell
that Validate stopped after nbgrader's default 30 s would otherwise fail there
and earn its points when graded: what Validate says must be the grade.
"""
c = get_config()  # noqa: F821 - provided by traitlets when nbgrader loads this file

c.Execute.timeout = 120             # seconds per cell; a cell that runs longer is interrupted, the rest still run
# A listed cell is a failed check, or (the final assessment) an answer only grading judges: say which is which.
c.Validator.failed_warning = (
    "VALIDATION FAILED ON {num_failed} CELL(S)! A check that failed earns no credit as it is; a question whose "
    "answer is only recorded is judged when the notebook is graded.\n")
