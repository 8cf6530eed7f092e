#!/usr/bin/python3
"""Runs a GoogleTest binary and, when tests fail, each failed test once more on its own.

The VM lane runs under qemu's TCG: one emulated CPU, paced by whatever else the machine does.
Tests there measure rates and pauses of the link model, and a run now and then falls short
because the emulated CPU could not offer the load (seen: an OVS port shaped to 10 Mbit/s passing
9.1 while a build ran beside the VM). A test that fails twice fails the lane; one that passes on
its second run is printed as such (FLAKY), never hidden.

Usage: retry_failed.py BINARY [GTEST ARGS...]
"""
import json
import os
import subprocess
import sys
import tempfile


def run(binary, args, report):
    cmd = [binary, *args, f"--gtest_output=json:{report}"]
    print("+", " ".join(cmd), flush=True)
    code = subprocess.call(cmd)
    try:
        with open(report) as f:
            suites = json.load(f)["testsuites"]
    except (OSError, ValueError, KeyError) as e:
        return code, None, f"no report ({e})"
    failed = [f"{s['name']}.{t['name']}" for s in suites for t in s["testsuite"]
              if t.get("failures")]
    return code, failed, ""


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    binary, args = sys.argv[1], sys.argv[2:]
    with tempfile.TemporaryDirectory() as tmp:
        code, failed, why = run(binary, args, os.path.join(tmp, "first.json"))
        if code == 0:
            return 0
        if failed is None or not failed:
            # A crash or a timeout before the report: nothing to retry by name.
            print(f"retry_failed: exit {code}, {why or 'no failed test named'}", flush=True)
            return code or 1
        keep = [a for a in args if not a.startswith("--gtest_filter")]
        still, flaky = [], []
        for name in failed:
            again, _, _ = run(binary, [*keep, f"--gtest_filter={name}"],
                              os.path.join(tmp, "again.json"))
            (flaky if again == 0 else still).append(name)
        for name in flaky:
            print(f"FLAKY: {name} failed, then passed on its second run", flush=True)
        for name in still:
            print(f"FAILED twice: {name}", flush=True)
        return 1 if still else 0


if __name__ == "__main__":
    sys.exit(main())
