"""expect.py: what a conformance program declares, and checking it.

A program declares itself in its leading /* ... */ comment, one directive a
line (a leading "**" or "*" is ignored):

    build: runtime | plain | cc-only
    expect: <metric> <op> <integer>        op: == != <= >= < >
    expect: stdout contains <text>
    expect: stderr contains <text>

Metrics come from three measurements, each taken only when an expectation
names it: "strace.<syscall>" (calls under strace -f), "shim.<name>" (the
chunk shim's report, see measure.py) and "prog.<name>" (what the program
printed as a line "observe <name> <integer>"; the last one of a name
counts). "exit" is the exit status (-1 when killed by a signal) and
"signal" the signal that killed it (0 if none; a name such as SIGILL is
allowed as the value). A program that declares neither gets "exit == 0".
"""
import operator
import re
import signal as signals
from dataclasses import dataclass, field

BUILDS = ("runtime", "plain", "cc-only")
OPS = {
    "==": operator.eq, "!=": operator.ne, "<=": operator.le,
    ">=": operator.ge, "<": operator.lt, ">": operator.gt,
}
DIRECTIVE = re.compile(r"^\s*\**\s*(build|expect):\s*(.*?)\s*$")
COMPARISON = re.compile(r"^(exit|signal|(?:strace|shim|prog)\.[\w.]+)\s*(==|!=|<=|>=|<|>)\s*(\S+)$")
CONTAINS = re.compile(r"^(stdout|stderr) contains (.+)$")


class DeclarationError(Exception):
    """A program's header says something the runner cannot check."""


@dataclass
class Expectation:
    text: str      # as written, for messages
    metric: str    # "exit", "shim.mallocs", ..., or "stdout"/"stderr"
    op: str        # an OPS key, or "contains"
    value: object  # int, or the text to find

    @property
    def name(self):
        if self.op == "contains":
            return f"{self.metric}~{re.sub(r'[^A-Za-z0-9_.:-]+', '_', self.value)}"
        return f"{self.metric}{self.op}{self.value}"

    @property
    def source(self):
        """Which measurement the expectation needs: strace, shim, prog, or run."""
        head = self.metric.split(".", 1)[0]
        return head if head in ("strace", "shim", "prog") else "run"


@dataclass
class Program:
    name: str
    path: str
    build: str = "runtime"
    expectations: list = field(default_factory=list)

    def needs(self, source):
        return any(e.source == source for e in self.expectations)


def _leading_comment(text):
    m = re.match(r"\s*/\*(.*?)\*/", text, re.S)
    return m.group(1) if m else ""


def _parse_expectation(body):
    m = CONTAINS.match(body)
    if m:
        return Expectation(body, m.group(1), "contains", m.group(2))
    m = COMPARISON.match(body)
    if not m:
        raise DeclarationError(f"cannot read 'expect: {body}'")
    metric, op, raw = m.groups()
    if metric == "signal" and raw.startswith("SIG"):
        try:
            value = int(getattr(signals, raw))
        except AttributeError:
            raise DeclarationError(f"no signal named {raw}") from None
    else:
        try:
            value = int(raw, 0)
        except ValueError:
            raise DeclarationError(f"'{raw}' is not an integer in 'expect: {body}'") from None
    return Expectation(body, metric, op, value)


def parse_program(path, name):
    """Reads the directives of one program; raises DeclarationError."""
    with open(path, encoding="utf-8") as f:
        comment = _leading_comment(f.read())
    prog = Program(name, path)
    for line in comment.splitlines():
        m = DIRECTIVE.match(line)
        if not m:
            continue
        key, body = m.groups()
        if key == "build":
            if body not in BUILDS:
                raise DeclarationError(f"build: must be one of {', '.join(BUILDS)}")
            prog.build = body
        else:
            prog.expectations.append(_parse_expectation(body))
    if not prog.expectations:
        raise DeclarationError("declares no expectation")
    if not any(e.metric in ("exit", "signal") for e in prog.expectations):
        prog.expectations.insert(0, _parse_expectation("exit == 0"))
    return prog


def check(exp, metrics, outputs):
    """(ok, what was seen) for one expectation against one run's metrics."""
    if exp.op == "contains":
        seen = outputs.get(exp.metric, "")
        ok = exp.value in seen
        return ok, "found" if ok else f"not in {exp.metric}: {seen[-300:]!r}"
    if exp.metric not in metrics:
        return False, f"{exp.metric} was not measured"
    seen = metrics[exp.metric]
    return OPS[exp.op](seen, exp.value), f"{exp.metric} = {seen}"
