"""The kill map: which oracle, suite, test program and test case gave each
mutant its verdict in an earlier run (the configuration's catalog.kills,
this tree's mutants/kills.tsv).

A run reads it only to choose what to try first: the suite, program and
case named for a mutant run before the others, and a mutant that the
plain build let through and a sanitizer killed goes to that sanitizer
first, as a catalog entry's `oracle:` line sends it. The verdict is the
run's own, every time: an entry that no longer kills costs the suites it
names once, and then every other suite runs as it would have.

It also spares TCE most of its compilations (tce.py): a mutant the map
says was killed is only checked to compile, not compared, and run; one
that survives is compared after all, before any verdict. So a stale or
missing map never changes a survivor, an equivalent mutant or one that
does not compile. What a stale map can change is a count: two mutants it
says were killed that have come to have one object code are both run
and killed, where a run without the map would call the second a
duplicate. Duplicates are written to the map too (tce duplicate <id>),
and the mutant a duplicate's line names is compiled whole, so that with
the map of the tree as it is, a run finds every duplicate it would find
without it.

Every run writes the kills it saw to kills.tsv beside report.json;
`python3 -m mutants.kills OUT IN...` merges such files (a later one's
entry for an id wins) into the tree's map (make mutants-kills)."""
import os
import re
import sys
from dataclasses import dataclass

from .model import IGNORED, KILLED, TIMEOUT

# A duplicate's line: "<id> tce duplicate <the mutant it duplicates> -". TCE
# compiles a mutant the map says was killed only as far as it must to build
# (tce.py); one that a duplicate's line names is compiled whole, so that the
# duplicate is found again.
TCE, DUPLICATE = "tce", "duplicate"

HEADER = ("# The kill map (scripts/mutants/kills.py): for each mutant, the oracle,\n"
          "# suite, test program and case that gave it its verdict last time, or\n"
          "# (tce duplicate <id>) the mutant it duplicated. Read only to choose\n"
          "# what a run tries first and compiles whole; written by make mutants-kills.\n"
          "# id\toracle\tsuite\tprogram\tcase[\talone: killed built alone, not in a schema]\n")


@dataclass(frozen=True)
class Kill:
    oracle: str = "plain"
    suite: str = ""
    program: str = ""
    case: str = ""
    # "alone": the kill came from the mutant built alone, after it had
    # passed every suite in the schema (a schema reads its mutant's number
    # from the environment, which a constructor that runs before main may
    # not see yet): the next run builds it alone at once
    where: str = ""


def _lines(path):
    """{mutant id: Kill} of every line of a kill map, duplicates' too; {}
    when there is none."""
    out = {}
    if not path or not os.path.exists(path):
        return out
    with open(path) as f:
        for line in f:
            if not line.strip() or line.startswith("#"):
                continue
            cells = line.rstrip("\n").split("\t")
            cells += [""] * (6 - len(cells))
            mid, oracle, suite, program, case, where = (c if c != "-" else "" for c in cells[:6])
            if mid and suite:
                out[mid] = Kill(oracle or "plain", suite, program, case, where)
    return out


def load(path, duplicates=False):
    """{mutant id: Kill} from a kill map; {} when there is none. With
    duplicates, {duplicate's id: the id it duplicates} instead."""
    lines = _lines(path)
    if duplicates:
        return {mid: k.program for mid, k in lines.items() if k.oracle == TCE}
    return {mid: k for mid, k in lines.items() if k.oracle != TCE}


def failed_test(lines):
    """The test the first failure line names ("<results>: <test> <why>",
    project.failed_lines): a Check case, a fuzzer input's "<dir>/<file>",
    a conformance program; "" when there is none."""
    for line in lines:
        words = line.split(": ", 1)[-1].split()
        if words:
            return words[0]
    return ""


