"""What a run tells a person: the progress line, the closing line, the
results lines for scripts/summary, and the JSON and HTML reports (Stryker's
mutation-testing-report-schema, rendered by mutation-testing-elements)."""
import html
import json
import os
import sys
import time

from . import project
from .model import (COMPILE_ERROR, CURATED, IGNORED, KILLED, KINDS, NO_COVERAGE,
                    SURVIVED, TIMEOUT)

# The start of the reason of a mutant the ledger lists (the configuration's
# catalog.ledger: set_ledger)
LEDGER = "listed in the ledger: "


def set_ledger(path):
    global LEDGER
    LEDGER = f"listed in {path}: "

# A kill's kind is a test id in the JSON report, "oracle:<kind>", next to
# the suite that failed: the HTML report lists the mutants each killed.
ORACLE_TEST = "oracle:"
KIND_NAMES = {
    "functional": "functional: a test's own assertion failed",
    "asan": "asan: AddressSanitizer (or LeakSanitizer) reported",
    "ubsan": "ubsan: UndefinedBehaviorSanitizer reported (runtime error:)",
    "tsan": "tsan: ThreadSanitizer reported",
}


def kinds():
    """The kinds a kill is put down to: KINDS, then the configuration's
    (kill_kinds)."""
    return list(KINDS) + [k for k in project.CFG.kill_kinds if k not in KINDS]


def kind_name(k):
    return KIND_NAMES.get(k) or f"{k}: {project.CFG.kill_kinds[k][1]}"


def kind_of(record):
    """A killed mutant's kind from its JSON record (killedBy, else the
    statusReason's first word)."""
    for t in record.get("killedBy", []):
        if t.startswith(ORACLE_TEST):
            return t[len(ORACLE_TEST):]
    word = record.get("statusReason", "").split(":", 1)[0]
    return word if word in kinds() else "functional"


class Progress:
    """done/total, killed, survived and the ETA, on one line (a terminal) or
    a line every few seconds (a log)."""

    def __init__(self, total, stream=sys.stderr):
        self.total, self.done, self.killed, self.survived = total, 0, 0, 0
        self.start = time.monotonic()
        self.stream = stream
        self.tty = stream.isatty()
        self.last = 0.0

    def update(self, mutant):
        self.done += 1
        if mutant.status in (KILLED, TIMEOUT):
            self.killed += 1
        elif mutant.status == SURVIVED:
            self.survived += 1
        now = time.monotonic()
        if not self.tty and now - self.last < 5 and self.done < self.total:
            return
        self.last = now
        elapsed = now - self.start
        eta = elapsed / self.done * (self.total - self.done) if self.done else 0
        line = (f"mutants: {self.done}/{self.total} done, {self.killed} killed, "
                f"{self.survived} survived, ETA {eta:.0f} s")
        if self.tty:
            self.stream.write("\r" + line + ("\n" if self.done == self.total else ""))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()


def counts(mutants):
    """The closing line's numbers. Equivalent: pruned by TCE or listed in the
    ledger; duplicates and mutants that do not compile are not counted."""
    c = {"killed": 0, "survived": 0, "timeout": 0, "equivalent": 0, "nocoverage": 0,
         "duplicate": 0, "compile_error": 0}
    kinds = {}
    for m in mutants:
        if m.status == KILLED:
            c["killed"] += 1
            kinds[m.kind or "functional"] = kinds.get(m.kind or "functional", 0) + 1
        elif m.status == TIMEOUT:
            c["timeout"] += 1
        elif m.status == SURVIVED:
            c["survived"] += 1
        elif m.status == NO_COVERAGE:
            c["nocoverage"] += 1
        elif m.status == IGNORED and m.duplicate_of:
            c["duplicate"] += 1
        elif m.status == IGNORED:
            c["equivalent"] += 1
        elif m.status == COMPILE_ERROR:
            c["compile_error"] += 1
    c["total"] = sum(c[k] for k in ("killed", "survived", "timeout", "equivalent", "nocoverage"))
    c["kinds"] = kinds
    return c


def kinds_text(by):
    """"functional 9, asan 2": the kills by kind, in kinds()' order."""
    return ", ".join(f"{k} {by[k]}" for k in kinds() if by.get(k))


def closing_line(c):
    by = kinds_text(c.get("kinds", {}))
    return (f"mutants: {c['killed']} killed of {c['total']} ({c['survived']} survived, "
            f"{c['timeout']} timeout, {c['equivalent']} equivalent, "
            f"{c['nocoverage']} no coverage)" + (f"; killed by {by}" if by else ""))


