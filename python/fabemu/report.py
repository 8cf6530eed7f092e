"""`fabemu run`: the whole job on a scenario, and its report.jsonl read back as objects."""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Union

from ._cli import FabemuError, build_args, call, fields_of, message_of


@dataclass
class Result:
    """One message size of a collective step (times and rates of the real fabric)."""

    collective: str
    size: int
    time_us: float
    busbw_gbps: float
    wrong: int = 0
    pred_busbw_gbps: Optional[float] = None
    wall_time_us: float = 0
    # Each timed iteration on its slowest rank: where a fault struck, the mean hides it.
    iteration_time_us: List[float] = field(default_factory=list)


@dataclass
class Flow:
    """One flow of an incast or traffic step."""

    role: str
    src: str
    dst: str
    bps: float
    fair_bps: Optional[float] = None
    lost: Optional[float] = None
    retransmits: int = 0
    stalled_s: float = 0
    # rdma: {cc: dcqcn}: the CNPs its sender's NIC took during the step; None without DCQCN.
    cnps: Optional[int] = None
    failure: str = ""


@dataclass
class Step:
    index: int
    title: str
    ok: bool
    failure: str = ""
    start_s: float = 0
    seconds: float = 0
    wall_seconds: float = 0
    results: List[Result] = field(default_factory=list)
    flows: List[Flow] = field(default_factory=list)
    # The busiest ECMP groups over this step alone, as Report.ecmp_groups (docs/json.md).
    ecmp_groups: List[Dict[str, Any]] = field(default_factory=list, repr=False)
    # Where switches balance in eBPF: the flows' order at their last hop, path changes and the
    # hosts' TCP counters over this step (report.jsonl's order record; docs/json.md).
    order: Optional[Dict[str, Any]] = field(default=None, repr=False)
    # A replay step (docs/replay.md): its `replay` record (format, placement, checked, wrong,
    # model_iteration_s), one `replay_iteration` record per timed iteration (time_s, model_s,
    # ratio, passes, collectives) and each rank's `replay_timeline` (its operations' spans).
    replay: Optional[Dict[str, Any]] = field(default=None, repr=False)
    replay_iterations: List[Dict[str, Any]] = field(default_factory=list, repr=False)
    replay_timeline: List[Dict[str, Any]] = field(default_factory=list, repr=False)

    def busbw_gbps(self, size: Optional[int] = None) -> float:
        """The busbw at `size` (the largest size when None), GB/s."""
        if not self.results:
            raise ValueError(f"{self.title}: no collective results")
        r = max(self.results, key=lambda r: r.size) if size is None else \
            next(r for r in self.results if r.size == size)
        return r.busbw_gbps


@dataclass
class Fault:
    what: str
    target: str
    due_s: float
    applied_s: Optional[float]
    done: bool
    detail: str = ""
    error: str = ""


@dataclass
class Expectation:
    what: str
    ok: bool


@dataclass
class Report:
    """report.jsonl of one run. `ok`: every step and expectation held (the CLI's exit 0)."""

    dir: Path
    exit_code: int
    run: Dict[str, Any]
    steps: List[Step]
    faults: List[Fault]
    expectations: List[Expectation]
    samples: List[Dict[str, Any]] = field(default_factory=list, repr=False)
    output: str = field(default="", repr=False)
    # Each switch's ECMP group over the run, busiest first: switch, name, routes, members
    # (direction, bytes, frames), bytes, max_over_mean, jain (docs/json.md).
    ecmp_groups: List[Dict[str, Any]] = field(default_factory=list, repr=False)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    @property
    def html(self) -> Path:
        return self.dir / "report.html"

    @property
    def time_scale(self) -> float:
        return float(self.run.get("time_scale", 1))

    def step(self, title_part: str) -> Step:
        """The first step whose title contains `title_part` ("allreduce", "incast")."""
        for s in self.steps:
            if title_part in s.title:
                return s
        raise KeyError(title_part)


