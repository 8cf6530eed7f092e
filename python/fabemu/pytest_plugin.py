"""pytest plugin (entry point `pytest11`): labs for tests, named after them, always taken down.

    @pytest.mark.fabemu("scenarios/default.yaml", time_scale=1000)
    def test_allreduce(fabemu_lab):
        fabemu_lab.exec_all(["python3", "train.py"], check=True)

    def test_two_labs(fabemu_lab_factory):
        a = fabemu_lab_factory("a.yaml")

    def test_job(fabemu_run):
        report = fabemu_run("scenario.yaml")     # fabemu run; the report dir joins the output

A scenario path is taken relative to the test file when it is there, else to the working
directory. Tests skip, saying why, when not root or when this machine cannot build the scenario
(fabemu's exit code 5: no fq for a delay, no rxe for rdma: on, ...). Labs are taken down after
the test whatever happened in it; a lab still up when the session ends (an interrupt between
setup and teardown) is taken down then.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

from ._cli import EXIT_NEEDS_ROOT, EXIT_UNSUPPORTED, FabemuError
from ._cli import call as fabemu_call
from .lab import Lab
from .report import Report, run

# Labs this process brought up and has not taken down yet, by name.
_live: Dict[str, Lab] = {}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "fabemu(scenario, time_scale=None, accept_degraded=False): the lab the fabemu_lab "
        "fixture brings up for the test (and takes down after it)")


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


def lab_name_for(nodeid: str) -> str:
    """A lab name (at most 12 of a-z, 0-9, '-') from the test's name, unique by a hash of its
    node id."""
    test = nodeid.split("::")[-1].split("[")[0]
    test = re.sub(r"^test_?", "", test.lower())
    base = re.sub(r"[^a-z0-9]", "", test)[:5] or "t"
    return f"{base}-{hashlib.sha1(nodeid.encode()).hexdigest()[:6]}"


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
        # A lab of that name left over by an earlier, killed session goes first.
        fabemu_call(["down", name], check=False, timeout=300)
        _live[name] = Lab(name)
        try:
            made = Lab.up(_resolve(scenario, self._request), lab=name, **options)
        except FabemuError as e:
            _down(name)
            _skip_unsupported(e)
            raise
        except BaseException:
            _down(name)
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
    """`fabemu_run(scenario, **options) -> Report`: `fabemu run` under a lab named after the
    test, its report directory (report.html, report.jsonl) named in the test's output."""
    count = [0]

    def runner(scenario: Any, *, lab: Optional[str] = None, check: bool = False,
               **options: Any) -> Report:
        _require_root()
        name = lab or lab_name_for(request.node.nodeid + f"#run{count[0]}")
        out = tmp_path / f"fabemu-report-{count[0]}"
        count[0] += 1
        _live[name] = Lab(name)
        try:
            report = run(_resolve(scenario, request), lab=name, report_dir=out, check=check,
                         **options)
        except FabemuError as e:
            _skip_unsupported(e)
            if getattr(e, "report", None) is not None:
                _add_section(request, "fabemu report", f"{out}/report.html\n{e.stdout}")
            raise
        finally:
            _down(name)
        _add_section(request, "fabemu report", f"{out}/report.html")
        request.node.user_properties.append(("fabemu_report", str(out)))
        return report

    return runner
