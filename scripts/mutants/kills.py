"""The kill map: which oracle, suite, test program and test case gave each
mutant its verdict in an earlier run (the configuration's catalog.kills,
this tree's mutants/kills.tsv).

A run reads it only to choose what to try first: the suite, program and
case named for a mutant run before the others, and a mutant that the
plain build let through and a sanitizer killed goes to that sanitizer
first, as a catalog entry's `oracle:` line sends it. The verdict is the
run's own, every time: an entry that no longer kills costs the suites it
names once, and then every other suite runs as it would have. So a stale
or missing map makes a run slower, never different.

Every run writes the kills it saw to kills.tsv beside report.json;
`python3 -m mutants.kills OUT IN...` merges such files (a later one's
entry for an id wins) into the tree's map (make mutants-kills)."""
import os
import sys
from dataclasses import dataclass

from .model import KILLED, TIMEOUT

HEADER = ("# The kill map (scripts/mutants/kills.py): for each mutant, the oracle,\n"
          "# suite, test program and case that gave it its verdict last time. Read\n"
          "# only to choose what a run tries first; written by make mutants-kills.\n"
          "# id\toracle\tsuite\tprogram\tcase\n")


@dataclass(frozen=True)
class Kill:
    oracle: str = "plain"
    suite: str = ""
    program: str = ""
    case: str = ""


def load(path):
    """{mutant id: Kill} from a kill map; {} when there is none."""
    out = {}
    if not path or not os.path.exists(path):
        return out
    with open(path) as f:
        for line in f:
            if not line.strip() or line.startswith("#"):
                continue
            cells = line.rstrip("\n").split("\t")
            cells += [""] * (5 - len(cells))
            mid, oracle, suite, program, case = (c if c != "-" else "" for c in cells[:5])
            if mid and suite:
                out[mid] = Kill(oracle or "plain", suite, program, case)
    return out


def of(mutants, program_re, case_re):
    """The kills of a run's mutants: {id: Kill} for each one killed or timed
    out, with the first program and case its reason names."""
    out = {}
    for m in mutants:
        if m.status not in (KILLED, TIMEOUT) or not m.killed_by:
            continue
        programs = program_re.findall(m.status_reason)
        cases = case_re.findall(m.status_reason)
        out[m.id] = Kill(m.build or "plain", m.killed_by[0], programs[0] if programs else "",
                         cases[0] if cases else "")
    return out


def write(path, kills):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path + ".tmp", "w") as f:
        f.write(HEADER)
        for mid in sorted(kills):
            k = kills[mid]
            f.write("\t".join([mid, k.oracle, k.suite, k.program or "-", k.case or "-"]) + "\n")
    os.replace(path + ".tmp", path)


def merge(paths):
    out = {}
    for p in paths:
        out.update(load(p))
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