def read_report(directory: Union[str, Path], exit_code: int = 0, output: str = "") -> Report:
    """Reads DIR/report.jsonl."""
    d = Path(directory)
    run: Dict[str, Any] = {}
    steps: Dict[int, Step] = {}
    faults, expectations, samples, groups = [], [], [], []
    with open(d / "report.jsonl", encoding="utf-8", errors="replace") as f:
        for line in f:
            if not line.strip():
                continue
            j = json.loads(line)
            kind = j.pop("type", "")
            if kind == "run":
                run = j
            elif kind == "step":
                steps[j["index"]] = Step(**fields_of(Step, j))
            elif kind == "result":
                steps[j["step"]].results.append(Result(**fields_of(Result, j)))
            elif kind == "flow":
                steps[j["step"]].flows.append(Flow(**fields_of(Flow, j, src="from", dst="to")))
            elif kind == "fault":
                faults.append(Fault(**fields_of(Fault, j)))
            elif kind == "expect":
                expectations.append(Expectation(**fields_of(Expectation, j)))
            elif kind == "sample":
                samples.append(j)
            elif kind == "order":
                steps[j["step"]].order = j
            elif kind == "replay":
                steps[j["step"]].replay = j
            elif kind == "replay_iteration":
                steps[j["step"]].replay_iterations.append(j)
            elif kind == "replay_timeline":
                steps[j["step"]].replay_timeline.append(j)
            elif kind == "ecmp_group" and "step" in j:
                steps[j["step"]].ecmp_groups.append(j)
            elif kind == "ecmp_group":
                groups.append(j)
    return Report(d, exit_code, run, [steps[i] for i in sorted(steps)], faults, expectations,
                  samples, output, groups)


def run(scenario: Union[str, Path], lab: Optional[str] = None, *,
        report_dir: Union[None, str, Path] = None, time_scale: Union[None, float, str] = None,
        accept_degraded: bool = False, keep: bool = False, timeout: Optional[float] = None,
        check: bool = True, env: Optional[Mapping[str, str]] = None,
        replay: Union[None, str, Path] = None, replay_format: str = "simai",
        comm_groups: Union[None, str, Path] = None,
        junit: Union[None, str, Path] = None) -> Report:
    """`fabemu run SCENARIO`: builds the lab, checks it, runs the workload while the faults
    play, reports, tears down. Returns the report; with `check`, a run that failed (a step, an
    expectation) raises FabemuError carrying it as `.report`. A run that produced no report
    (bad scenario, exit 2; this machine cannot, exit 5) always raises. `replay`: a training
    step (SimAI's workload text, or a Chakra trace's prefix with `replay_format="chakra"` and
    its `comm_groups`) as the workload instead of the scenario's (docs/replay.md). `junit`: also
    write the run as JUnit XML there (docs/observability.md)."""
    out_dir = Path(report_dir) if report_dir else Path(tempfile.mkdtemp(prefix="fabemu-report-"))
    args = build_args("run", scenario, lab, time_scale, accept_degraded)
    args += ["--report", str(out_dir)]
    if replay is not None:
        args += ["--replay", str(replay), "--format", replay_format]
        if comm_groups is not None:
            args += ["--comm-groups", str(comm_groups)]
    if junit is not None:
        args += ["--junit", str(junit)]
    if keep:
        args.append("--keep")
    r = call(args, timeout=timeout, check=False, env=env)
    if not (out_dir / "report.jsonl").is_file():
        raise FabemuError(message_of(r.stderr, r.returncode), r.returncode, r.args, r.stdout,
                          r.stderr)
    report = read_report(out_dir, r.returncode, r.stdout)
    if check and r.returncode != 0:
        e = FabemuError(message_of(r.stderr, r.returncode), r.returncode, r.args, r.stdout,
                        r.stderr)
        e.report = report  # type: ignore[attr-defined]
        raise e
    return report
