"""The state folder: what one re-planning cycle leaves for the next, and for the people watching.

```
state/
  lock            the running cycle holds it (flock); a second run refuses to start
  current ->      the last good cycle (a symbolic link, swapped atomically)
  cycles/<time>/  one folder per good cycle: the queue payload, instance.yaml, plan.json,
                  explain.json, actions.sh, actions.json, cycle.json; the last `keep` are kept
  applied.json    the scheduler state the last applied actions set (`run --apply`)
  status.json     the last cycle: when, whether it succeeded, its error, the last success
  metrics.prom    Prometheus text format, for node_exporter's textfile collector
```

A cycle's folder is written under a temporary name and renamed into place, and `current`
moves only after that, so a reader (or the next cycle) never sees half a cycle: a failed
import or solve leaves the last good plan where it was.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from horizon_opt.errors import InputError
from horizon_opt.io import write_atomic


class Busy(Exception):
    """Another run holds the state folder's lock."""


class StateFolder:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.cycles = root / "cycles"
        self.current = root / "current"

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the folder's lock for one cycle; Busy when another run holds it."""
        try:
            self.cycles.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(
                [f"state: cannot create the state folder {self.root}: {exc}"]
            ) from None
        fd = os.open(self.root / "lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
                raise Busy(
                    f"another horizon-opt run (pid {holder}) holds {self.root / 'lock'}"
                ) from None
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    # -- reading -------------------------------------------------------------------------------

    def last_cycle(self) -> Path | None:
        """The folder of the last good cycle, if any."""
        return self.current.resolve() if self.current.is_dir() else None

    def applied(self) -> str | None:
        """The text of applied.json, if a cycle applied its actions."""
        path = self.root / "applied.json"
        return path.read_text(encoding="utf-8") if path.exists() else None

    def status(self) -> dict[str, Any]:
        path = self.root / "status.json"
        if not path.exists():
            return {}
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    # -- writing -------------------------------------------------------------------------------

    def commit_cycle(self, name: str, files: Mapping[str, str], keep: int) -> Path:
        """Write one cycle's files as `cycles/<name>/`, point `current` at it, keep the last
        `keep` cycles. Returns the cycle's folder."""
        final = self._free_name(name)
        tmp = self.cycles / f".{final.name}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        for file, text in files.items():
            (tmp / file).write_text(text, encoding="utf-8")
        os.rename(tmp, final)
        link = self.root / ".current.tmp"
        link.unlink(missing_ok=True)
        link.symlink_to(Path("cycles") / final.name)
        os.replace(link, self.current)
        self._prune(keep)
        return final

    def write(self, file: str, text: str) -> None:
        write_atomic(self.root / file, text)

    def _free_name(self, name: str) -> Path:
        path, k = self.cycles / name, 1
        while path.exists():
            k += 1
            path = self.cycles / f"{name}-{k}"
        return path

    def _prune(self, keep: int) -> None:
        current = self.last_cycle()
        done = sorted(p for p in self.cycles.iterdir() if p.is_dir() and not p.name.startswith("."))
        for old in done[: max(len(done) - keep, 0)]:
            if old != current:
                shutil.rmtree(old, ignore_errors=True)
