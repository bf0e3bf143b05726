"""A button that resets the embedded cluster to a lab's starting state, after a second click to confirm.

It runs :func:`gpulab.labs.reset` and shows its progress lines; on a cluster
reached through a kubeconfig the reset refuses, and the button shows what the
starting state would need instead.
"""
from __future__ import annotations

import html

from .. import labs


class ResetButton:
    def __init__(self, lab: str):
        import ipywidgets as w

        self.lab = labs.resolve(lab)
        self.button = w.Button(description=f"Reset {self.lab.short}", icon="undo", button_style="warning",
                               tooltip=f"recreate the embedded cluster in the starting state of {self.lab.name}")
        self.output = w.Output()
        self.note = w.HTML(value="")
        self._armed = False
        self.button.on_click(lambda _: self.click())
        self.widget = w.VBox([w.HBox([self.button, self.note]), self.output])

    def click(self) -> None:
        """First click arms, second click resets (everything in the embedded cluster is deleted)."""
        if not self._armed:
            self._armed = True
            self.button.description = "Click again to reset"
            self.note.value = (f"<i>This deletes everything in the embedded cluster and rebuilds the starting "
                               f"state of {html.escape(self.lab.name)}.</i>")
            return
        self._armed = False
        self.button.disabled = True
        self.note.value = ""
        self.output.clear_output()
        try:
            with self.output:
                labs.reset(self.lab)
        except labs.ResetRefused as exc:
            self.note.value = f"<pre>{html.escape(str(exc))}</pre>"
        except Exception as exc:  # noqa: BLE001 - shown in the widget; a callback's exception only reaches the log
            self.note.value = (f'<span style="color:#cf222e">reset failed: {html.escape(type(exc).__name__)}: '
                               f"{html.escape(str(exc))}</span>")
        finally:
            self.button.disabled = False
            self.button.description = f"Reset {self.lab.short}"

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)


def reset_button(lab: str) -> ResetButton:
    return ResetButton(lab)
