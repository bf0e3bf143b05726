"""The course progress panel: every lab's exercises and the learner's last verdict on each.

Verdicts come from ``gpulab.checks.progress`` (every check the learner ran,
by button or by code, in any notebook). "Check the cluster now" re-runs the
exercises that need no answer, since their state lives in the cluster.
"""
from __future__ import annotations

import html

from .. import checks
from ..checks import progress

_MARKS = {True: ("&#x2714;", "#1a7f37"), False: ("&#x2718;", "#cf222e"), None: ("&#x25CB;", "#8c959f")}


def render_progress(records: dict[str, dict]) -> str:
    """HTML: one block per lab, one line per exercise with its mark, and the lab's count of passed exercises."""
    parts = ['<div class="gpulab-progress">']
    total = passed = 0
    for prefix, lab in checks.LABS.items():
        ids = checks.check_ids(prefix)
        done = sum(1 for i in ids if records.get(i, {}).get("passed"))
        total, passed = total + len(ids), passed + done
        parts.append(f"<details open><summary><b>{html.escape(lab)}</b> &nbsp;{done}/{len(ids)}</summary><ul "
                     'style="list-style:none;margin:2px 0 6px 0;padding-left:1em">')
        for check_id in ids:
            state = records.get(check_id, {}).get("passed")
            mark, colour = _MARKS[state]
            parts.append(f'<li><span style="color:{colour}">{mark}</span> <code>{html.escape(check_id)}</code> '
                         f"{html.escape(checks.CHECKS[check_id].title)}</li>")
        parts.append("</ul></details>")
    parts.append(f"<p><b>{passed} of {total} exercises passed</b></p></div>")
    return "".join(parts)


class ProgressPanel:
    def __init__(self, client=None):
        import ipywidgets as w

        self._client = client
        self.html = w.HTML(value=render_progress(progress.load()))
        refresh = w.Button(description="Refresh", icon="refresh")
        recheck = w.Button(description="Check the cluster now", icon="check",
                           tooltip="re-run every exercise that needs no answer")
        refresh.on_click(lambda _: self.refresh())
        recheck.on_click(lambda _: self.recheck())
        self.widget = w.VBox([w.HBox([refresh, recheck]), self.html])

    def refresh(self) -> None:
        self.html.value = render_progress(progress.load())

    def recheck(self) -> None:
        """Run every cluster-state check and record the verdicts (answers are judged only when given)."""
        for check_id, check in checks.CHECKS.items():
            if not check.needs_answer:
                result = checks.run(check_id, client=self._client)
                if self._client is not None:  # run() records only for the learner's own connection
                    progress.record(result)
        self.refresh()

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)


def progress_panel(client=None) -> ProgressPanel:
    return ProgressPanel(client)
