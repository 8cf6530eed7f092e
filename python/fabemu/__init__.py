"""fabemu from Python: labs as context managers, commands in hosts, live link changes, status
and predictions as objects, `run` returning the report. Every call runs the fabemu CLI and reads
its JSON; nothing is reimplemented here."""

from ._cli import (EXIT_BAD_INPUT, EXIT_FAILED, EXIT_NEEDS_ROOT, EXIT_NO_LAB, EXIT_OK,
                   EXIT_UNSUPPORTED, FabemuError, NoSuchLab, binary)
from .lab import (Counters, Direction, ExecResult, Lab, Link, LinkStatus, Node, Port, Predicted,
                  Status)
from .report import Expectation, Fault, Flow, Report, Result, Step, read_report, run

__version__ = "0.1.0"

__all__ = [
    "Counters", "Direction", "EXIT_BAD_INPUT", "EXIT_FAILED", "EXIT_NEEDS_ROOT", "EXIT_NO_LAB",
    "EXIT_OK", "EXIT_UNSUPPORTED", "ExecResult", "Expectation", "FabemuError", "Fault", "Flow",
    "Lab", "Link", "LinkStatus", "Node", "NoSuchLab", "Port", "Predicted", "Report", "Result",
    "Status", "Step", "binary", "doctor", "read_report", "run",
]


def doctor() -> dict:
    """`fabemu doctor --json`: what this kernel and machine can emulate."""
    import json

    from ._cli import call
    return json.loads(call(["doctor", "--json"]).stdout)
