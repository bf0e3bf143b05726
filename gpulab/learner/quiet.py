"""Keep library chatter off stderr in notebook cells.

nbgrader scores a test cell with *any* stderr output as zero, so a warning that
urllib3 or the Kubernetes client prints while a check reads the cluster would
cost the learner the points of a correct answer. Real clusters reached with
``insecure-skip-tls-verify`` make urllib3 warn on every request
(``InsecureRequestWarning``); those are silenced here, once, for the whole
process. Errors are not hidden: they surface as a check's reason or as an
exception.
"""
from __future__ import annotations

import logging
import warnings

_done = False


def silence_library_warnings() -> None:
    """Ignore urllib3's TLS warnings and keep urllib3/kubernetes log records off the last-resort stderr handler."""
    global _done
    if _done:
        return
    import urllib3

    warnings.filterwarnings("ignore", category=urllib3.exceptions.InsecureRequestWarning)
    warnings.filterwarnings("ignore", category=urllib3.exceptions.SystemTimeWarning)
    for name in ("urllib3", "kubernetes"):
        logger = logging.getLogger(name)
        if not logger.handlers:
            logger.addHandler(logging.NullHandler())
    _done = True
