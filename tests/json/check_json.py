#!/usr/bin/python3
"""Each command's --json against its schema in docs/schema (docs/json.md), as root on a small lab:
doctor, up, status (the list, the lab, one node), exec --all, predict (and --replay), graph (of the lab and of
its scenario file), perf (ucx_perftest), host crash/restart, link set/down/up, down (also of a
lab that is not there), run (and its report.jsonl's records). Prints each command and its
verdict; exits 1 on the first output that does not validate, 77 (ctest's skip) when not root.

check_json.py --validate COMMAND FILE: FILE (one command's --json output, e.g. of a lab across
machines in the cluster lane) against docs/schema/COMMAND.schema.json; exit 1 when it does not."""
import glob
import json
import os
import subprocess
import sys
import tempfile
import uuid
import warnings

import jsonschema

FABEMU = os.environ.get("FABEMU_BIN", "fabemu")
SCHEMAS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "schema")

SCENARIO = """name: js
topology: {kind: leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 2}
links: {default: {rate: 1gbit}}
rdma: {enabled: off}
"""

# run: a collective while a spine link goes down and back, expectations checked.
RUN_SCENARIO = SCENARIO + """workload:
  - collective: allreduce
    sizes: [64K]
    iterations: 2
faults:
  - {at: 0s, link: leaf1:spine1, down: true}
  - {at: 10ms, link: leaf1:spine1, up: true}
expect: {completes: true}
"""


def load_schemas():
    """Every schema by its $id: one may refer to another's definitions (status to link's shape)."""
    store = {}
    for path in glob.glob(os.path.join(SCHEMAS, "*.schema.json")):
        with open(path) as f:
            schema = json.load(f)
        store[schema["$id"]] = schema
    return store


STORE = load_schemas()
RUN_ID = "https://fabemu.invalid/schema/run.schema.json"


def validator(command):
    schema = STORE[f"https://fabemu.invalid/schema/{command}.schema.json"]
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    # RefResolver: what Debian 12's python3-jsonschema (4.10) has; newer ones warn about it.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        resolver = jsonschema.RefResolver.from_schema(schema, store=STORE)
    return cls(schema, resolver=resolver)


def check(command, args, expect_rc=0, before=()):
    argv = [FABEMU, *args, "--json", *before]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    print("$", " ".join(args), "--json ->", r.returncode)
    if r.returncode != expect_rc:
        sys.exit(f"exit {r.returncode}, expected {expect_rc}: {r.stderr}")
    lines = r.stdout.splitlines()
    if len(lines) != 1:
        sys.exit(f"expected one line of JSON, got {len(lines)}: {r.stdout!r}")
    doc = json.loads(lines[0])
    errors = sorted(validator(command).iter_errors(doc), key=lambda e: list(e.path))
    for e in errors:
        print(f"  {list(e.path)}: {e.message}")
    if errors:
        sys.exit(f"{command}: {len(errors)} schema errors in {lines[0]}")
    print(f"  valid against docs/schema/{command}.schema.json")
    return doc


def main():
    if os.geteuid() != 0:
        print("skipped: needs root (it brings a lab up)")
        return 77
    lab = "js" + uuid.uuid4().hex[:6]
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "js.yaml")
        with open(path, "w") as f:
            f.write(SCENARIO)
        try:
            doctor = check("doctor", ["doctor"])
            assert any(f["id"] == "netns" and f["status"] == "yes" for f in doctor["features"])
            up = check("up", ["up", path, "--lab", lab])
            assert up["lab"] == lab and up["hosts"] == 4, up
            labs = check("status", ["status"])
            assert lab in [l["lab"] for l in labs["labs"]], labs
            st = check("status", ["status", lab])
            assert len(st["nodes"]) == 8 and len(st["links"]) == 8, st
            one = check("status", ["status", lab, "--node", "h1"])
            assert [n["name"] for n in one["nodes"]] == ["h1"], one
            ex = check("exec", ["exec", lab, "--all"], before=["--", "sh", "-c", "echo $RANK"])
            assert [h["output"] for h in ex["hosts"]] == ["0\n", "1\n", "2\n", "3\n"], ex
            pr = check("predict", ["predict", lab])
            assert pr["allreduce"]["seconds_per_byte"] > 0, pr
            # A 4-rank SimAI step (TP2 x DP2) as the model sees it on this lab.
            step = os.path.join(d, "step.txt")
            with open(step, "w") as f:
                f.write("HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2 ep: 1 pp: 1 "
                        "vpp: 1 ga: 1 all_gpus: 4\n1\n"
                        "mlp -1 1000 ALLREDUCE 1048576 1000 ALLREDUCE 1048576 1000 ALLREDUCE "
                        "4194304 10\n")
            rp = check("predict", ["predict", lab, "--replay", step])
            assert rp["replay"]["iteration_s"] > 0 and len(rp["replay"]["placement"]) == 4, rp
            for target in (lab, path):
                g = check("graph", ["graph", target])
                assert len(g["nodes"]) == 8 and g["links"][0]["a_to_b"]["rate_bps"] == 10**9, g
            # perf: ucx_perftest over TCP runs on any kernel (perftest needs rxe).
            pf = check("perf", ["perf", lab, "h1", "h4", "--tool", "ucx_perftest"])
            assert pf["ok"] and pf["rows"][0]["BW average[MB/sec]"] > 0, pf
            for action in ("crash", "restart"):
                h = check("host", ["host", action, lab, "h4"])
                assert h["action"] == action and h["detail"], h
            s = check("link", ["link", "set", lab, "h1:leaf1", "--rate", "10mbit", "--delay",
                               "0", "--loss", "1%"])
            assert [c["after"]["rate_bps"] for c in s["changes"]] == [10_000_000] * 2, s
            d = check("link", ["link", "down", lab, "leaf1:spine1"])
            assert d["rerouted"] and all(c["after"]["down"] for c in d["changes"]), d
            check("link", ["link", "up", lab, "leaf1:spine1", "--no-reroute"])
            gone = check("down", ["down", lab])
            assert gone["labs"][0]["taken_down"], gone
            missing = check("down", ["down", lab], expect_rc=3)
            assert missing["labs"][0]["error"], missing
            tmp = os.path.dirname(path)
            run_path, report = os.path.join(tmp, "run.yaml"), os.path.join(tmp, "report")
            with open(run_path, "w") as f:
                f.write(RUN_SCENARIO)
            run = check("run", ["run", run_path, "--lab", lab, "--report", report])
            types = [r["type"] for r in run["records"]]
            assert run["ok"] and types[0] == "run" and "result" in types, run
            assert [r["done"] for r in run["records"] if r["type"] == "fault"] == [True] * 2, run
            # report.jsonl: one record per line, telemetry samples too.
            record = validator("run").evolve(schema=STORE[RUN_ID]["$defs"]["record"])
            with open(os.path.join(report, "report.jsonl")) as f:
                lines = [json.loads(line) for line in f]
            for line in lines:
                record.validate(line)
            print(f"  report.jsonl: {len(lines)} records valid against run.schema.json#/$defs/record")
        finally:
            subprocess.run([FABEMU, "down", lab], capture_output=True)
    return 0


def validate_file(command, path):
    with open(path) as f:
        doc = json.load(f)
    errors = list(validator(command).iter_errors(doc))
    for e in errors:
        print(f"{command}: {list(e.path)}: {e.message}")
    return 1 if errors else 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--validate":
        sys.exit(validate_file(sys.argv[2], sys.argv[3]))
    sys.exit(main())
