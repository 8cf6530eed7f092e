"""The Python API against a fake fabemu binary (no root, no kernel): what it runs, how it reads
the CLI's JSON, and that errors carry the CLI's message and exit code."""
import json
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import fabemu  # noqa: E402
from fabemu.pytest_plugin import lab_name_for  # noqa: E402

STATUS = {
    "lab": "t1", "state": "up", "time_scale": {"factor": 1000},
    "nodes": [{"name": "h1", "role": "host", "namespace": "fabemu-t1-h1", "present": True},
              {"name": "leaf1", "role": "switch", "namespace": "fabemu-t1-leaf1",
               "present": True}],
    "links": [{"name": "h1:leaf1", "class": "host-leaf",
               "a": {"node": "h1", "ifname": "eth0", "address": "10.64.0.1", "up": True,
                     "tx_bytes": 10},
               "b": {"node": "leaf1", "ifname": "h1", "address": "10.64.0.0", "up": True},
               "a_to_b": {"direction": "h1>leaf1", "shaped": True, "shape": {"rate_bps": 25000},
                          "counters": {"packets": 7, "drop_queue": 2, "drop_loss": 1,
                                       "pause_ns": 5, "future_counter": 9}},
               "b_to_a": {"direction": "leaf1>h1", "shaped": False}}],
}


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """A fabemu that logs its argv and answers from a table keyed by the subcommand."""
    log = tmp_path / "calls"
    status = tmp_path / "status.json"
    status.write_text(json.dumps(STATUS))
    script = tmp_path / "fabemu"
    script.write_text(textwrap.dedent(f"""\
        #!{sys.executable}
        import json, sys
        args = sys.argv[1:]
        open({str(log)!r}, "a").write(json.dumps(args) + "\\n")
        cmd = args[0]
        if cmd == "up":
            if "slow.yaml" in args:
                import time; time.sleep(60)
            if "taken.yaml" in args:
                print("fabemu: lab 'x' already exists (/run/fabemu/x); `fabemu down x` first, "
                      "or pick another --lab", file=sys.stderr); sys.exit(1)
            if "bad.yaml" in args:
                print("fabemu: bad.yaml:3:5: links.rate: not a rate", file=sys.stderr); sys.exit(2)
            if "nofq.yaml" in args:
                print("fabemu: nofq.yaml: links: h1>leaf1: delay 5us needs the fq qdisc",
                      file=sys.stderr); sys.exit(5)
            assert "--json" in args
            print('{{"schema": 1, "command": "up", "lab": "t1", "hosts": 1}}'); sys.exit(0)
        if cmd == "status":
            if args[1] == "gone":
                print("fabemu: no lab named 'gone'", file=sys.stderr); sys.exit(3)
            print(open({str(status)!r}).read()); sys.exit(0)
        if cmd == "exec":
            if "--all" in args:
                print(json.dumps({{"lab": "t1", "hosts": [
                    {{"host": "h1", "status": 0, "timed_out": False, "output": "0\\n"}},
                    {{"host": "h2", "status": 3, "timed_out": False, "output": "boom\\n"}}]}}))
                sys.exit(3)
            if args[1].endswith(":h9"):
                print("fabemu: exec: lab t1 has no node named 'h9'", file=sys.stderr); sys.exit(2)
            print("out"); print("err", file=sys.stderr); sys.exit(7)
        if cmd == "predict":
            print(json.dumps({{"allreduce": {{"algorithm": "ring", "latency_s": 0.001,
                  "seconds_per_byte": 1e-9, "bus_factor": 1.75, "bottleneck": "h1>leaf1"}},
                  "note": "x"}})); sys.exit(0)
        if cmd == "run":
            out = args[args.index("--report") + 1]
            lines = [
              {{"type": "run", "lab": "t1", "time_scale": 1}},
              {{"type": "step", "index": 0, "title": "workload[0] allreduce (gloo, tcp)",
               "ok": True, "seconds": 1.5}},
              {{"type": "result", "step": 0, "collective": "allreduce", "size": 1048576,
               "time_us": 100, "busbw_gbps": 1.5, "wrong": 0, "pred_busbw_gbps": 1.6,
               "iteration_time_us": [90, 110]}},
              {{"type": "flow", "step": 0, "role": "incast", "from": "h2", "to": "h1",
               "bps": 5e6, "fair_bps": 6e6, "stalled_s": 0.001}},
              {{"type": "ecmp_group", "switch": "leaf1", "name": "leaf1 > spine1|spine2",
               "routes": 1, "bytes": 300, "max_over_mean": 1.33, "jain": 0.9,
               "members": [{{"direction": "leaf1>spine1", "bytes": 200, "frames": 2}},
                           {{"direction": "leaf1>spine2", "bytes": 100, "frames": 1}}]}},
              {{"type": "ecmp_group", "step": 0, "switch": "leaf1", "name": "leaf1 > spine1|spine2",
               "routes": 1, "bytes": 30, "max_over_mean": 1.0, "jain": 1.0,
               "members": [{{"direction": "leaf1>spine1", "bytes": 15, "frames": 1}},
                           {{"direction": "leaf1>spine2", "bytes": 15, "frames": 1}}]}},
              {{"type": "order", "step": 0, "flows": 2, "flows_reordered": 1, "frames": 90,
               "reordered": 9, "worst": [{{"flow": "h1:40000>h2:5201", "frames": 45,
               "reordered": 9}}], "moves": 80, "down_skips": 0, "no_member": 0,
               "tcp": {{"out_segs": 100, "retrans_segs": 2, "reorder_seen": 1, "dsacks": 1}}}},
              {{"type": "expect", "what": "completes", "ok": "fail" not in args[1]}}]
            if "--replay" in args:
                lines[1:] = [
                  {{"type": "step", "index": 0, "title": "workload[0] replay m.txt", "ok": True}},
                  {{"type": "replay", "step": 0, "format": "simai", "checked": 64, "wrong": 0,
                   "model_iteration_s": 0.01}},
                  {{"type": "replay_iteration", "step": 0, "iteration": 1, "time_s": 0.011,
                   "model_s": 0.01, "ratio": 1.1}},
                  {{"type": "replay_timeline", "step": 0, "rank": 0, "host": "h1", "ops": []}}]
            open(out + "/report.jsonl", "w").write("".join(json.dumps(l) + "\\n" for l in lines))
            sys.exit(1 if "fail" in args[1] else 0)
        sys.exit(0)
        """))
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("FABEMU_BIN", str(script))
    return lambda: [json.loads(l) for l in log.read_text().splitlines()] if log.exists() else []


