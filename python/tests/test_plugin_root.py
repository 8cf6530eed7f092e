"""The pytest plugin as users meet it, as root: the example suite passes, and a lab is gone
after a test that fails, raises, or is interrupted with SIGINT mid-test; two runs of the same
tests at once on one machine both pass, each with labs of its own; a lab the plugin did not
bring up (`lab=` naming one already up) is left alone; without root the examples are skipped
with the reason. Each runs pytest in a child process."""
import os
import re
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

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="builds labs: needs root")

SCENARIO = textwrap.dedent("""\
    name: plugin
    topology: {kind: leaf-spine, leaves: 2, spines: 1, hosts_per_leaf: 1}
    links: {default: {rate: 100mbit}}
    rdma: {enabled: off}
    """)


def pytest_child(args, cwd, user=None, env=None):
    env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR), **(env or {}))
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


def labs_named_in(out):
    """The labs a child's tests printed as `LAB=name`."""
    return re.findall(r"LAB=([a-z0-9-]+)", out)


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
            print(f"LAB={{fabemu_lab.name}}")
            assert fabemu_lab.exec("h1", ["ping", "-c1", "-W2", "h2"]).ok
            {body}
        """)
    child = pytest_child([], cwd=tmp_path)
    out, _ = child.communicate(timeout=300)
    assert child.returncode == 1 and "1 failed" in out, out
    [name] = labs_named_in(out)
    assert f"fabemu status {name}" in out, out  # the lab's state joins the failure's output
    assert not lab_exists(name), out
    assert leftover_namespaces(name) == [], out


def test_a_lab_is_taken_down_when_the_run_is_interrupted(tmp_path):
    write_suite(tmp_path, """\
        import time
        import pytest

        @pytest.mark.fabemu("lab.yaml")
        def test_it(fabemu_lab):
            print(f"LAB={fabemu_lab.name}", flush=True)
            time.sleep(120)
        """)
    child = pytest_child(["-s"], cwd=tmp_path)
    head = ""
    while not labs_named_in(head):
        line = child.stdout.readline()
        assert line, head + child.communicate()[0]  # the child ended before its test began
        head += line
    [name] = labs_named_in(head)
    assert lab_exists(name), head
    time.sleep(1)  # inside the test's sleep now
    child.send_signal(signal.SIGINT)  # ^C
    out, _ = child.communicate(timeout=300)
    out = head + out
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


def test_two_runs_of_the_same_tests_at_once_both_pass(tmp_path):
    # Two checkouts or CI jobs on one machine: the same file, the same test names, both runs
    # started at once. Each test waits until both runs' labs are up, then uses its own.
    meet = tmp_path / "meet"
    meet.mkdir()
    write_suite(tmp_path, f"""\
        import os
        import time
        from pathlib import Path

        import fabemu
        import pytest

        @pytest.mark.fabemu("lab.yaml")
        def test_hold(fabemu_lab):
            print(f"LAB={{fabemu_lab.name}}", flush=True)
            Path({str(meet)!r}, fabemu_lab.name).touch()
            deadline = time.monotonic() + 120
            while len(os.listdir({str(meet)!r})) < 2:
                assert time.monotonic() < deadline, "the other run's lab never came up"
                time.sleep(0.2)
            for name in os.listdir({str(meet)!r}):
                assert fabemu.Lab(name).exists(), name  # both up at once
            assert fabemu_lab.exec("h1", ["ping", "-c3", "-W2", "h2"]).ok
            assert fabemu_lab.exec("h2", ["sleep", "3"]).ok
            assert fabemu_lab.exec("h2", ["ping", "-c3", "-W2", "h1"]).ok
        """)
    children = [pytest_child(["-s"], cwd=tmp_path) for _ in range(2)]
    outs = [c.communicate(timeout=600)[0] for c in children]
    print(*outs, sep="\n")
    for child, out in zip(children, outs):
        assert child.returncode == 0 and "1 passed" in out, out
    names = [labs_named_in(out) for out in outs]
    assert all(len(n) == 1 for n in names), outs
    assert names[0] != names[1], names
    assert sorted(os.listdir(meet)) == sorted(n[0] for n in names)
    for [name] in names:
        assert not lab_exists(name), outs
        assert leftover_namespaces(name) == [], outs


def test_a_lab_the_plugin_did_not_bring_up_is_left_alone(tmp_path):
    taken = f"zp{os.getpid() % 100000}t"
    mine = f"zp{os.getpid() % 100000}m"
    write_suite(tmp_path, f"""\
        import pytest

        @pytest.mark.fabemu("lab.yaml", lab={taken!r})
        def test_marker(fabemu_lab):
            pass

        def test_factory(fabemu_lab_factory):
            fabemu_lab_factory("lab.yaml", lab={taken!r})

        def test_run(fabemu_run):
            fabemu_run("lab.yaml", lab={taken!r})

        def test_a_free_name(fabemu_lab_factory):
            lab = fabemu_lab_factory("lab.yaml", lab={mine!r})
            assert lab.name == {mine!r} and lab.exec("h1", ["ping", "-c1", "-W2", "h2"]).ok
        """)
    outside = fabemu.Lab.up(tmp_path / "lab.yaml", lab=taken)
    try:
        child = pytest_child(["-rfE"], cwd=tmp_path)
        out, _ = child.communicate(timeout=600)
        print(out)
        assert child.returncode == 1, out
        assert "1 passed" in out and "2 failed" in out and "1 error" in out, out
        clash = f"a lab named '{taken}' is already up and this test did not bring it up: left alone"
        assert out.count(clash) >= 3, out
        assert lab_exists(taken), out
        assert outside.exec("h1", ["ping", "-c1", "-W2", "h2"]).ok, out
        assert not lab_exists(mine), out  # lab= that the test brought up is taken down
        assert leftover_namespaces(mine) == [], out
    finally:
        outside.down()
    assert not lab_exists(taken)
