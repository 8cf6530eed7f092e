"""A running lab: bring it up, run commands in its hosts, change its links, read its state."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from ._cli import (EXIT_BAD_INPUT, EXIT_NEEDS_ROOT, EXIT_NO_LAB, FabemuError, NoSuchLab,
                   build_args, call, fields_of, message_of)

PathLike = Union[str, "os.PathLike[str]"]


@dataclass
class ExecResult:
    """One command in one node: its own exit status and output."""

    node: str
    returncode: int
    stdout: str
    stderr: str = ""
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def check(self) -> "ExecResult":
        """Raises FabemuError unless the command succeeded; returns self."""
        if not self.ok:
            raise FabemuError(f"{self.node}: exit status {self.returncode}: "
                              f"{(self.stderr or self.stdout).strip()[-500:]}", self.returncode)
        return self


@dataclass
class Node:
    name: str
    role: str  # "host" or "switch"
    namespace: str = ""
    present: bool = True
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class Port:
    node: str
    ifname: str
    address: str = ""
    up: bool = True
    tx_bytes: int = 0
    rx_bytes: int = 0
    tx_packets: int = 0
    rx_packets: int = 0
    tx_dropped: int = 0
    rx_dropped: int = 0


@dataclass
class Counters:
    """The link model's counters of one direction (ebpf/link_shaper.h)."""

    packets: int = 0
    bytes: int = 0
    drop_loss: int = 0
    drop_queue: int = 0
    drop_down: int = 0
    drop_watchdog: int = 0
    ce_marks: int = 0
    lossless_packets: int = 0
    lossless_drops: int = 0
    pause_ns: int = 0
    pause_events: int = 0
    corrupted: int = 0
    duplicated: int = 0
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def drops(self) -> int:
        return self.drop_loss + self.drop_queue + self.drop_down + self.drop_watchdog


@dataclass
class Direction:
    """One direction of a link ("leaf1>spine1"): its shape as the datapath holds it (wall-clock
    units of a dilated lab) and its counters."""

    name: str
    shaped: bool = False
    shape: Dict[str, Any] = field(default_factory=dict)
    counters: Counters = field(default_factory=Counters)


@dataclass
class LinkStatus:
    name: str  # "h1:leaf1"
    cls: str  # "host-leaf", "leaf-spine", ...
    a: Port
    b: Port
    a_to_b: Direction
    b_to_a: Direction


@dataclass
class Status:
    """`fabemu status --json`, typed; `raw` keeps all of it."""

    lab: str
    state: str
    time_scale: float
    nodes: List[Node]
    links: List[LinkStatus]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def hosts(self) -> List[str]:
        return [n.name for n in self.nodes if n.role == "host"]

    def link(self, name: str) -> LinkStatus:
        for l in self.links:
            if l.name == name or l.name == ":".join(reversed(name.split(":"))):
                return l
        raise KeyError(name)

    def direction(self, name: str) -> Direction:
        """A direction by its name, "a>b"."""
        for l in self.links:
            for d in (l.a_to_b, l.b_to_a):
                if d.name == name:
                    return d
        raise KeyError(name)


def _direction(d: Mapping[str, Any]) -> Direction:
    c = d.get("counters") or {}
    return Direction(name=d.get("direction", ""), shaped=bool(d.get("shaped")),
                     shape=dict(d.get("shape") or {}),
                     counters=Counters(**fields_of(Counters, c), raw=dict(c)))


def parse_status(data: Mapping[str, Any]) -> Status:
    nodes = [Node(**fields_of(Node, n), raw=dict(n)) for n in data.get("nodes", [])]
    links = []
    for l in data.get("links", []):
        links.append(LinkStatus(name=l.get("name", ""), cls=l.get("class", ""),
                                a=Port(**fields_of(Port, l.get("a", {}))),
                                b=Port(**fields_of(Port, l.get("b", {}))),
                                a_to_b=_direction(l.get("a_to_b", {})),
                                b_to_a=_direction(l.get("b_to_a", {}))))
    ts = data.get("time_scale")
    factor = ts.get("factor", 1.0) if isinstance(ts, dict) else (ts or 1.0)
    return Status(lab=data.get("lab", ""), state=data.get("state", ""), time_scale=float(factor),
                  nodes=nodes, links=links, raw=dict(data))


