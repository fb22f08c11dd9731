"""What a running suite shows: a progress bar on a terminal, one line per finished run."""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Sequence
from typing import IO

from horizon_opt.bench.rows import OK_STATUSES, Report
from horizon_opt.bench.tasks import AnyTask


class ProgressDisplay:
    """A progress bar on a terminal; one plain line per finished run otherwise."""

    def __init__(self, total: int, stream: IO[str] | None = None) -> None:
        self.total = total
        self.done = 0
        self.stream = stream if stream is not None else sys.stderr
        self.tty = self.stream.isatty()
        self.started = time.monotonic()
        self.running: Sequence[tuple[AnyTask, float]] = ()

    def _bar(self) -> str:
        width = shutil.get_terminal_size((100, 20)).columns - 1
        frac = self.done / max(1, self.total)
        bar = "#" * round(20 * frac) + "-" * (20 - round(20 * frac))
        elapsed = time.monotonic() - self.started
        now = ", ".join(f"{t.label} {s:.0f}s" for t, s in self.running)
        line = f"[{bar}] {self.done}/{self.total} {elapsed:6.0f}s" + (f"  {now}" if now else "")
        return line[:width].ljust(width)

    def tick(self, running: Sequence[tuple[AnyTask, float]]) -> None:
        self.running = running
        if self.tty:
            self.stream.write("\r" + self._bar())
            self.stream.flush()

    def finished(self, task: AnyTask, report: Report) -> None:
        self.done += 1
        line = f"[{self.done:>{len(str(self.total))}}/{self.total}] {describe(task, report)}"
        if self.tty:
            self.stream.write("\r" + " " * (shutil.get_terminal_size((100, 20)).columns - 1))
            self.stream.write("\r" + line + "\n" + self._bar())
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


def describe(task: AnyTask, report: Report) -> str:
    """One line on a finished run: its figures, or why it failed."""
    status = str(report.get("status"))
    text = f"{task.label}: {status}"
    if "replays" in report:  # a closed-loop run
        text += ", realized pwo " + ", ".join(
            f"{r['policy']} {r['realized_pwo']:,.0f}" for r in report["replays"]
        )
        text += f", {report['wall_seconds']:.1f} s, {report['peak_mib']:.0f} MiB"
    elif status in OK_STATUSES:
        gap = report.get("gap")
        text += f", pwo {report['pwo']:,.1f}, utilization {100 * report['utilization']:.1f}%"
        text += "" if gap is None else f", gap {100 * gap:.2f}%"
        text += f", {report['wall_seconds']:.1f} s, {report['peak_mib']:.0f} MiB"
        text += "" if report.get("valid") == "yes" else f", INVALID ({report.get('violations')})"
    else:
        text += f" ({report.get('error')})"
    return text
