"""Family `trace`: real jobs and a real inference demand shape, from two public traces.

The trace CSVs ship with the package (`horizon_opt/data/traces`, with their licences and
attribution in its README.md); `find_traces` says where they are looked for. What the traces do
not record follows enterprise's rules (priorities, allowed pools, deadlines) or is inferred (a
job's kind, from its gang size and run time).
"""

from __future__ import annotations

import csv
import functools
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from horizon_opt.generate.aliases import FloatArray, InstanceData, IntArray, Rng
from horizon_opt.generate.assemble import instance_data
from horizon_opt.generate.errors import GeneratorError
from horizon_opt.generate.jobs import (
    Job,
    allowed_pools,
    draw_priority,
    gang_nodes_limit,
    placeable,
    pool_durations,
    set_times,
)
from horizon_opt.generate.outages import make_outages
from horizon_opt.generate.services import ShapeFn, make_services, reservation
from horizon_opt.generate.sizes import Size

TRACES_ENV = "HORIZON_OPT_TRACES"
TRACE_JOBS_FILE = "jobs_msitp_cluster02.csv"
TRACE_INFERENCE_FILE = "inference_servegen.csv"
TRACE_MODELS = ("m-mid", "m-small", "deepseek-r1")  # service k follows model k mod 3
TRACE_WINDOW_MINUTES = 10
TRACE_ATTRIBUTION = """\
Jobs (gang sizes, run times, arrivals): Microsoft ITP cluster02 trace, 2021 (used by ElasticFlow,
ASPLOS 2023), from microsoft/elasticflow-traces, commit 277ed24d0e908c31a1c98145819e2e3853d8ac00,
MIT licence, Copyright (c) Microsoft Corporation.
Inference demand shape: Alibaba Model Studio ServeGen trace, 2025, from alibaba/ServeGen, commit
f891d1189eb32b3868dfc443800c4150548c282a, Apache-2.0 licence.
"""

_KIND_PREFIX = {"training": "train", "batch_inference": "bi", "evaluation": "eval"}


def default_traces_dir() -> Path:
    """The copies that ship with the package (this file is horizon_opt/generate/trace.py)."""
    return Path(__file__).resolve().parents[1] / "data" / "traces"


def find_traces(traces: str | os.PathLike[str] | None = None) -> Path:
    """The folder that holds both trace CSVs: `traces` if given, else $HORIZON_OPT_TRACES, else
    the package's own copies."""
    if traces is not None:
        candidates = [Path(traces)]
    elif os.environ.get(TRACES_ENV):
        candidates = [Path(os.environ[TRACES_ENV])]
    else:
        candidates = [default_traces_dir()]
    for folder in candidates:
        if (folder / TRACE_JOBS_FILE).is_file() and (folder / TRACE_INFERENCE_FILE).is_file():
            return folder
    looked = ", ".join(str(c) for c in candidates)
    raise GeneratorError(
        f"family 'trace' needs {TRACE_JOBS_FILE} and {TRACE_INFERENCE_FILE}; not found in {looked}. "
        f"Point to the folder with --traces DIR or the {TRACES_ENV} environment variable."
    )


@dataclass(frozen=True)
class TraceJobs:
    """The job trace's columns, one entry per job."""

    submit_s: IntArray
    gpus: IntArray
    duration_s: IntArray


def _read_csv(path: Path) -> list[dict[str, str]]:
    try:
        with path.open(newline="") as fh:
            return list(csv.DictReader(fh))
    except OSError as exc:
        raise GeneratorError(f"cannot read {path}: {exc.strerror}") from None


@functools.lru_cache(maxsize=4)
def load_trace_jobs(folder: str) -> TraceJobs:
    """The job trace's columns, in submission order (read once per folder)."""
    path = Path(folder) / TRACE_JOBS_FILE
    rows = _read_csv(path)
    try:
        out = TraceJobs(
            np.array([int(r["submit_time_s"]) for r in rows], dtype=np.int64),
            np.array([int(r["num_gpus"]) for r in rows], dtype=np.int64),
            np.array([int(r["duration_s"]) for r in rows], dtype=np.int64),
        )
    except (KeyError, ValueError) as exc:
        raise GeneratorError(f"{path}: unexpected content ({exc})") from None
    order = np.argsort(out.submit_s, kind="stable")
    arrays = [a[order] for a in (out.submit_s, out.gpus, out.duration_s)]
    for a in arrays:
        a.flags.writeable = False
    return TraceJobs(*arrays)


