"""A real Slurm on the test host, from Debian's `slurm-wlm` and `munge` packages: munged,
slurmctld and four slurmd (`gpu1` .. `gpu4`, each with 4 GPUs as GRES on fake character
devices) on one host, all under one temporary folder with their own ports and munge socket, so
nothing of the host's own configuration is used or changed.

`SlurmCluster.start()` writes slurm.conf and gres.conf, starts the daemons and waits until every
node is idle; `stop()` ends them. `env` is the environment for Slurm's commands (SLURM_CONF).
Running it needs root (slurmd runs jobs as their users) and the packages; `unavailable()` says
why not, for a test to skip.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

NODES = ("gpu1", "gpu2", "gpu3", "gpu4")
GPUS_PER_NODE = 4
CPUS_PER_NODE = 16
PARTITION = "gpu"
SERVICE_USER = "nobody"  # replicas run as this user: MAGNETIC reservations capture its jobs only
DAEMONS = ("munged", "slurmctld", "slurmd", "scontrol", "sbatch", "squeue", "scancel")


def unavailable() -> str | None:
    """Why a real Slurm cannot run here (None when it can)."""
    if os.geteuid() != 0:
        return "a real Slurm needs root (slurmd runs jobs as their users)"
    missing = [d for d in DAEMONS if shutil.which(d, path=_path()) is None]
    if missing:
        return f"Slurm or munge is not installed ({', '.join(missing)}): apt-get install slurm-wlm munge"
    return None


def _path() -> str:
    return f"{os.environ.get('PATH', '')}:/usr/sbin:/sbin"


def _free_ports(count: int) -> list[int]:
    """`count` consecutive TCP ports that are free now (slurmd ports are a range)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + count >= 65000:
            continue
        ok = True
        for p in range(base, base + count):
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", p))
                except OSError:
                    ok = False
                    break
        if ok:
            return list(range(base, base + count))
    raise RuntimeError("no free ports for slurmctld and slurmd")


class SlurmCluster:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.conf = root / "slurm.conf"
        self.munge_socket = root / "munge" / "munge.socket"
        self.procs: list[subprocess.Popen[bytes]] = []
        self.env = {**os.environ, "SLURM_CONF": str(self.conf), "PATH": _path()}

    # ---- configuration

    def _write(self) -> None:
        r = self.root
        os.chmod(r, 0o755)  # the service user's jobs and commands reach the munge socket
        for sub in ("munge", "state", "spool", "log", "dev"):
            (r / sub).mkdir(parents=True, exist_ok=True)
        key = r / "munge" / "munge.key"  # its own key: nothing of the host's munge is used
        if not key.exists():
            key.write_bytes(os.urandom(1024))
            key.chmod(0o400)
        for i in range(GPUS_PER_NODE):
            dev = r / "dev" / f"nvidia{i}"
            if not dev.exists():
                os.mknod(dev, 0o666 | 0o020000, os.makedev(195, i))
        ports = _free_ports(len(NODES) + 1)
        nodes = "\n".join(
            f"NodeName={n} NodeAddr=127.0.0.1 Port={ports[1 + i]} CPUs={CPUS_PER_NODE} "
            f"RealMemory=64000 Gres=gpu:{GPUS_PER_NODE} State=UNKNOWN"
            for i, n in enumerate(NODES)
        )
        self.conf.write_text(
            f"""ClusterName=hopt
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ports[0]}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={self.munge_socket}
CredType=cred/munge
StateSaveLocation={r}/state
SlurmdSpoolDir={r}/spool/%n
SlurmctldPidFile={r}/slurmctld.pid
SlurmdPidFile={r}/slurmd-%n.pid
SlurmctldLogFile={r}/log/slurmctld.log
SlurmdLogFile={r}/log/slurmd-%n.log
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1,sched_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
ReturnToService=2
MinJobAge=2
KillWait=1
{nodes}
PartitionName={PARTITION} Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""
        )
        (r / "gres.conf").write_text(
            f"AutoDetect=off\nNodeName={','.join(NODES)} Name=gpu "
            f"File={r}/dev/nvidia[0-{GPUS_PER_NODE - 1}]\n"
        )

    # ---- daemons

    def _spawn(self, argv: list[str], log: str) -> None:
        out = (self.root / "log" / log).open("ab")
        self.procs.append(
            subprocess.Popen(argv, env=self.env, stdout=out, stderr=subprocess.STDOUT)
        )

    def start(self, timeout: float = 60.0) -> None:
        self._write()
        r = self.root
        self._spawn(
            [
                "munged",
                "--foreground",
                "--force",
                f"--socket={self.munge_socket}",
                f"--key-file={r}/munge/munge.key",
                f"--pid-file={r}/munge/munged.pid",
                f"--log-file={r}/log/munged.log",
                f"--seed-file={r}/munge/seed",
            ],
            "munged.out",
        )
        self._wait(lambda: self.munge_socket.exists(), timeout, "munged")
        self._spawn(["slurmctld", "-D", "-i", "-f", str(self.conf)], "slurmctld.out")
        self._wait(lambda: self.scontrol("ping").returncode == 0, timeout, "slurmctld")
        for n in NODES:
            (r / "spool" / n).mkdir(exist_ok=True)
            self._spawn(["slurmd", "-D", "-N", n, "-f", str(self.conf)], f"slurmd-{n}.out")
        self._wait(self.all_idle, timeout, "slurmd")

    def all_idle(self) -> bool:
        done = self.run(["sinfo", "-h", "-N", "-o", "%N %t"])
        states = dict(line.split() for line in done.stdout.splitlines() if line.strip())
        return len(states) == len(NODES) and all(s == "idle" for s in states.values())

    def _wait(self, ready: object, timeout: float, what: str) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if ready():  # type: ignore[operator]
                return
            if any(p.poll() is not None for p in self.procs):
                break
            time.sleep(0.2)
        logs = "".join(
            f"\n--- {p.name}\n{p.read_text(errors='replace')[-2000:]}"
            for p in sorted((self.root / "log").iterdir())
        )
        self.stop()
        raise RuntimeError(f"{what} did not come up{logs}")

    def stop(self) -> None:
        if self.procs and self.procs[0].poll() is None:  # no job outlives its slurmd
            self.run(["scancel", "--full", "--user=root"])
            self.run(["scancel", "--full", f"--user={SERVICE_USER}"])
            end = time.monotonic() + 10
            while time.monotonic() < end and self.run(["squeue", "-h"]).stdout.strip():
                time.sleep(0.2)
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in reversed(self.procs):
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs = []

    # ---- commands

    def run(self, argv: list[str], check: bool = False) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=30)
        if check and done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)}: exit {done.returncode}: {done.stderr}")
        return done

    def scontrol(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run(["scontrol", *args])

    def sbatch(self, *args: str, user: str | None = None) -> str:
        """Submit a job (`--wrap` and options in `args`); returns its id."""
        argv = ["sbatch", "--parsable", "--output=/dev/null", *args]
        if user is not None:
            argv = ["runuser", "-u", user, "--", *argv]
        return self.run(argv, check=True).stdout.strip().split(";")[0]
