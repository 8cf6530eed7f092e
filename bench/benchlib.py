"""What the bench/ scripts share: the error that stops a benchmark, running a program, a median,
and fabemu's results read from its --json output (docs/json.md), never from its wording.
Standard library only; the scripts import it from their own directory."""
import json
import os
import statistics
import subprocess
from pathlib import Path


class BenchError(Exception):
    """Something broke (a program failed, or fabemu's output could not be read): the script
    stops, after tearing down what it built."""


def command(argv):
    return " ".join(str(a) for a in argv)


def run(argv, timeout=900, check=True, env=None, input=None):
    """Runs argv (never through a shell), stdin empty unless `input`, output captured as text.
    With check, a non-zero exit raises BenchError with the end of what it printed."""
    argv = [str(a) for a in argv]
    p = subprocess.run(argv, stdin=subprocess.DEVNULL if input is None else None, input=input,
                       capture_output=True, text=True, timeout=timeout, env=env)
    if check and p.returncode != 0:
        raise BenchError(f"{command(argv)} exited {p.returncode}: "
                         f"{(p.stdout + p.stderr).strip()[-1200:]}")
    return p


def median(xs):
    """The median; nan for no values."""
    xs = list(xs)
    return statistics.median(xs) if xs else float("nan")


def median_known(xs):
    """The median of the values that are not None; None when none is."""
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def with_json(argv):
    """argv with --json added, before a `--` that starts the command of `exec`."""
    argv = [str(a) for a in argv]
    if "--json" in argv:
        return argv
    end = argv.index("--") if "--" in argv else len(argv)
    return argv[:end] + ["--json"] + argv[end:]


def json_output(p, check=True):
    """The object a finished `fabemu ... --json` (a CompletedProcess) printed on stdout. Raises
    BenchError with its stderr when it failed (with check) or printed no JSON."""
    cmd = command(p.args) if isinstance(p.args, (list, tuple)) else str(p.args)
    if check and p.returncode != 0:
        raise BenchError(f"{cmd} exited {p.returncode}: "
                         f"{(p.stderr.strip() or p.stdout.strip())[-1200:]}")
    try:
        return json.loads(p.stdout)
    except ValueError:
        raise BenchError(f"{cmd} (exit {p.returncode}) printed no JSON object: "
                         f"{p.stdout.strip()[-400:]}{p.stderr.strip()[-800:]}") from None


def fabemu_json(argv, timeout=900, check=True, env=None):
    """Runs fabemu (argv[0] is the binary) with --json; returns the parsed object. BenchError
    with its stderr when it exits non-zero (with check) or prints no JSON."""
    return json_output(run(with_json(argv), timeout=timeout, check=False, env=env), check)


class Lab:
    """A lab of one scenario text, up for a `with` block (`fabemu up` with `extra`), named
    PREFIX, this process and a count; torn down whatever happens."""
    counter = 0

    def __init__(self, fabemu, tmp, text, extra=(), prefix="lab"):
        Lab.counter += 1
        self.fabemu, self.name = fabemu, f"{prefix}{os.getpid() % 1000}-{Lab.counter}"
        self.path = Path(tmp) / f"{self.name}.yaml"
        self.path.write_text(text)
        self.extra = list(extra)

    def __enter__(self):
        self.up = fabemu_json([self.fabemu, "up", self.path, "--lab", self.name, "-q"] + self.extra,
                              timeout=3600)
        return self

    def __exit__(self, *exc):
        run([self.fabemu, "down", self.name], timeout=3600, check=False)

    def exec(self, node, argv, timeout=600, check=True):
        return run([self.fabemu, "exec", f"{self.name}:{node}", "--"] + list(argv), timeout, check)

    def spawn(self, node, argv):
        return subprocess.Popen([self.fabemu, "exec", f"{self.name}:{node}", "--"] + list(argv),
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)

    def status(self):
        return fabemu_json([self.fabemu, "status", self.name], timeout=120)