@dataclass
class Predicted:
    """The link model's prediction for one collective: time = latency + bytes * per byte."""

    algorithm: str
    latency_s: float
    seconds_per_byte: float
    bus_factor: float
    bottleneck: str = ""

    def seconds(self, size: int) -> float:
        return self.latency_s + size * self.seconds_per_byte

    def busbw_gbps(self, size: int) -> float:
        """Bus bandwidth in GB/s (nccl-tests' convention) for a message of `size` bytes."""
        t = self.seconds(size)
        return size / t * self.bus_factor / 1e9 if t > 0 else float("inf")


def _shape_args(shape: Mapping[str, Any]) -> List[str]:
    """link set flags from keyword arguments: strings as the CLI takes them ("10gbit", "5us",
    "0.1%", "200K,150K,1ms", "off"); numbers as bit/s (rate), seconds (delay, jitter, queue
    as time), bytes (ecn_threshold given as an int is bytes) and fractions (loss, corrupt,
    duplicate)."""
    args: List[str] = []
    for key, value in shape.items():
        flag = "--" + key.replace("_", "-")
        if key == "reorder":
            args.append("--reorder" if value else "--no-reorder")
            continue
        if value is None or value is False:
            value = "off" if key in ("pfc", "ecn_threshold") else "0"
        elif isinstance(value, bool):
            raise ValueError(f"{key}: give a value, not True")
        elif isinstance(value, (int, float)) and not isinstance(value, str):
            if key == "rate":
                value = f"{int(value)}bit"
            elif key in ("delay", "jitter"):
                value = f"{round(value * 1e9)}ns"
            elif key in ("loss", "corrupt", "duplicate"):
                value = repr(float(value))
            else:
                value = str(value)
        args += [flag, str(value)]
    return args


class Link:
    """One link of a lab, "a:b" (both directions) or "a>b" (one)."""

    def __init__(self, lab: "Lab", name: str):
        self.lab = lab
        self.name = name

    def set(self, **shape: Any) -> str:
        """Changes the link live, as `fabemu link set`: rate=, delay=, jitter=, loss=,
        loss_burst=, queue=, ecn_threshold=, pfc=, corrupt=, duplicate=, reorder=. Unnamed
        settings stay. Returns what the CLI printed (before -> after per direction)."""
        if not shape:
            raise ValueError("name at least one setting, e.g. rate='10gbit'")
        return call(["link", "set", self.lab.name, self.name, *_shape_args(shape)]).stdout

    def down(self) -> str:
        """Takes the link down: the link model drops everything on it."""
        return call(["link", "down", self.lab.name, self.name]).stdout

    def up(self) -> str:
        """Brings the link back up with its shape."""
        return call(["link", "up", self.lab.name, self.name]).stdout

    def __repr__(self) -> str:
        return f"Link({self.lab.name!r}, {self.name!r})"