def test_up_names_the_lab_and_the_context_manager_always_takes_it_down(fake):
    with pytest.raises(RuntimeError):
        with fabemu.Lab.up("s.yaml") as lab:
            assert lab.name == "t1"
            raise RuntimeError("the test failed")
    assert fake()[-1] == ["down", "t1"]


def test_errors_carry_the_message_and_exit_code(fake):
    with pytest.raises(fabemu.FabemuError) as e:
        fabemu.Lab.up("bad.yaml", lab="x")
    assert e.value.exit_code == 2
    assert e.value.message == "bad.yaml:3:5: links.rate: not a rate"
    with pytest.raises(fabemu.FabemuError) as e:
        fabemu.Lab.up("nofq.yaml", lab="x")
    assert e.value.unsupported and "needs the fq qdisc" in e.value.message
    with pytest.raises(fabemu.NoSuchLab) as e:
        fabemu.Lab("gone").status()
    assert e.value.exit_code == 3


def test_a_refused_up_leaves_the_lab_of_that_name_alone(fake):
    with pytest.raises(fabemu.FabemuError) as e:
        fabemu.Lab.up("taken.yaml", lab="x")
    assert e.value.exit_code == 1 and "already exists" in e.value.message
    assert ["down", "x"] not in fake()  # someone else's lab


def test_an_up_that_timed_out_takes_its_half_made_lab_down(fake):
    with pytest.raises(fabemu.FabemuError) as e:
        fabemu.Lab.up("slow.yaml", lab="x", timeout=1)
    assert e.value.exit_code == 124
    assert fake()[-1] == ["down", "x"]


def test_status_is_typed(fake):
    st = fabemu.Lab("t1").status()
    assert st.time_scale == 1000 and st.hosts == ["h1"]
    d = st.direction("h1>leaf1")
    assert d.shaped and d.shape["rate_bps"] == 25000
    assert d.counters.packets == 7 and d.counters.drops == 3
    assert d.counters.raw["future_counter"] == 9  # fields the API does not know yet stay
    assert st.link("leaf1:h1").a.address == "10.64.0.1"


def test_exec_and_exec_all(fake):
    lab = fabemu.Lab("t1")
    r = lab.exec("h1", ["false"])
    assert (r.returncode, r.stdout, r.stderr) == (7, "out\n", "err\n")
    assert fake()[-1] == ["exec", "t1:h1", "--", "false"]
    with pytest.raises(fabemu.FabemuError) as e:
        lab.exec("h9", ["true"])
    assert "no node named 'h9'" in e.value.message
    all_ = lab.exec_all(["sh", "-c", "echo $RANK"])
    assert all_["h1"].ok and all_["h1"].stdout == "0\n"
    assert all_["h2"].returncode == 3 and not all_["h2"].ok
    with pytest.raises(fabemu.FabemuError):
        lab.exec_all(["x"], check=True)