@functools.lru_cache(maxsize=4)
def load_trace_inference(folder: str) -> dict[str, FloatArray]:
    """Request rate per 10-minute window for each model; collection gaps (`gap` = 1, every
    client silent) are filled by linear interpolation between the neighbouring windows."""
    path = Path(folder) / TRACE_INFERENCE_FILE
    rows = _read_csv(path)
    out: dict[str, FloatArray] = {}
    try:
        for model in TRACE_MODELS:
            mine = sorted((int(r["time_s"]), r) for r in rows if r["model"] == model)
            rate = np.array([float(r["rate_rps"]) for _, r in mine])
            gap = np.array([r["gap"] == "1" for _, r in mine])
            if not len(rate) or gap.all():
                raise GeneratorError(f"{path}: no usable rows for model {model!r}")
            x = np.arange(len(rate))
            rate = np.interp(x, x[~gap], rate[~gap])
            rate.flags.writeable = False
            out[model] = rate
    except (KeyError, ValueError) as exc:
        raise GeneratorError(f"{path}: unexpected content ({exc})") from None
    return out


def _trace_shape(rates: dict[str, FloatArray]) -> ShapeFn:
    """Demand of service k: model k mod 3's request rate from a seeded day of the trace (wrapping
    around at its end), averaged per slot and scaled so that its maximum is the service's peak."""

    def shape(size: Size, rng: Rng, peak: float, k: int) -> list[float]:
        series = rates[TRACE_MODELS[k % len(TRACE_MODELS)]]
        per_day = 24 * 60 // TRACE_WINDOW_MINUTES
        first = int(rng.integers(max(1, len(series) // per_day))) * per_day
        if size.slot_minutes % TRACE_WINDOW_MINUTES:
            raise GeneratorError(f"slot_minutes must be a multiple of {TRACE_WINDOW_MINUTES}")
        per_slot = size.slot_minutes // TRACE_WINDOW_MINUTES
        idx = (first + np.arange(size.slots * per_slot)) % len(series)
        demand = series[idx].reshape(size.slots, per_slot).mean(axis=1)
        demand *= peak / max(float(demand.max()), 1e-9)
        return [round(float(v), 2) for v in demand]

    return shape


def trace_kind(gpus: int, hours: float) -> str:
    """The trace has no job kind: 8+ GPUs or 4+ hours is training, under an hour evaluation,
    anything else batch inference."""
    if gpus >= 8 or hours >= 4:
        return "training"
    if hours < 1:
        return "evaluation"
    return "batch_inference"


def _trace_jobs(size: Size, rng: Rng, reserved: dict[str, IntArray], trace: TraceJobs) -> list[Job]:
    """`size.jobs` consecutive trace jobs (from a seeded position) whose gang the cluster can
    place; real gang sizes, run times (on h100) and arrivals (compressed to the first 60% of
    the horizon when they span more)."""
    limits = gang_nodes_limit(size, reserved)
    fits = {
        int(g): any(placeable(p, int(g), limits[p.name]) for p in size.pools)
        for g in np.unique(trace.gpus)
    }
    idx = np.flatnonzero([fits[int(g)] for g in trace.gpus])
    n = size.jobs
    if len(idx) < n:
        raise GeneratorError(f"the job trace has only {len(idx)} placeable jobs, {n} needed")
    chosen = idx[int(rng.integers(0, len(idx) - n + 1)) :][:n]
    seconds = trace.submit_s[chosen] - trace.submit_s[chosen[0]]
    slots = seconds / (60 * size.slot_minutes)
    last = max(1, int(0.6 * size.slots)) - 1  # latest release slot
    if slots[-1] > last:
        slots = slots * (last / slots[-1])
    releases = np.floor(slots + 1e-9).astype(np.int64)
    width = len(str(n))
    jobs: list[Job] = []
    for k, (i, release) in enumerate(zip(chosen, releases, strict=True), start=1):
        gpus = int(trace.gpus[i])
        hours = float(trace.duration_s[i]) / 3600
        kind = trace_kind(gpus, hours)
        job = Job(
            f"{_KIND_PREFIX[kind]}-{k:0{width}d}",
            kind,
            draw_priority(rng),
            gpus,
            allowed_pools(size, rng, kind, gpus, limits),
            hours,
            scalable=False,
            release=int(release),
        )
        job.durations = pool_durations(size, job, 1.0)
        jobs.append(job)
    set_times(size, rng, jobs)
    return jobs


def trace(
    name: str, size: Size, rng: Rng, *, traces: str | os.PathLike[str] | None = None
) -> InstanceData:
    """Jobs and inference shape from the public traces; see docs/generator.md."""
    folder = str(find_traces(traces))
    services = make_services(size, rng, shape=_trace_shape(load_trace_inference(folder)))
    reserved = reservation(size, services)
    outages, _up = make_outages(size, rng, reserved)
    jobs = _trace_jobs(size, rng, reserved, load_trace_jobs(folder))
    return instance_data(name, size, outages, services, jobs)
