"""A Check button for one exercise: click, and the check's verdict appears below it (reason and hint only).

The answer of a question exercise is read when the button is clicked, from a
callable or from a variable of the notebook (``answer_from="allocatable"``),
so the learner can change the variable and click again.
"""
from __future__ import annotations

import html
from typing import Any, Callable

from .. import checks


class CheckButton:
    def __init__(self, check_id: str, answer: Any = None, *, answer_from: str | None = None, client=None):
        import ipywidgets as w

        self.check = checks.get(check_id)
        self._answer, self._answer_from, self._client = answer, answer_from, client
        self.button = w.Button(description="Check", icon="check", button_style="primary",
                               tooltip=f"check {check_id} against the cluster")
        self.verdict = w.HTML(value="")
        title = w.HTML(value=f"<b>{html.escape(check_id)}</b>: {html.escape(self.check.title)}")
        self.widget = w.VBox([w.HBox([self.button, title]), self.verdict])
        self.button.on_click(lambda _: self.click())
        self.result: checks.Result | None = None

    def answer(self) -> Any:
        if self._answer_from is not None:
            from IPython import get_ipython

            shell = get_ipython()
            namespace = shell.user_ns if shell is not None else {}
            return namespace.get(self._answer_from, checks.NO_ANSWER)
        if callable(self._answer):
            return self._answer()
        return checks.NO_ANSWER if self._answer is None else self._answer

    def click(self) -> checks.Result | None:
        """Run the check now and show its verdict; errors are shown in the widget, never raised into the kernel."""
        self.button.disabled = True
        self.verdict.value = "<i>checking...</i>"
        try:
            self.result = checks.run(self.check.id, self.answer(), client=self._client)
            self.verdict.value = self.result._repr_html_()
        except Exception as exc:  # noqa: BLE001 - a callback's exception would only reach the kernel log
            self.result = None
            self.verdict.value = (f'<div style="color:#cf222e">the check could not run: '
                                  f"{html.escape(type(exc).__name__)}: {html.escape(str(exc))}</div>")
        finally:
            self.button.disabled = False
        return self.result

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)


def check_button(check_id: str, answer: Any | Callable[[], Any] = None, *, answer_from: str | None = None,
                 client=None) -> CheckButton:
    """A Check button for ``check_id``; ``answer`` (a value or a callable) or ``answer_from`` (a variable name)."""
    return CheckButton(check_id, answer, answer_from=answer_from, client=client)
