"""Running the fabemu CLI: the one implementation; this package only calls it and reads its JSON."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Sequence

# The CLI's exit codes (README.md, "Exit codes").
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_NO_LAB = 3
EXIT_NEEDS_ROOT = 4
EXIT_UNSUPPORTED = 5


class FabemuError(Exception):
    """A fabemu command failed: its message (what the CLI printed on stderr) and exit code."""

    def __init__(self, message: str, exit_code: int, argv: Sequence[str] = (), stdout: str = "",
                 stderr: str = ""):
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.argv = list(argv)
        self.stdout = stdout
        self.stderr = stderr

    @property
    def unsupported(self) -> bool:
        """This machine cannot build the scenario (exit 5): no fq, rxe, BPF qdisc..."""
        return self.exit_code == EXIT_UNSUPPORTED

    @property
    def needs_root(self) -> bool:
        return self.exit_code == EXIT_NEEDS_ROOT


class NoSuchLab(FabemuError):
    """The named lab does not exist (exit 3)."""


def binary() -> str:
    """The fabemu binary: $FABEMU_BIN, else `fabemu` on PATH, else this source tree's build."""
    explicit = os.environ.get("FABEMU_BIN")
    if explicit:
        return explicit
    found = shutil.which("fabemu")
    if found:
        return found
    here = Path(__file__).resolve().parent.parent.parent / "build" / "emulator" / "fabemu"
    if here.is_file() and os.access(here, os.X_OK):
        return str(here)
    raise FabemuError("the fabemu binary was not found: install the fabemu package, put fabemu "
                      "on PATH or set FABEMU_BIN", 127)


def build_args(command: str, scenario: object, lab: Optional[str], time_scale: object,
               accept_degraded: bool) -> list:
    """`up` and `run`'s shared options."""
    args = [command, str(scenario)]
    if lab:
        args += ["--lab", lab]
    if time_scale is not None:
        args += ["--time-scale", str(time_scale)]
    if accept_degraded:
        args.append("--accept-degraded")
    return args


def fields_of(cls, data: Mapping[str, Any], **renames: str) -> Dict[str, Any]:
    """The keys of the CLI's JSON object `data` that dataclass `cls` has (JSON key `old` as
    field `new` for each new=old in `renames`); `raw` is the caller's to pass."""
    names = set(cls.__dataclass_fields__)
    out = {k: v for k, v in data.items() if k in names and k != "raw"}
    for new, old in renames.items():
        if old in data:
            out[new] = data[old]
    return out


def message_of(stderr: str, exit_code: int) -> str:
    """The CLI's error: its `fabemu: ...` lines, else the last line it wrote."""
    lines = [l for l in stderr.splitlines() if l.strip()]
    errors = [l[len("fabemu: "):] for l in lines if l.startswith("fabemu: ")]
    if errors:
        return "; ".join(errors)
    return lines[-1] if lines else f"fabemu exited with status {exit_code}"


def call(args: Sequence[str], *, timeout: Optional[float] = None, check: bool = True,
         env: Optional[Mapping[str, str]] = None,
         ok: Sequence[int] = (EXIT_OK,)) -> subprocess.CompletedProcess:
    """Runs `fabemu ARGS`, output captured as text. Raises FabemuError (NoSuchLab for exit 3)
    with the CLI's message when `check` and the status is not in `ok`. On a timeout fabemu gets
    SIGTERM (it forwards it to what it started) and the error carries exit code 124."""
    argv = [binary(), *args]
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, errors="replace", env=full_env)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGTERM)
        try:
            out, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        raise FabemuError(f"fabemu {' '.join(args[:2])} timed out after {timeout} s", 124, argv,
                          out, err)
    except BaseException:
        # Interrupted (KeyboardInterrupt): stop fabemu as a terminal's ^C would, then go on.
        proc.send_signal(signal.SIGINT)
        try:
            proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        raise
    result = subprocess.CompletedProcess(argv, proc.returncode, out, err)
    if check and proc.returncode not in ok:
        kind = NoSuchLab if proc.returncode == EXIT_NO_LAB else FabemuError
        raise kind(message_of(err, proc.returncode), proc.returncode, argv, out, err)
    return result