# a frame of a stack a reason quotes (hang.py's "#2 <fn> check_chan.c:1942",
# a crash's "... < <fn> check_chan.c:888"): the function a test case is
# compiled to (Check's START_TEST(name) makes name_fn), not a case's name
_FRAME_BEFORE = re.compile(r"(?:#\d+|<) $")


def cases_named(case_re, text):
    """The test cases text names the way a failure line does (case_re's
    first group), in order, leaving out the frames of the stacks it
    quotes: a kill whose case is a frame's function names no case a suite
    can run, and an oracle's witness of it never holds (the release
    oracle's check-unit witness of 13 mutants in make check, 6 Dec 2026,
    for one hang's "..._fn")."""
    return [m.group(1) for m in case_re.finditer(text)
            if not _FRAME_BEFORE.search(text, 0, m.start())]


def of(mutants, program_re, case_re):
    """The kills of a run's mutants: {id: Kill} for each one killed or timed
    out, with the first program and case its reason names; where it names
    no case the Check way (a fuzzer input, a case of a program the
    configuration's program pattern does not name), the test its suite's
    first failure line names. A suite that reads no case hint runs whole
    for such a first try, which costs what the whole suite costs."""
    out = {}
    for m in mutants:
        if m.status == IGNORED and m.duplicate_of:
            out[m.id] = Kill(TCE, DUPLICATE, m.duplicate_of, "")
        if m.status not in (KILLED, TIMEOUT) or not m.killed_by:
            continue
        programs = program_re.findall(m.status_reason)
        cases = cases_named(case_re, m.status_reason)
        case = cases[0] if cases else failed_test(m.failed)
        program = programs[0] if programs else ""
        if m.status == TIMEOUT and not (program or case):
            program, case = hung_process(m.status_reason, program_re)
        out[m.id] = Kill(m.build or "plain", m.killed_by[0], program,
                         case, "alone" if m.alone_after_schema else "")
    return out


_HUNG = re.compile(r"([\w.-]+) pid \d+: thread")


def hung_process(reason, program_re):
    """(program, case) of a hang that names neither otherwise: the first
    process the stacks' look names (hang.Look.reason), a test program when
    the program pattern takes it, else a case (a conformance program, which
    RT_ONLY_CASES picks by its name): a first try then runs that one, not
    the whole suite to its hang (24 s a release-oracle witness of the
    conformance programs, 6 Dec 2026)."""
    hit = _HUNG.search(reason)
    if not hit:
        return "", ""
    name = hit.group(1)
    return (name, "") if program_re.fullmatch(name + ".c:1") else ("", name)


def write(path, kills):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path + ".tmp", "w") as f:
        f.write(HEADER)
        for mid in sorted(kills):
            k = kills[mid]
            f.write("\t".join([mid, k.oracle, k.suite, k.program or "-", k.case or "-"]
                               + (["alone"] if k.where else [])) + "\n")
    os.replace(path + ".tmp", path)


def merge(paths):
    """The kill maps of paths, a later entry for an id winning, but for
    the program and case it does not name where the earlier one, of the
    same oracle and suite (and program), does: a timeout a later run could
    not place to its case keeps the case a kill did place."""
    out = {}
    for p in paths:
        for mid, k in _lines(p).items():
            old = out.get(mid)
            if (old is not None and old.oracle != TCE and k.oracle != TCE
                    and (old.oracle, old.suite) == (k.oracle, k.suite)
                    and not k.case and k.program in ("", old.program)):
                k = Kill(k.oracle, k.suite, old.program, old.case, k.where)
            out[mid] = k
    return out


def main(argv):
    if len(argv) < 2:
        print("usage: python3 -m mutants.kills OUT IN...: merges kill maps into OUT "
              "(OUT's own entries first, a later file's entry for an id wins)",
              file=sys.stderr)
        return 2
    out, ins = argv[0], argv[1:]
    kills = merge([out] + [p for p in ins if os.path.exists(p)])
    write(out, kills)
    print(f"mutants: kill map {out}: {len(kills)} mutants")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
