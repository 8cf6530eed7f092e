"""pytest plugin (entry point `pytest11`): labs for tests, named after them and the run, taken
down after them.

    @pytest.mark.fabemu("scenarios/default.yaml", time_scale=1000)
    def test_allreduce(fabemu_lab):
        fabemu_lab.exec_all(["python3", "train.py"], check=True)

    def test_two_labs(fabemu_lab_factory):
        a = fabemu_lab_factory("a.yaml")
        b = fabemu_lab_factory("b.yaml", lab="mylab")   # a name of your own

    def test_job(fabemu_run):
        report = fabemu_run("scenario.yaml")     # fabemu run; the report dir joins the output

A lab's name is the test's name and a hash of its node id and of this pytest run (a random
token per process), so two runs of the same tests on one machine (two checkouts, two CI jobs)
never share a lab. `lab=NAME` (on the marker, the factory and fabemu_run) names it yourself; a
lab of that name already up is not this test's: the test fails and that lab is left alone. The
plugin only ever takes down labs it brought up: after the test whatever happened in it, and a
lab still up when the session ends (an interrupt between setup and teardown) then. A lab left
by a killed run stays until you take it down (`fabemu status` lists labs, `fabemu down NAME`).

A scenario path is taken relative to the test file when it is there, else to the working
directory. Tests skip, saying why, when not root or when this machine cannot build the scenario
(fabemu's exit code 5: no fq for a delay, no rxe for rdma: on, ...).
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

from ._cli import EXIT_NEEDS_ROOT, EXIT_UNSUPPORTED, FabemuError
from ._cli import call as fabemu_call
from .lab import Lab
from .report import Report, run

# Labs this process brought up and has not taken down yet, by name: the only ones it takes down.
_live: Dict[str, Lab] = {}

# This process's pytest run, mixed into the names of its labs.
_RUN = secrets.token_hex(8)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "fabemu(scenario, lab=None, time_scale=None, accept_degraded=False): the lab the "
        "fabemu_lab fixture brings up for the test (and takes down after it); lab= names it "
        "(default: after the test and this run)")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    for name in list(_live):
        _down(name)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):  # noqa: A002
    outcome = yield
    rep = outcome.get_result()
    if rep.when != "call":
        return
    # Shown with the test's result: the reports it made, and when it failed, the state of its
    # labs (still up: teardown comes after this).
    for title, text in getattr(item, "_fabemu_sections", []):
        rep.sections.append((title, text))
    if rep.failed:
        for lab in getattr(item, "_fabemu_labs", []):
            st = fabemu_call(["status", lab.name], check=False, timeout=60)
            rep.sections.append((f"fabemu status {lab.name}", st.stdout + st.stderr))


def lab_name_for(nodeid: str, run: Optional[str] = None) -> str:
    """A lab name (fabemu's rule: 1-12 of a-z, 0-9, '-', not starting with '-'): up to 5 letters
    of the test's name, then 6 base-36 digits of a hash of its node id and of `run` (this
    process's random token by default), so that another pytest run names the same test's lab
    differently."""
    test = nodeid.split("::")[-1].split("[")[0].split("#")[0]
    test = re.sub(r"^test_?", "", test.lower())
    base = re.sub(r"[^a-z0-9]", "", test)[:5] or "t"
    n = int.from_bytes(hashlib.sha1(f"{run or _RUN}\0{nodeid}".encode()).digest()[:8], "big")
    digits = ""
    for _ in range(6):
        n, d = divmod(n, 36)
        digits += "0123456789abcdefghijklmnopqrstuvwxyz"[d]
    return f"{base}-{digits}"


def _require_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("fabemu builds namespaces and links in the kernel: run the tests as root "
                    "(sudo pytest ...)")


def _skip_unsupported(e: FabemuError) -> None:
    if e.exit_code == EXIT_UNSUPPORTED:
        pytest.skip(f"this machine cannot build the scenario: {e.message} (`fabemu doctor` "
                    "lists what the kernel has; `scripts/vm-run` runs a full kernel)")
    if e.exit_code == EXIT_NEEDS_ROOT:
        pytest.skip(f"fabemu needs root: {e.message}")


def _down(name: str) -> None:
    _live.pop(name, None)
    fabemu_call(["down", name], check=False, timeout=300)


def _refuse_if_taken(name: str) -> None:
    """Fails the test when a lab named `name` is already up: this test did not bring it up, so
    it is neither used nor taken down."""
    if name in _live or Lab(name).exists():
        pytest.fail(f"a lab named {name!r} is already up and this test did not bring it up: left "
                    "alone; pass another lab= (or take that one down, `fabemu down "
                    f"{name}`, if it is yours)", pytrace=False)


def _resolve(scenario: Any, request: pytest.FixtureRequest) -> str:
    p = Path(scenario)
    if not p.is_absolute():
        beside = Path(str(request.node.fspath)).parent / p
        if beside.exists():
            return str(beside)
    return str(p)


def _add_section(request: pytest.FixtureRequest, title: str, text: str) -> None:
    item = request.node
    if not hasattr(item, "_fabemu_sections"):
        item._fabemu_sections = []  # type: ignore[attr-defined]
    item._fabemu_sections.append((title, text))  # type: ignore[attr-defined]



class LabFactory:
    """fabemu_lab_factory: `factory(scenario, lab=None, time_scale=None, accept_degraded=False)`
    brings a lab up for this test."""

    def __init__(self, request: pytest.FixtureRequest):
        self._request = request
        self.labs: List[Lab] = []

    def __call__(self, scenario: Any, *, lab: Optional[str] = None, **options: Any) -> Lab:
        _require_root()
        name = lab or lab_name_for(self._request.node.nodeid + f"#{len(self.labs)}")
        _refuse_if_taken(name)
        # Lab.up takes down what a timed-out or interrupted up half made, and nothing when fabemu
        # refused (a lab of that name came up meanwhile: not ours).
        try:
            made = Lab.up(_resolve(scenario, self._request), lab=name, **options)
        except FabemuError as e:
            _skip_unsupported(e)
            raise
        _live[name] = made
        self.labs.append(made)
        item = self._request.node
        if not hasattr(item, "_fabemu_labs"):
            item._fabemu_labs = []  # type: ignore[attr-defined]
        item._fabemu_labs.append(made)  # type: ignore[attr-defined]
        return made

    def teardown(self) -> None:
        errors = []
        for lab in reversed(self.labs):
            try:
                lab.down()
            except FabemuError as e:
                errors.append(e)
            _live.pop(lab.name, None)
        if errors:
            raise errors[0]


@pytest.fixture
def fabemu_lab_factory(request: pytest.FixtureRequest):
    factory = LabFactory(request)
    try:
        yield factory
    finally:
        factory.teardown()


@pytest.fixture
def fabemu_lab(request: pytest.FixtureRequest, fabemu_lab_factory: LabFactory) -> Lab:
    marker = request.node.get_closest_marker("fabemu")
    if marker is None or not marker.args:
        pytest.fail("fabemu_lab needs @pytest.mark.fabemu('scenario.yaml') on the test (or use "
                    "fabemu_lab_factory)", pytrace=False)
    return fabemu_lab_factory(*marker.args, **marker.kwargs)


@pytest.fixture
def fabemu_run(request: pytest.FixtureRequest, tmp_path: Path):
    """`fabemu_run(scenario, lab=None, check=False, **options) -> Report`: `fabemu run` under a
    lab named after the test and this run (or `lab`), its report directory (report.html,
    report.jsonl) named in the test's output."""
    count = [0]

    def runner(scenario: Any, *, lab: Optional[str] = None, check: bool = False,
               **options: Any) -> Report:
        _require_root()
        name = lab or lab_name_for(request.node.nodeid + f"#run{count[0]}")
        out = tmp_path / f"fabemu-report-{count[0]}"
        count[0] += 1
        _refuse_if_taken(name)
        _live[name] = Lab(name)
        ours = True
        try:
            report = run(_resolve(scenario, request), lab=name, report_dir=out, check=check,
                         **options)
        except FabemuError as e:
            # No report and fabemu exited by itself: it never had the lab up, or took down what
            # it had made (and a lab of that name that came up meanwhile is not ours).
            ours = getattr(e, "report", None) is not None or e.exit_code == 124 or \
                e.exit_code < 0
            _skip_unsupported(e)
            if getattr(e, "report", None) is not None:
                _add_section(request, "fabemu report", f"{out}/report.html\n{e.stdout}")
            raise
        finally:
            if ours:
                _down(name)  # fabemu run's own teardown missed by an interrupt, or keep=True
            else:
                _live.pop(name, None)
        _add_section(request, "fabemu report", f"{out}/report.html")
        request.node.user_properties.append(("fabemu_report", str(out)))
        return report

    return runner