def score_line(c):
    """The mutation score as Stryker counts it: detected (killed or timeout)
    over the valid mutants (detected, survived, no coverage); equivalent
    ones, duplicates and those that do not compile are left out."""
    detected = c["killed"] + c["timeout"]
    valid = detected + c["survived"] + c["nocoverage"]
    score = f"{100 * detected / valid:.1f}%" if valid else "-"
    covered = detected + c["survived"]
    return (f"mutants: mutation score {score}: {detected} detected ({c['killed']} killed, "
            f"{c['timeout']} timeout) of {valid} ({c['survived']} survived, "
            f"{c['nocoverage']} no coverage); of those a suite executes, "
            + (f"{100 * detected / covered:.1f}%" if covered else "-"))


def failures(mutants):
    """(id, why) of every mutant that fails the run."""
    out = []
    for m in mutants:
        if m.status in (SURVIVED, NO_COVERAGE):
            out.append((m.id, f"{m.status}: {m.status_reason}"))
        elif m.status == COMPILE_ERROR and m.origin == CURATED:
            out.append((m.id, f"the entry does not build: {m.status_reason}"))
    return out


def results_lines(mutants, stale):
    """One "pass <id>" or "fail <id> <why>" a mutant that was run or judged."""
    lines = [f"fail {e.name} stale or malformed catalog entry: {e.why}" for e in stale]
    bad = dict(failures(mutants))
    for m in mutants:
        if m.id in bad:
            lines.append(f"fail {m.id} {bad[m.id]}")
        elif m.status in (KILLED, TIMEOUT) or (m.status == IGNORED and
                                              m.status_reason.startswith(LEDGER)):
            lines.append(f"pass {m.id}")
    return lines


# ---- the JSON report (mutation-testing-report-schema) -----------------------

def to_json(mutants, texts, suites, root=""):
    files = {}
    for m in mutants:
        entry = files.setdefault(m.path, {"language": "c", "source": texts.get(m.path, ""),
                                          "mutants": []})
        loc = m.location
        record = {
            "id": m.id,
            "mutatorName": m.operator,
            "replacement": m.replacement,
            "description": m.about,
            "location": {"start": {"line": loc.line, "column": loc.column},
                         "end": {"line": loc.end_line, "column": loc.end_column}},
            "status": m.status,
            "statusReason": m.status_reason,
            "killedBy": list(m.killed_by) + (
                [ORACLE_TEST + (m.kind or "functional")] if m.status == KILLED else []),
            "coveredBy": list(m.covered_by),
            "static": False,
        }
        entry["mutants"].append(record)
    return {
        "$schema": "https://git.io/mutation-testing-schema",
        "schemaVersion": "2",
        "thresholds": {"high": 100, "low": 100},
        "projectRoot": root,
        "files": files,
        "testFiles": {"suites": {"tests": [{"id": s, "name": s} for s in suites]},
                      "oracles": {"tests": [{"id": ORACLE_TEST + k, "name": kind_name(k)}
                                            for k in kinds()]}},
        "framework": {"name": "refrt mutant driver (scripts/region_cache_mutants.py)"},
    }


def from_json(report):
    """(records, suites) back from a report: the records are dicts with the
    fields counts() needs, for merging shard reports."""
    out = []
    for path, f in report["files"].items():
        for m in f["mutants"]:
            out.append(m)
    suites = [t["id"] for tf in report.get("testFiles", {}).values() for t in tf["tests"]
              if not t["id"].startswith(ORACLE_TEST)]
    return out, suites


def write_json(path, report):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(report, f, indent=1)
    os.replace(tmp, path)


def write_html(path, report, elements_js):
    """One file: the report app's script and the report inlined, so it opens
    from disk with no server and no network."""
    with open(elements_js) as f:
        script = f.read()
    data = json.dumps(report).replace("</", "<\\/")
    script = script.replace("</script", "<\\/script")
    page = f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{html.escape(project.CFG.name)} mutants</title>
<script>{script}</script>
</head>
<body>
<mutation-test-report-app title-postfix="{html.escape(project.CFG.name)}">
</mutation-test-report-app>
<script>
document.querySelector('mutation-test-report-app').report = {data};
</script>
</body>
</html>
"""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(page)
    os.replace(tmp, path)