class Lab:
    """A lab on this machine. `Lab.up(scenario)` builds one; as a context manager it is taken
    down when the block ends, whatever ends it (an exception, a failed assert, ^C)."""

    def __init__(self, name: str, scenario: Optional[str] = None, up_output: str = "",
                 up_result: Optional[Dict[str, Any]] = None):
        self.name = name
        self.scenario = scenario
        self.up_output = up_output
        # `up --json` (docs/schema/up.schema.json): hosts, links, time_scale, link_model, notes...
        self.up_result = up_result or {}

    @classmethod
    def up(cls, scenario: PathLike, lab: Optional[str] = None, *,
           time_scale: Union[None, float, str] = None, accept_degraded: bool = False,
           timeout: Optional[float] = 900, env: Optional[Mapping[str, str]] = None) -> "Lab":
        """`fabemu up SCENARIO`. Raises FabemuError (exit_code 5, `.unsupported`, when this
        machine cannot build it; the message says what is missing). A lab named `lab` that is
        already up is refused (exit 1) and left alone."""
        args = build_args("up", scenario, lab, time_scale, accept_degraded) + ["--json"]
        try:
            out = call(args, timeout=timeout, env=env).stdout
        except FabemuError as e:
            # An up that exited by itself took down what it had made; one that refused because a
            # lab of that name exists must leave that lab alone. Timed out or killed: half made.
            if lab and (e.exit_code == 124 or e.exit_code < 0):
                call(["down", lab], check=False, timeout=300)
            raise
        except BaseException:
            # A half-built lab (an interrupted up) is taken down again.
            if lab:
                call(["down", lab], check=False, timeout=300)
            raise
        try:
            result = json.loads(out)
        except ValueError:
            raise FabemuError(f"up --json printed no JSON: {out[:200]}", 1)
        return cls(result["lab"], str(scenario), out, result)

    def __enter__(self) -> "Lab":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.down()

    def down(self, timeout: Optional[float] = 300) -> None:
        """`fabemu down`: removes everything the lab made; a lab already gone is fine."""
        call(["down", self.name], timeout=timeout)

    def exists(self) -> bool:
        r = call(["status", self.name, "--json"], check=False)
        return r.returncode != EXIT_NO_LAB

    def exec(self, node: str, argv: Sequence[str], *, timeout: Optional[float] = None,
             check: bool = False, env: Optional[Mapping[str, str]] = None) -> ExecResult:
        """Runs argv in `node` (`fabemu exec LAB:NODE -- ARGV`); its own exit status. A
        timeout stops it and returns timed_out (or raises with check)."""
        try:
            r = call(["exec", f"{self.name}:{node}", "--", *argv], timeout=timeout, check=False,
                     env=env)
            # fabemu's own refusals (no such lab or node, not root) before the command ran.
            if r.returncode in (EXIT_BAD_INPUT, EXIT_NO_LAB, EXIT_NEEDS_ROOT) and \
                    r.stderr.startswith("fabemu: ") and not r.stdout:
                kind = NoSuchLab if r.returncode == EXIT_NO_LAB else FabemuError
                raise kind(message_of(r.stderr, r.returncode), r.returncode, r.args, r.stdout,
                           r.stderr)
            res = ExecResult(node, r.returncode, r.stdout, r.stderr)
        except FabemuError as e:
            if e.exit_code != 124:
                raise
            res = ExecResult(node, 124, e.stdout, e.stderr, timed_out=True)
        return res.check() if check else res

    def exec_all(self, argv: Sequence[str], *, timeout: Optional[float] = None,
                 check: bool = False) -> Dict[str, ExecResult]:
        """Runs argv in every host at once, each with RANK, WORLD_SIZE and the rest of the rank
        environment (`fabemu exec LAB --all --json`); per host its status and output (stdout
        and stderr together, as written)."""
        r = call(["exec", self.name, "--all", "--json", "--", *argv], timeout=timeout,
                 check=False)
        try:
            data = json.loads(r.stdout)
        except ValueError:
            raise FabemuError(message_of(r.stderr, r.returncode), r.returncode, r.args,
                              r.stdout, r.stderr) from None
        results = {h["host"]: ExecResult(h["host"], h["status"], h.get("output", ""),
                                         timed_out=h.get("timed_out", False))
                   for h in data.get("hosts", [])}
        if check:
            for res in results.values():
                res.check()
        return results

    def link(self, name: str) -> Link:
        return Link(self, name)

    def status(self) -> Status:
        return parse_status(json.loads(call(["status", self.name, "--json"]).stdout))

    def predict(self, transport: str = "tcp") -> Dict[str, Predicted]:
        """The link model's prediction per collective, over the lab's routes and live shapes."""
        data = json.loads(call(["predict", self.name, "--transport", transport, "--json"]).stdout)
        return {name: Predicted(**fields_of(Predicted, p)) for name, p in data.items()
                if isinstance(p, dict)}

    def __repr__(self) -> str:
        return f"Lab({self.name!r})"
