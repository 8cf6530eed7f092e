"""The pytest plugin as users meet it, as root: the example suite passes, and a lab is gone
after a test that fails, raises, or is interrupted with SIGINT mid-test; without root the
examples are skipped with the reason. Each runs pytest in a child process."""
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

PYTHON_DIR = Path(__file__).resolve().parent.parent
REPO = PYTHON_DIR.parent
sys.path.insert(0, str(PYTHON_DIR))
import fabemu  # noqa: E402
from fabemu.pytest_plugin import lab_name_for  # noqa: E402

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="builds labs: needs root")

SCENARIO = textwrap.dedent("""\
    name: plugin
    topology: {kind: leaf-spine, leaves: 2, spines: 1, hosts_per_leaf: 1}
    links: {default: {rate: 100mbit}}
    rdma: {enabled: off}
    """)


def pytest_child(args, cwd, user=None):
    env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR))
    argv = [sys.executable, "-m", "pytest", "-p", "fabemu.pytest_plugin", "-p",
            "no:cacheprovider", "-v", *args]
    if user:
        argv = ["runuser", "-u", user, "--", *argv]
    return subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def lab_exists(name):
    return fabemu.Lab(name).exists()


def leftover_namespaces(name):
    return [n for n in os.listdir("/run/netns") if n.startswith(f"fabemu-{name}-")] \
        if os.path.isdir("/run/netns") else []


def write_suite(tmp_path, body):
    (tmp_path / "lab.yaml").write_text(SCENARIO)
    (tmp_path / "test_suite.py").write_text(textwrap.dedent(body))
    return tmp_path


def test_the_examples_pass():
    child = pytest_child([str(REPO / "examples" / "pytest")], cwd=REPO)
    out, _ = child.communicate(timeout=900)
    print(out)
    assert child.returncode == 0, out
    assert "2 passed" in out, out


@pytest.mark.parametrize("how", ["fails", "raises"])
def test_a_lab_is_taken_down_after_a_test_that(tmp_path, how):
    body = {"fails": "assert fabemu_lab.exec('h1', ['false']).ok",
            "raises": "raise RuntimeError('the program under test crashed')"}[how]
    write_suite(tmp_path, f"""\
        import pytest

        @pytest.mark.fabemu("lab.yaml")
        def test_it(fabemu_lab):
            assert fabemu_lab.exec("h1", ["ping", "-c1", "-W2", "h2"]).ok
            {body}
        """)
    child = pytest_child([], cwd=tmp_path)
    out, _ = child.communicate(timeout=300)
    assert child.returncode == 1 and "1 failed" in out, out
    assert "fabemu status" in out, out  # the lab's state joins the failure's output
    name = lab_name_for("test_suite.py::test_it#0")
    assert not lab_exists(name), out
    assert leftover_namespaces(name) == [], out


def test_a_lab_is_taken_down_when_the_run_is_interrupted(tmp_path):
    write_suite(tmp_path, """\
        import time
        import pytest

        @pytest.mark.fabemu("lab.yaml")
        def test_it(fabemu_lab):
            print("lab up", flush=True)
            time.sleep(120)
        """)
    name = lab_name_for("test_suite.py::test_it#0")
    child = pytest_child(["-s"], cwd=tmp_path)
    deadline = time.monotonic() + 120
    while not lab_exists(name):
        assert child.poll() is None and time.monotonic() < deadline, child.communicate()[0]
        time.sleep(0.2)
    time.sleep(1)  # inside the test's sleep now
    child.send_signal(signal.SIGINT)  # ^C
    out, _ = child.communicate(timeout=300)
    assert "KeyboardInterrupt" in out or "Interrupted" in out, out
    assert not lab_exists(name), out
    assert leftover_namespaces(name) == [], out


def test_without_root_the_examples_are_skipped_with_the_reason(tmp_path):
    child = pytest_child(["-rs", "-p", "no:hypothesispytest", str(REPO / "examples" / "pytest")],
                         cwd="/tmp", user="nobody")
    out, _ = child.communicate(timeout=300)
    assert child.returncode == 0, out
    assert "2 skipped" in out, out
    assert "run the tests as root" in out, out