def test_link_settings_become_flags(fake):
    fabemu.Lab("t1").link("leaf1:spine1").set(rate=10_000_000_000, delay=2e-6, loss=0.001,
                                              pfc="200K,150K", ecn_threshold=None, reorder=False)
    assert fake()[-1] == ["link", "set", "t1", "leaf1:spine1", "--rate", "10000000000bit",
                          "--delay", "2000ns", "--loss", "0.001", "--pfc", "200K,150K",
                          "--ecn-threshold", "off", "--no-reorder"]
    fabemu.Lab("t1").link("leaf1:spine1").down()
    assert fake()[-1] == ["link", "down", "t1", "leaf1:spine1"]


def test_predict(fake):
    p = fabemu.Lab("t1").predict()
    assert set(p) == {"allreduce"}
    assert p["allreduce"].seconds(1_000_000) == pytest.approx(0.002)
    assert p["allreduce"].busbw_gbps(1_000_000) == pytest.approx(1e6 / 0.002 * 1.75 / 1e9)


def test_run_reads_the_report(fake, tmp_path):
    r = fabemu.run("ok.yaml", report_dir=tmp_path)
    assert r.ok and r.time_scale == 1
    s = r.step("allreduce")
    assert s.busbw_gbps() == 1.5 and s.results[0].pred_busbw_gbps == 1.6
    assert s.results[0].iteration_time_us == [90, 110]
    assert s.flows[0].src == "h2" and s.flows[0].stalled_s == 0.001
    assert r.ecmp_groups[0]["switch"] == "leaf1" and r.ecmp_groups[0]["max_over_mean"] == 1.33
    assert len(r.ecmp_groups) == 1 and s.ecmp_groups[0]["max_over_mean"] == 1.0
    assert s.order["reordered"] == 9 and s.order["tcp"]["retrans_segs"] == 2
    with pytest.raises(fabemu.FabemuError) as e:
        fabemu.run("fail.yaml", report_dir=tmp_path)
    assert e.value.exit_code == 1 and not e.value.report.expectations[0].ok
    assert not fabemu.run("fail.yaml", report_dir=tmp_path, check=False).ok


def test_run_replays_a_training_step(fake, tmp_path):
    r = fabemu.run("ok.yaml", report_dir=tmp_path, replay="step", replay_format="chakra",
                   comm_groups="g.json")
    assert fake()[-1][2:8] == ["--report", str(tmp_path), "--replay", "step", "--format",
                               "chakra"] and fake()[-1][8:] == ["--comm-groups", "g.json"]
    s = r.step("replay")
    assert s.replay["checked"] == 64 and s.replay_iterations[0]["ratio"] == 1.1
    assert s.replay_timeline[0]["host"] == "h1"


def test_run_writes_junit_where_asked(fake, tmp_path):
    fabemu.run("ok.yaml", report_dir=tmp_path, junit=tmp_path / "r.xml")
    assert fake()[-1][2:6] == ["--report", str(tmp_path), "--junit", str(tmp_path / "r.xml")]


def test_lab_names_fit_fabemus_rules():
    for nodeid in ["t/test_x.py::test_ddp_training_survives_a_link_flap",
                   "a.py::TestK::test_[param-1]", "b.py::zz", "c.py::test_"]:
        name = lab_name_for(nodeid)
        assert 1 <= len(name) <= 12 and all(c.isalnum() or c == "-" for c in name), name
        assert name == name.lower() and not name.startswith("-"), name
    assert lab_name_for("a.py::test_x") != lab_name_for("b.py::test_x")
    assert lab_name_for("t.py::test_ddp_training").startswith("ddptr-")  # recognisable


def test_lab_names_differ_between_runs():
    nodeid = "test_suite.py::test_it#0"
    assert lab_name_for(nodeid, "run-a") == lab_name_for(nodeid, "run-a")
    assert lab_name_for(nodeid, "run-a") != lab_name_for(nodeid, "run-b")
    # Two pytest processes (two checkouts, two CI jobs) name the same test's lab differently.
    code = ("import sys; sys.path.insert(0, sys.argv[1]); "
            "from fabemu.pytest_plugin import lab_name_for; print(lab_name_for(sys.argv[2]))")
    names = {subprocess.run([sys.executable, "-c", code, str(Path(__file__).parent.parent),
                             nodeid], capture_output=True, text=True, check=True).stdout.strip()
             for _ in range(2)}
    assert len(names) == 2 and lab_name_for(nodeid) not in names, names
