"""A mutant is data: one record feeds the run, the cache and the reports."""
from dataclasses import dataclass, field
from typing import List, Optional

# Statuses, spelt as Stryker's mutation-testing-report-schema spells them.
KILLED = "Killed"
SURVIVED = "Survived"
TIMEOUT = "Timeout"
NO_COVERAGE = "NoCoverage"
COMPILE_ERROR = "CompileError"
IGNORED = "Ignored"      # equivalent or duplicate: recorded, not run
PENDING = "Pending"

CURATED = "curated"
GENERATED = "generated"

# The oracles a mutant is judged by, in order (docs/mutants.md, "Oracles"),
# are the plain build, then, for a survivor, each variant of the build the
# configuration names ([oracles]: this tree's ASan+UBSan and TSan builds).

# What a kill is put down to, read from the failing suite's output
# (runner.classify): a sanitizer's report, what the configuration names
# (kill_kinds: this tree's checked locks, a test's cost bound), else a
# test's own assertion.
KINDS = ("functional", "asan", "ubsan", "tsan")


@dataclass
class Edit:
    """Replace text[start:end] of one file (a path relative to the tree)."""
    path: str
    start: int
    end: int
    replacement: str


@dataclass
class Location:
    """1-based line and column, end exclusive, as the report schema wants."""
    line: int
    column: int
    end_line: int
    end_column: int


@dataclass
class Mutant:
    id: str
    origin: str                    # CURATED or GENERATED
    operator: str                  # mutatorName in the report
    about: str
    edits: List[Edit]
    location: Location             # of the first edit, in its file
    seed: str = ""
    original: str = ""             # the text the first edit replaces
    status: str = PENDING
    status_reason: str = ""
    killed_by: List[str] = field(default_factory=list)
    covered_by: List[str] = field(default_factory=list)
    duplicate_of: Optional[str] = None
    equivalent: bool = False       # pruned by TCE or listed in the ledger
    cached: bool = False
    seconds: float = 0.0
    tried: List[str] = field(default_factory=list)   # suites run, in order
    kind: str = ""                 # a kill's oracle kind (KINDS)
    build: str = ""                # the oracle ("plain" or [oracles]) that gave the verdict
    judged_by: List[str] = field(default_factory=list)   # oracles run, in order
    # {oracle: {"status", "killed_by", "reason", "kind"}}: every oracle's
    # verdict, this run's and the cache's (cache.py)
    verdicts: dict = field(default_factory=dict)
    # a catalog entry's `oracle:` line: the oracle its survivor of the
    # plain build meets first (a race's TSan), every other still after
    first_oracle: str = ""
    first_why: str = ""            # what sent it there: its oracle: line, else the kill map
    # the failure lines of the suite that killed it ("<results>: <test>
    # <why>", project.failed_lines), this run's only: the kill map names
    # the test of the first when no case is named the Check way
    failed: List[str] = field(default_factory=list)
    # judged built alone after it passed every suite in the schema (kills.py)
    alone_after_schema: bool = False

    @property
    def path(self):
        return self.edits[0].path

    @property
    def replacement(self):
        return self.edits[0].replacement

    def lines(self, texts):
        """The lines (1-based) of every file each edit touches: {path: set}."""
        out = {}
        for e in self.edits:
            text = texts[e.path]
            first = text.count("\n", 0, e.start) + 1
            last = text.count("\n", 0, max(e.start, e.end - 1)) + 1
            out.setdefault(e.path, set()).update(range(first, last + 1))
        return out


def apply_edits(text, edits):
    """The text with the edits (all of one file, not overlapping) applied."""
    for e in sorted(edits, key=lambda e: e.start, reverse=True):
        text = text[:e.start] + e.replacement + text[e.end:]
    return text


def location_of(text, start, end):
    line = text.count("\n", 0, start) + 1
    column = start - (text.rfind("\n", 0, start) + 1) + 1
    end_line = text.count("\n", 0, end) + 1
    end_column = end - (text.rfind("\n", 0, end) + 1) + 1
    return Location(line, column, end_line, end_column)
