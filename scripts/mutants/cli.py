"""The options, and the run from catalog to closing line."""
import argparse
import difflib
import fcntl
import fnmatch
import hashlib
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from . import cache as cache_mod
from . import catalog, hang, kills, operators, project, report, semantic, tce, witness
from . import config as config_mod
from .model import (COMPILE_ERROR, GENERATED, IGNORED, KILLED, NO_COVERAGE, PENDING,
                    SURVIVED, apply_edits)
from . import runner as runner_mod
from .runner import ORACLE_CASE_SECONDS, Runner, schema_tree

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))   # this checkout
SCHEMA_MIN = 16


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="region_cache_mutants.py",
        description="Builds and tests every mutant of the runtime in its own copy of the "
                    "tree, never in place; fails unless every one is killed.")
    p.add_argument("--config", metavar="FILE",
                   help="the tree's configuration (TOML, docs/mutants.md \"Configuration\"); "
                        "the tree is its root (default: the file's folder), never written: "
                        "the run's files go to --build (default: the configuration's work, "
                        "else this checkout's build/trees/<name>-<cc>). Default: "
                        "ROOT/mutants/driver.toml")
    p.add_argument("--root", help="the source tree (default: the configuration's root; "
                   "without --config, this checkout)")
    p.add_argument("--build", help="the work folder's parent: the run works in BUILD/mutants "
                   "(default: from the configuration's work, this tree's build/<cc>)")
    p.add_argument("--make-var", action="append", default=[], metavar="VAR=VALUE",
                   help="passed to every make of the mutants (CC=clang, SANITIZE=...)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--list", action="store_true", help="list the mutants and stop")
    p.add_argument("--diff", action="store_true",
                   help="with --list: each mutant's change as a unified diff")
    p.add_argument("--only", action="append", default=[], metavar="NAME",
                   help="only the mutants with this id (shell patterns allowed)")
    p.add_argument("--curated-only", action="store_true")
    p.add_argument("--run-ledgered", action="store_true",
                   help="also run the mutants mutants/equivalent lists (by default "
                        "they are recorded as equivalent, with their reason, and not "
                        "run): shows a line a new test has made unnecessary")
    p.add_argument("--generated-only", action="store_true")
    p.add_argument("--oracles", metavar="LIST",
                   help="the builds that judge a mutant, in turn, a survivor of one "
                        "going on to the next: plain (always), then the configuration's "
                        "[oracles] (this tree: asan, SANITIZE=address,undefined; tsan, "
                        "SANITIZE=thread); default: all of them")
    p.add_argument("--semantic", default="no", metavar="yes|no|FILES",
                   help="also generate the semantic operators' mutants (swapped "
                        "statements, a pair's half deleted, split atomics, ...: "
                        "semantic.py), which need libclang: of every source (yes), "
                        "or of the sources named, comma-separated (chan.c,shared.c)")
    p.add_argument("--shard", metavar="I/N", help="run the I-th of N shards (1-based)")
    p.add_argument("--merge", nargs="+", metavar="REPORT",
                   help="merge shard reports (report.json files) and stop")
    p.add_argument("--changed-since", metavar="REV",
                   help="only mutants on lines changed since REV (git)")
    p.add_argument("--report", metavar="DIR", help="where report.json/.html go "
                   "(default: BUILD/mutants)")
    p.add_argument("--results", metavar="FILE",
                   help="append pass/fail lines a mutant here (scripts/summary's format)")
    p.add_argument("--export-results", metavar="DIR",
                   help="the unmutated run is also the tree's own run of its suites: "
                        "their results and reports are copied into DIR/results and "
                        "DIR/reports (make check's build folder, which then leaves those "
                        "suites to this run). The unmutated run then always runs, every "
                        "suite of it, and a suite that fails it stops the run after its "
                        "results are copied")
    p.add_argument("--limit", type=float, metavar="SECONDS",
                   help="the time a mutant may take, and each suite too (default: 3 "
                        "times the unmutated build and suites, plus 10 s; a suite "
                        "3 times its own unmutated time plus 5 s, or 3 s with no process running)")
    p.add_argument("--no-schemata", action="store_true",
                   help="build every mutant alone (no schema build)")
    p.add_argument("--schema-suites", action="store_true",
                   help="run every suite on the schema with no mutant picked, even where "
                        "the compiler shows it is the original (schema_proof)")
    p.add_argument("--schema-min", type=int, default=SCHEMA_MIN, metavar="N",
                   help=f"a schema build only for at least N mutants (default {SCHEMA_MIN})")
    p.add_argument("--no-cache", action="store_true", help="rerun every mutant")
    p.add_argument("--full-tce", action="store_true",
                   help="compare every generated mutant's whole object code, also those the "
                        "kill map says were killed (TCE otherwise compares copies of their "
                        "functions, and compiles whole only what those cannot judge)")
    p.add_argument("--tce-only", action="store_true",
                   help="stop after trivial compiler equivalence: print its verdicts, "
                        "its time and the mutants a single target would have pruned")
    p.add_argument("--naive-sample", type=int, default=0, metavar="K",
                   help="also time K mutants the naive way (full rebuild, every suite)")
    p.add_argument("--html", choices=("auto", "yes", "no"), default="auto",
                   help="write report.html (needs mutation-testing-elements; auto: if there)")
    p.add_argument("--elements", metavar="JS", help="mutation-test-elements.js to inline")
    return p.parse_args(argv)


def make_vars_of(args, cfg=None):
    """The configuration's make_vars, then --make-var's."""
    out = dict(cfg.make_vars) if cfg else {}
    for kv in args.make_var:
        k, _, v = kv.partition("=")
        out[k] = v
    return out


def default_build(cfg, make_vars):
    """The configuration's work folder (relative to its root), with {cc} the
    compiler's name; a tree that names none is never written: its runs go
    under this checkout's build/trees/<name>-<cc>."""
    cc = os.path.basename((make_vars.get("CC") or "cc").split()[0])
    if cfg.work:
        return os.path.join(cfg.root, config_mod.expand(cfg.work, dict(make_vars, cc=cc)))
    digest = hashlib.sha256(cfg.root.encode()).hexdigest()[:8]
    return os.path.join(ROOT, "build", "trees", f"{cfg.name}-{digest}-{cc}")


def changed_lines(root, rev):
    """{path: set of lines} changed since rev (lines of the current text)."""
    p = subprocess.run(["git", "-C", root, "diff", "-U0", rev, "--"], capture_output=True,
                       text=True, check=True)
    out, path = {}, None
    for line in p.stdout.splitlines():
        if line.startswith("+++ "):
            path = line[6:] if line.startswith("+++ b/") else None
        m = re.match(r"@@ -\S+ \+(\d+)(?:,(\d+))? @@", line)
        if m and path:
            start, count = int(m.group(1)), int(m.group(2) or 1)
            out.setdefault(path, set()).update(range(start, start + max(count, 1)))
    return out


def mutant_diff(m, texts):
    """A mutant's change as a unified diff of each file it edits (--diff)."""
    out = []
    for path in dict.fromkeys(e.path for e in m.edits):
        after = apply_edits(texts[path], [e for e in m.edits if e.path == path])
        out += difflib.unified_diff(texts[path].splitlines(True), after.splitlines(True),
                                    f"a/{path}", f"b/{path}", n=2)
    return "".join(out)


def shard_of(mid, n):
    return int(hashlib.sha256(mid.encode()).hexdigest(), 16) % n


def select(mutants, args, texts):
    out = mutants
    if args.only:
        out = [m for m in out if any(fnmatch.fnmatchcase(m.id, pat) for pat in args.only)]
    if args.changed_since:
        changed = changed_lines(args.root_dir, args.changed_since)
        out = [m for m in out if any(lines & changed.get(path, set())
                                     for path, lines in m.lines(texts).items())]
    if args.shard:
        i, n = (int(x) for x in args.shard.split("/"))
        if not 1 <= i <= n:
            raise SystemExit(f"--shard {args.shard}: I must be 1 to N")
        out = [m for m in out if shard_of(m.id, n) == i - 1]
    return out


def find_elements(root, build, given):
    if given:
        return given
    for base in (os.path.join(root, "build", "npm"), os.path.join(build, "npm")):
        js = os.path.join(base, "node_modules", "mutation-testing-elements", "dist",
                          "mutation-test-elements.js")
        if os.path.exists(js):
            return js
    return None


def merge(args):
    records, suites = [], []
    for path in args.merge:
        with open(path) as f:
            rep = json.load(f)
        records.append(rep)
        suites += [s for s in report.from_json(rep)[1] if s not in suites]
    merged = dict(records[0])
    merged["files"] = {}
    for rep in records:
        for path, f in rep["files"].items():
            into = merged["files"].setdefault(path, {"language": f["language"],
                                                     "source": f["source"], "mutants": []})
            seen = {m["id"] for m in into["mutants"]}
            into["mutants"] += [m for m in f["mutants"] if m["id"] not in seen]
    merged["testFiles"] = dict(report.to_json([], {}, suites)["testFiles"])
    c = {"killed": 0, "survived": 0, "timeout": 0, "equivalent": 0, "nocoverage": 0}
    kinds = {}
    for f in merged["files"].values():
        for m in f["mutants"]:
            st, why = m["status"], m.get("statusReason", "")
            if st == "Killed":
                c["killed"] += 1
                k = report.kind_of(m)
                kinds[k] = kinds.get(k, 0) + 1
            elif st == "Timeout":
                c["timeout"] += 1
            elif st == "Survived":
                c["survived"] += 1
            elif st == "NoCoverage":
                c["nocoverage"] += 1
            elif st == "Ignored" and not why.startswith("duplicate"):
                c["equivalent"] += 1
    c["total"] = sum(c.values())
    c["kinds"] = kinds
    hangs = hang.summary_line([m for f in merged["files"].values() for m in f["mutants"]])
    if hangs:
        print(hangs)
    out = args.report or os.path.dirname(os.path.abspath(args.merge[0]))
    report.write_json(os.path.join(out, "report.json"), merged)
    js = find_elements(args.root_dir, args.root_dir, args.elements)
    if js and args.html != "no":
        report.write_html(os.path.join(out, "report.html"), merged, js)
    print(report.score_line(c))
    print(report.closing_line(c))
    return 0 if c["survived"] == 0 and c["nocoverage"] == 0 else 1


# ---- oracles (docs/mutants.md, "Oracles") -----------------------------------

def record(m, oracle):
    """Notes m's verdict as oracle's, for the cache and the cascade."""
    m.verdicts[oracle] = {"status": m.status, "killed_by": list(m.killed_by),
                          "reason": m.status_reason, "kind": m.kind}
    if oracle not in m.judged_by:
        m.judged_by.append(oracle)


def settle(m, oracle):
    """Takes oracle's verdict of m from its record (the cache's)."""
    v = m.verdicts[oracle]
    m.status, m.killed_by, m.status_reason = v["status"], list(v["killed_by"]), v["reason"]
    m.kind, m.build = v.get("kind", ""), oracle
    if oracle not in m.judged_by:
        m.judged_by.append(oracle)


def survivor_reason(m, oracles):
    """Why m survived: the suites each oracle ran on it (a verdict's reason
    names only its own oracle's), and the oracles that could not judge it."""
    passed = "every suite that reaches it passed"
    per = []
    for o in m.judged_by:
        why = m.verdicts.get(o, {}).get("reason") or m.status_reason
        why = why.split(" (oracles:")[0]
        per.append(f"{o}: {why[len(passed):].lstrip(':; ')}" if why.startswith(passed)
                   else f"{o}: {why}")
    out = f"{passed}, by oracle: " + "; ".join(per) if per else \
        m.status_reason.split(" (oracles:")[0]
    skipped = [o for o in oracles if o not in m.judged_by]
    return (out + f" (oracles: {', '.join(m.judged_by)}"
            + (f"; not judged by {', '.join(skipped)}: no suite that reaches it passes "
               f"unmutated there, or that build fails (see the run's warnings)"
               if skipped else "") + ")")


def time_line(m):
    """A line of logs/times.tsv: one a mutant an oracle ran."""
    return (f"{m.id}\t{m.status}\t{m.seconds:.2f}\t{','.join(m.tried)}\t{m.build or 'plain'}"
            f"\t{m.kind or '-'}\n")


def time_by_verdict(ran, oracle):
    spent = {}
    for m in ran:
        n, t = spent.get(m.status, (0, 0.0))
        spent[m.status] = (n + 1, t + m.seconds)
    if spent:
        print(f"mutants: {oracle}: time by verdict (job seconds): " + ", ".join(
            f"{st} {n} in {t:.0f} s" for st, (n, t) in sorted(spent.items())), file=sys.stderr)


# Faults of concurrency: what only another thread can see, so an oracle
# the configuration marks for them (concurrency = true: this tree's TSan)
# judges them first (it sees a weakened order in one run of the test that
# forces the window; ASan, which costs as much again, sees none of them).
CONCURRENCY = {"MemoryOrderWeakened", "AtomicSplit", "ReleaseMoved"}


def held_back(m, oracles):
    """Whether a catalog entry goes to a further oracle before the plain
    build: its `oracle:` line names one the run has."""
    return bool(m.first_oracle) and m.first_oracle in oracles[1:]


def oracle_order(m, oracles, kill_map=None):
    """The further oracles (after plain) a survivor meets, in order: every
    one of them, the one a catalog entry's `oracle:` line names first, else
    the one that killed it last time (the kill map: an order, never a
    verdict), else those for concurrency first for a fault of concurrency
    (a generated one's operator says so). A unref moved before the release
    that reads the task is a fault of concurrency by its operator, and
    ASan sees its use after free in one unit case where TSan needed the
    properties for a minute (2 Dec 2026)."""
    rest = list(oracles[1:])
    known = (kill_map or {}).get(m.id)
    if m.first_oracle:
        first = [o for o in rest if o == m.first_oracle]
    elif known is not None and known.oracle in rest:
        first = [known.oracle]
    elif m.operator in CONCURRENCY:
        first = [o for o in rest if project.CFG.oracles.get(o, {}).get("concurrency")]
    else:
        first = []
    rest = first + [o for o in rest if o not in first]
    return rest


def oracle_vars(oracle):
    """The make variables an oracle's build sets ({} for plain)."""
    return dict(project.CFG.oracles[oracle]["make_vars"]) if oracle != "plain" else {}


def oracle_suites(oracle):
    """The suites an oracle runs instead of those that reach a survivor
    ([] for plain and for an oracle without suites of its own)."""
    return list(project.CFG.oracles[oracle].get("suites", [])) if oracle != "plain" else []


def vars_text(make_vars):
    return " ".join(f"{k}={v}" for k, v in make_vars.items())


def unbuilt_is_survivor(m, oracle):
    """A mutant whose build fails on an oracle's build built in the plain
    one: the sanitizer's build of it failing says nothing of the mutant,
    which stays a survivor, its reason says why."""
    if m.status == COMPILE_ERROR:
        m.status, m.kind = SURVIVED, ""
        m.status_reason = (f"every suite that reaches it passed; its {oracle} build "
                           f"does not compile")


def judge(oracle, survivors, ctx):
    """Judges the survivors by one further oracle: a copy of the unmutated
    tree built with the oracle's sanitizers (WORK/base-<oracle>), its own
    unmutated run (a suite that fails there judges nothing, loudly), its
    own limits from that run, a schema build when enough mutants fit one,
    the suites that reach each mutant. Nothing is built when every
    survivor's verdict by this oracle is in the cache, or there is none."""
    args, work, state = ctx["args"], ctx["work"], ctx["state"]
    phase, cache, keys = ctx["phase"], ctx["cache"], ctx["keys"]
    own = oracle_vars(oracle)
    san = vars_text(own)
    to_run = []
    for m in survivors:
        if oracle in m.verdicts:
            settle(m, oracle)
        else:
            to_run.append(m)
    if not to_run:
        return
    obase = os.path.join(work, f"base-{oracle}")
    ologs = os.path.join(ctx["logdir"], oracle)
    os.makedirs(ologs, exist_ok=True)
    # A mutant compiled under -Werror in the plain build; what a sanitizer
    # makes the compiler warn of is no verdict (build.lenient).
    ovars = project.lenient(dict(ctx["make_vars"], **own))
    kept = state.setdefault("oracles", {})
    ob = kept.get(oracle)
    if ob and os.path.isdir(obase):
        project.sync(ctx["root"], obase)
    else:
        ob = None
        project.snapshot(ctx["root"], obase)      # with nothing built in it
    # the kill map's witnesses first (witness.py): what killed a mutant on
    # this build last time, alone, before every suite's unmutated run
    to_run = judge_by_witness(oracle, to_run, ctx, obase, ologs, ovars, ob)
    if not to_run:
        return
    # only the suites that reach a survivor are run unmutated (and kept,
    # with the copy, while the inputs are the same); an oracle with suites
    # of its own runs those, for every survivor
    own_suites = oracle_suites(oracle)
    needed = own_suites or [s for s in ctx["suites"] if any(s in m.covered_by for m in to_run)]
    missing = [s for s in needed if ob is None or (s not in ob["suites"] and s not in ob["failed"])]
    if ob is None or missing:
        print(f"mutants: {oracle}: {len(to_run)} survivors to judge; the unmutated run "
              f"({san}): {' '.join(missing)}", file=sys.stderr)
        more = project.baseline(obase, ovars, missing, ologs, jobs=args.jobs, tolerate=True)
        if ob is None or ob["failed"] == [project.BUILD_STEP]:
            ob = more
        else:
            ob["suites"].update(more["suites"])
            ob["noise"].update(more["noise"])
            ob.setdefault("results", {}).update(more["results"])
            ob.setdefault("cases", {}).update(more.get("cases", {}))
            ob["failed"] += more["failed"]
            ob.setdefault("why", {}).update(more.get("why", {}))
        kept[oracle] = ob
        ctx["save_state"]()
        phase(f"unmutated run ({oracle})")
    log = os.path.join(ologs, "baseline.log")
    if ob["failed"] == [project.BUILD_STEP]:
        ctx["warnings"].append(f"the {oracle} oracle ({san}) does not build the "
                               f"unmutated tree; see {log}; {len(to_run)} survivors not judged by it")
        print(f"mutants: WARNING: {ctx['warnings'][-1]}", file=sys.stderr)
        return
    for s in [s for s in ob["failed"] if s in needed]:
        why = ob.get("why", {}).get(s)
        ctx["warnings"].append(f"{s} fails unmutated on the {oracle} build ({san or 'no make variables of its own'}): "
                               f"it judges no mutant there; see {log}"
                               + (f"; it says: {why}" if why else ""))
        print(f"mutants: WARNING: {ctx['warnings'][-1]}", file=sys.stderr)
    times = ob["suites"]
    plain = ctx["base_run"].get("suites", {})
    # Check's bound a case, scaled as the suite slows under the sanitizer
    # (from a wider base than the plain build's: one case can slow more
    # than its suite does, and a bound hit there is a false Timeout)
    base = ORACLE_CASE_SECONDS
    case = {s: max(base, math.ceil(base * t / plain[s] if plain.get(s) else 3 * base))
            for s, t in times.items()}
    unmutated = ob["build"] + sum(times[s] for s in needed if s in times)
    limit = args.limit or 3 * unmutated + 10
    items = []
    for m in to_run:
        reach = [s for s in (own_suites or m.covered_by) if s in times]
        if reach:
            m.tried, m.kind = [], ""
            items.append((m, reach))
    print(f"mutants: {oracle}: {len(items)} to run, limit {limit:.0f} s a mutant",
          file=sys.stderr)
    if not items:
        return
    runner = Runner(obase, os.path.join(work, f"work-{oracle}"), ovars, times, limit, ologs,
                    jobs=args.jobs, ledger=ctx["ledger"], per_suite=not args.limit,
                    oracle=oracle, noise=ob["noise"], case_seconds=case,
                    expected=ob.get("results"), oracle_vars=own)
    runner.kills = ctx["kill_map"]
    runner.case_times = ob.get("cases") or {}
    started = time.monotonic()
    # an oracle's own suites build what they build, not the schema's library
    schema = [m for m, _ in items if len({e.path for e in m.edits}) == 1
              and m.path.endswith(".c")] if not own_suites else []
    if len(schema) >= args.schema_min and not args.no_schemata and project.CFG.mutant_env:
        texts = ctx["texts"]
        schema = compiling(ctx, schema, args.jobs)
        in_schema = runner.build_schema(texts, schema, [s for s in needed if s in times])
        print(f"mutants: {oracle}: {len(in_schema)} of {len(items)} in one schema build "
              f"({time.monotonic() - started:.1f} s), the others built alone"
              + ("" if in_schema else f" (the schema did not build or pass: see "
                 f"{os.path.join(ologs, 'schema.log')})"), file=sys.stderr)
        phase(f"schema build ({oracle})")
    progress = report.Progress(len(items))
    with open(os.path.join(ctx["logdir"], "times.tsv"), "a") as tsv:
        def done(m):
            unbuilt_is_survivor(m, oracle)
            runner.learn(m)
            record(m, oracle)
            cache.put(keys[m.id], m)
            progress.update(m)
            tsv.write(time_line(m))
            tsv.flush()
        try:
            runner.run_all(items, done)
        finally:
            cache.save()
            runner.drop_schema()
            shutil.rmtree(os.path.join(work, f"work-{oracle}"), ignore_errors=True)
    time_by_verdict([m for m, _ in items], oracle)
    phase(f"mutant runs ({oracle})")


# Runs of a concurrency oracle's witness (concurrency = true) before its
# survivor goes to the whole judgement.
WITNESS_TRIES = 3


def judge_by_witness(oracle, to_run, ctx, obase, ologs, ovars, ob):
    """Runs the mutants of to_run that the kill map says this oracle killed
    with only what killed them (witness.py), in the oracle's copy obase;
    ob is its kept unmutated run, if any. Settles those killed (or timed
    out) there; returns the others, for the whole judgement."""
    groups = witness.by_suite(to_run, oracle, ctx["kill_map"])
    if not groups:
        return to_run
    args, phase = ctx["args"], ctx["phase"]
    cache, keys = ctx["cache"], ctx["keys"]
    shape = {s: witness.restriction(ms, ctx["kill_map"]) for s, ms in groups.items()}
    n = sum(len(ms) for ms in groups.values())
    print(f"mutants: {oracle}: {n} of {len(to_run)} survivors first by what killed each "
          f"last time (the kill map), unmutated then mutated: "
          + ", ".join(f"{s} ({' '.join(p + c) or 'whole'})" for s, (p, c) in shape.items()),
          file=sys.stderr)
    log = os.path.join(ologs, "witness.log")
    os.makedirs(ologs, exist_ok=True)
    # One build for the unmutated witnesses and every mutant: the
    # witnesses' schema (a copy of obase, which stays unbuilt for the whole
    # judgement), checked by the unmutated witness runs with no mutant
    # picked. Built alone, each mutant relinked every test program under
    # the sanitizer: 100 s of TSan's 144 for 11 mutants on 2 Dec 2026.
    wtree, numbers = os.path.join(ctx["work"], f"witness-{oracle}"), {}
    singles = [m for ms in groups.values() for m in ms
               if len({e.path for e in m.edits}) == 1 and m.path.endswith(".c")]
    if singles and not args.no_schemata and project.CFG.mutant_env:
        numbers = schema_tree(obase, wtree, ctx["texts"], compiling(ctx, singles, args.jobs))
    if numbers:
        print(f"mutants: {oracle}: {len(numbers)} of {n} in the witnesses' schema build, "
              f"which their unmutated runs check", file=sys.stderr)
    kept = {} if numbers else (ob or {}).get("suites", {})
    # a suite whose whole unmutated run is kept passed every part of itself
    # (on obase: the schema's copy runs every witness itself)
    fresh = {s: r for s, r in shape.items() if s not in kept}
    build_s, times, noise = witness.unmutated(wtree if numbers else obase, ovars, fresh, log,
                                              jobs=args.jobs, env=project.schema_env("")
                                              if numbers else None)
    if build_s is None and numbers:
        # not fatal (each mutant is then built alone), but a schema that
        # does not build is a fault of the driver's: said again at the end
        ctx["warnings"].append(f"the {oracle} witnesses' schema did not build (see {log}): "
                               f"each mutant built alone")
        print(f"mutants: WARNING: {ctx['warnings'][-1]}", file=sys.stderr)
        shutil.rmtree(wtree, ignore_errors=True)
        numbers, kept = {}, (ob or {}).get("suites", {})
        fresh = {s: r for s, r in shape.items() if s not in kept}
        build_s, times, noise = witness.unmutated(obase, ovars, fresh, log, jobs=args.jobs)
    if build_s is None:
        return to_run               # the whole judgement says why, once
    times.update({s: kept[s] for s in shape if s in kept})
    noise.update({s: ob["noise"].get(s, []) for s in shape if s in kept})
    phase(f"witness unmutated runs ({oracle})")
    for s in [s for s in shape if s not in times]:
        # its mutants lose nothing (the whole judgement runs every suite),
        # but a witness that fails unmutated is a flaky case or one that
        # needs another case before it: said again at the end, as a warning
        ctx["warnings"].append(f"the {oracle} witness of {s} did not hold unmutated "
                               f"(see {log}): its {len(groups[s])} mutants were judged whole")
        print(f"mutants: WARNING: {ctx['warnings'][-1]}", file=sys.stderr)
    items = [(m, [s]) for s, ms in groups.items() if s in times for m in ms]
    if not items:
        return to_run
    # Check's bound a case: from the suite's slow-down when its whole run is
    # kept, as in judge; else from the witness's own unmutated run, which
    # ran only the cases named (three times it: a TSan mutant's reports
    # slow its case, and on 2 Dec 2026 a bound of 15 s called one that TSan
    # had killed before a Timeout)
    plain = ctx["base_run"].get("suites", {})
    base = ORACLE_CASE_SECONDS
    case = {s: max(base, math.ceil(base * kept[s] / plain[s])) if s in kept and plain.get(s)
            else max(3 * base, math.ceil(3 * times[s])) for s in times}
    limit = args.limit or 3 * (build_s + sum(times.values())) + 10
    runner = Runner(obase, os.path.join(ctx["work"], f"work-{oracle}"), ovars, times, limit,
                    ologs, jobs=args.jobs, ledger=ctx["ledger"], per_suite=not args.limit,
                    oracle=oracle, noise=noise, case_seconds=case,
                    oracle_vars=oracle_vars(oracle))
    runner.kills = ctx["kill_map"]
    runner.restrict = {s: witness.hints(*shape[s]) for s in times}
    runner.confirm_alone = False
    if numbers:
        runner.adopt_schema(wtree, numbers)
    settled = set()
    # What TSan sees of a race depends on the schedule; a witness that
    # missed one is run again before the whole judgement, whose unmutated
    # run of every suite took 298 s under TSan on 2 Dec 2026 for two
    # mutants the same case then killed at once.
    tries = WITNESS_TRIES if project.CFG.oracles.get(oracle, {}).get("concurrency") else 1
    with open(os.path.join(ctx["logdir"], "times.tsv"), "a") as tsv:
        def done(m):
            # a survivor of its witness is judged whole next; one whose
            # build fails here fails the same way there (judge's done)
            final = m.status != SURVIVED
            unbuilt_is_survivor(m, oracle)
            if final:
                runner.learn(m)
                record(m, oracle)
                cache.put(keys[m.id], m)
                settled.add(m.id)
            progress.update(m)
            tsv.write(time_line(m))
            tsv.flush()
        try:
            left = items
            for attempt in range(tries):
                if attempt:
                    print(f"mutants: {oracle}: {len(left)} survived their witness: "
                          f"run {attempt + 1} of {tries}", file=sys.stderr)
                progress = report.Progress(len(left))
                for m, _ in left:
                    m.tried, m.kind = [], ""
                runner.run_all(left, done)
                left = [(m, s) for m, s in left if m.id not in settled]
                if not left:
                    break
        finally:
            cache.save()
            runner.drop_schema()
            shutil.rmtree(os.path.join(ctx["work"], f"work-{oracle}"), ignore_errors=True)
    time_by_verdict([m for m, _ in items], f"{oracle} witness")
    phase(f"witness mutant runs ({oracle})")
    return [m for m in to_run if m.id not in settled]


def say_unstable(base_run):
    """A line a suite that passes by its results whose unmutated runs
    disagreed on some tests: those do not count."""
    for suite, expected in (base_run.get("results") or {}).items():
        shaky = project.unstable(expected)
        if shaky:
            print(f"mutants: {suite}: {len(shaky)} of {len(expected)} results differ between "
                  f"the unmutated runs and do not count: {', '.join(shaky[:5])}"
                  + (" ..." if len(shaky) > 5 else ""), file=sys.stderr)


def take_coverage(tree, suites, logdir, make_vars, args, base_run):
    cov = project.coverage(tree, suites, logdir, make_vars=make_vars, jobs=args.jobs,
                           expected=base_run.get("results"), root=project.CFG.root)
    for s in cov["failed"]:
        print(f"mutants: coverage: {s} does not pass in the coverage build: it counts as "
              f"reaching every mutant (see {os.path.join(logdir, 'coverage.log')})",
              file=sys.stderr)
    return cov


def coverage_waits(args, pending, kill_map):
    """Whether the coverage build waits until a mutant survives. It tells
    which suites reach each mutant, so that one none reaches is NoCoverage
    with no run; a killed mutant needs none of it. A curated-only run
    (make check) waits; so does a run whose kill map names the kill of at
    least half its pending mutants: those are killed in seconds by what
    killed them before, and the coverage (45 s of the gate of 2 Dec 2026,
    which had no mutant that no suite reaches) is taken only if one
    survives (6). A tree with no map, or a changed one, takes it first."""
    if args.curated_only:
        return True
    known = sum(1 for m in pending if m.id in kill_map)
    return bool(pending) and 2 * known >= len(pending)


def compiling(ctx, mutants, jobs):
    """The mutants a schema may hold: the generated ones (TCE compiled each
    under the tree's flags) and the curated entries that compile, each
    compiled once a run (the oracles' schemas ask again), on every job at
    once. An entry the kill map says was killed is only checked to compile
    (-fsyntax-only), as TCE checks a generated one (tce.py): the schema is
    built with warnings not fatal, and what it needs is that the entry
    parses and type-checks."""
    known = ctx.setdefault("compiles", {})
    texts, cfg = ctx["texts"], project.CFG
    flags = tce.flags_of(cfg.tce_flags)[0]
    include = cfg.include_dirs(ctx["make_vars"])
    killed = ctx.get("killed", set())

    def compiles(m):
        how = flags + ["-fsyntax-only"] if m.id in killed else flags
        return tce.object_digest(ctx["cc"], ctx["tree"], apply_edits(texts[m.path], m.edits),
                                 include, how)[0] is not None
    todo = [m for m in mutants if m.origin != GENERATED and m.id not in known]
    with ThreadPoolExecutor(max(1, jobs)) as pool:
        # the killed ones a file at a time, in one compilation (tce.py)
        bulk = tce.syntax_in_bulk(
            [m for m in todo if m.id in killed and len({e.path for e in m.edits}) == 1
             and m.path.endswith(".c")], texts, pool,
            lambda text: tce.object_digest(ctx["cc"], ctx["tree"], text, include,
                                           flags + ["-fsyntax-only"]))
        known.update((mid, True) for mid in bulk)
        todo = [m for m in todo if m.id not in bulk]
        for m, ok in zip(todo, pool.map(compiles, todo)):
            known[m.id] = ok
    return [m for m in mutants if m.origin == GENERATED or known[m.id]]


def schema_proof(ctx, pairs):
    """None when each file of pairs ({path: (original, schema)}) compiles,
    with what the schema adds left out (RT_SCHEMATA_NONE: the prelude, the
    mutants' copies, the switch at the top of each function), to the object
    code of its original, under every configuration the suites compile the
    sources in ([build] configurations); else why not.

    What the schema adds does nothing when no mutant is picked: the pick is
    0 when the variable is unset, no mutant is numbered 0, so each switch
    only breaks, and the copies are called only from the switch. What the
    compiler shows is the rest: that putting them in changed nothing around
    them. Then the schema's own run of every suite unmutated (minutes)
    would only repeat the unmutated run. Object code is compared at the TCE
    flags (-O2, no debug information), not the build's: it is the source
    that is shown to be the same."""
    cfg = project.CFG
    base = tce.flags_of(cfg.tce_flags)[0] + ["-Wno-error"]
    include = cfg.include_dirs(ctx["make_vars"])
    jobs = [(path, conf) for path in sorted(pairs) for conf in cfg.configurations]

    def same(job):
        path, conf = job
        original, schema = pairs[path]
        a = tce.object_digest(ctx["cc"], ctx["tree"], original, include, base + conf)
        b = tce.object_digest(ctx["cc"], ctx["tree"], schema, include,
                              base + conf + ["-DRT_SCHEMATA_NONE"])
        if a[0] is None or b[0] is None:
            return f"{path} ({' '.join(conf) or 'no defines'}) does not compile: {a[1] or b[1]}"
        if a[0] != b[0]:
            return f"{path} ({' '.join(conf) or 'no defines'}): other object code"
        return None
    with ThreadPoolExecutor(max(1, ctx.get("jobs", 2))) as pool:
        whys = [w for w in pool.map(same, jobs) if w]
    return "; ".join(whys) or None


def _interrupted(signum, frame):
    raise KeyboardInterrupt


def load_config(args):
    """The configuration: --config, else ROOT/mutants/driver.toml (ROOT:
    --root, else this checkout). Sets args.root_dir to the tree."""
    path = args.config
    if path is None:
        root = os.path.abspath(args.root or ROOT)
        path = config_mod.find(root)
        if path is None:
            raise SystemExit(f"mutants: no configuration: {os.path.join(root, config_mod.FILE)} "
                             f"is not there (--config FILE names one; docs/mutants.md, "
                             f"\"Configuration\")")
    try:
        cfg = config_mod.load(path, root=args.root)
    except config_mod.ConfigError as e:
        raise SystemExit(f"mutants: {e}")
    args.root_dir = cfg.root
    project.configure(cfg)
    if cfg.ledger:
        report.set_ledger(cfg.ledger)
    return cfg


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    cfg = load_config(args)
    order = ["plain"] + list(cfg.oracles)
    asked = args.oracles if args.oracles is not None else ",".join(order)
    args.oracles = [o.strip() for o in asked.split(",") if o.strip()]
    unknown = [o for o in args.oracles if o not in order]
    if unknown or "plain" not in args.oracles:
        raise SystemExit(f"--oracles: {', '.join(unknown) or 'plain is missing'}: "
                         f"a list of {', '.join(order)}, plain among them")
    args.oracles = [o for o in order if o in args.oracles]
    signal.signal(signal.SIGTERM, _interrupted)
    if args.merge:
        return merge(args)
    try:
        return run(args)
    except KeyboardInterrupt:
        project.kill_all()
        print("mutants: interrupted; the source tree was never written", file=sys.stderr)
        return 130
    except project.BaselineError as e:
        print(f"mutants: stopped: {e}", file=sys.stderr)
        if args.results:
            os.makedirs(os.path.dirname(os.path.abspath(args.results)), exist_ok=True)
            with open(args.results, "a") as f:
                f.write(f"fail unmutated-tree {e}\n")
        return 2


def tce_line(judged, generated):
    """One line: TCE's targets, verdicts, compilations and time."""
    n = {k: sum(1 for m in generated if test(m)) for k, test in (
        ("equivalent", lambda m: m.equivalent), ("duplicate", lambda m: m.duplicate_of),
        ("compile_error", lambda m: m.status == COMPILE_ERROR))}
    compiled = ", ".join(f"{judged['compiled'][t]} for {t}" for t in judged["targets"])
    kept = sum(judged["cached"].values())
    bulk = judged.get("bulk", 0)
    checked = (f" ({judged['checked']} the kill map says were killed only checked to compile"
               + (f", {bulk} of them in one compilation a file" if bulk else "") + ")"
               if judged.get("checked") else "")
    schemas = sum(judged.get("schemas", {}).values())
    by_function = (f"; {judged['by_function']} compared by their function's copy in "
                   f"{schemas} compilations" if judged.get("by_function") else "")
    return (f"mutants: TCE on {', '.join(judged['targets']) or 'no target'}: "
            f"{n['equivalent']} equivalent, {n['duplicate']} duplicates, "
            f"{n['compile_error']} do not compile, of {len(generated)}{checked}{by_function}; "
            f"{len(judged['split'])} equal on {judged['targets'][0] if judged['targets'] else '-'}"
            f" and told apart by another target; compiled {compiled}"
            f"{f' ({kept} found in tce.json or compiled already)' if kept else ''}; "
            f"{judged['seconds']:.1f} s")


def run(args):
    cfg = project.CFG
    root = cfg.root
    make_vars = make_vars_of(args, cfg)
    build = os.path.abspath(args.build or default_build(cfg, make_vars))
    work = os.path.join(build, "mutants")
    os.makedirs(work, exist_ok=True)
    # One run at a time a build folder (check and gate may start together).
    with open(os.path.join(work, "lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return run_locked(args, root, make_vars, build, work)


def run_locked(args, root, make_vars, build, work):
    started = time.monotonic()
    phases = {}
    mark = [started]

    def phase(name):
        now = time.monotonic()
        phases[name] = phases.get(name, 0) + now - mark[0]
        mark[0] = now
    out_dir = os.path.abspath(args.report or work)
    logdir = os.path.join(work, "logs")
    os.makedirs(logdir, exist_ok=True)
    cfg = project.CFG
    for feature, why in cfg.off(curated_only=args.curated_only):
        print(f"mutants: {feature} off: {why}", file=sys.stderr)

    # 1. The snapshot: every later step reads and builds copies of it.
    state_path = os.path.join(work, "state.json")
    base = os.path.join(work, "base")
    fresh = os.path.join(work, "snapshot.new")
    project.snapshot(root, fresh)
    fp = project.fingerprint(fresh)
    state = {}
    if os.path.exists(state_path) and not args.no_cache:
        with open(state_path) as f:
            state = json.load(f)
    reuse = (state.get("fingerprint") == fp and state.get("make_vars") == make_vars
             and os.path.isdir(base))
    if reuse:
        # the same test inputs: keep the built copy, and bring over what
        # changed only in ways no test sees (the catalog, docs, comments)
        shutil.rmtree(fresh)
        project.sync(root, base)
    else:
        for old in [base, os.path.join(work, "base-cov")] + [
                os.path.join(work, f"base-{o}") for o in cfg.oracles]:
            if os.path.exists(old):
                shutil.rmtree(old)
        if os.path.exists(state_path):
            os.unlink(state_path)
        os.rename(fresh, base)
    tree = base
    texts = {}
    for rel in project.tree_files(tree):
        full = os.path.join(tree, rel)
        if os.path.getsize(full) > (1 << 20) or rel.startswith(project.BUILD_IN_COPY + "/"):
            continue
        try:
            with open(full) as f:
                texts[rel] = f.read()
        except UnicodeDecodeError:
            pass

    phase("snapshot")

    # 2. The mutants: the catalog, then the generated ones.
    mutants, stale = [], []
    if not args.generated_only and cfg.catalog:
        cur, stale = catalog.load(tree, texts, [config_mod.expand(p, make_vars)
                                                for p in cfg.catalog])
        mutants += cur
    if not args.curated_only:
        asked = args.semantic != "no"
        only_in = (None if args.semantic == "yes" else
                   {f.strip() for f in args.semantic.split(",") if f.strip()} if asked else set())
        why_not = semantic.unavailable() if asked else "not asked for"
        if asked and why_not:
            print(f"mutants: semantic operators off: {why_not}", file=sys.stderr)
        include = [os.path.join(tree, d) for d in cfg.include_dirs(make_vars)]
        generated, test_only = [], {}
        for rel in cfg.sources(texts, make_vars):
            generated += operators.mutants(rel, texts[rel])
            if not why_not and (only_in is None or rel in only_in
                                or os.path.basename(rel) in only_in):
                generated += semantic.mutants(rel, texts[rel], include)
            test_only[rel] = operators.test_only_spans(texts[rel], cfg.test_define,
                                                       cfg.test_statements)
        kept = [m for m in generated if not operators.in_test_only_code(m, test_only)]
        if len(kept) < len(generated):
            what = ([f"#if {cfg.test_define}"] if cfg.test_define else []) + (
                [", ".join(cfg.test_statements)] if cfg.test_statements else [])
            print(f"mutants: {len(generated) - len(kept)} sites in code only test builds "
                  f"compile ({'; '.join(what)}) are not mutated", file=sys.stderr)
        mutants += kept
    ledger = catalog.load_ledger(tree, cfg.ledger)
    mutants = select(mutants, args, texts)
    # What gave each mutant its verdict last time (kills.py): tried first.
    # One the plain build let through and an oracle killed goes to that
    # oracle first, as an entry's oracle: line sends it.
    kill_map = kills.load(os.path.join(tree, cfg.kills)) if cfg.kills else {}
    for m in mutants:
        k = kill_map.get(m.id)
        if k and k.oracle != "plain" and not m.first_oracle and k.oracle in args.oracles[1:]:
            m.first_oracle, m.first_why = k.oracle, "the kill map"
    for e in stale:
        print(f"mutants: stale catalog entry {e}", file=sys.stderr)
    if args.list:
        for m in mutants:
            print(f"{m.id}\t{m.path}:{m.location.line}\t{m.about}")
            if args.diff:
                print(mutant_diff(m, texts), end="")
        return 1 if stale else 0
    phase("mutants")

    cc = (make_vars.get("CC") or "cc").split()[0]
    generated = [m for m in mutants if m.origin == GENERATED]
    checked = set()         # the kill map's kills, which TCE only checked to compile
    if generated:
        memo_path = os.path.join(work, "tce.json")
        memo = {}
        if os.path.exists(memo_path) and not args.no_cache:
            try:
                with open(memo_path) as f:
                    memo = json.load(f)
            except ValueError:
                memo = {}
        # The kill map's kills are never compiled whole (tce.py: a killed
        # mutant is no equivalent one); the function copies compare them,
        # so duplicates among them are found. The ledger's mutants are not
        # compiled whole either: unless TCE shows them equivalent or
        # duplicates by their copies, their line is their verdict.
        if cfg.kills and not (args.full_tce or args.tce_only):
            checked = set(kill_map)
        settled = set() if args.run_ledgered else set(ledger)
        judged = tce.prune(generated, texts, tree, cc=cc, jobs=args.jobs, memo=memo,
                           include_dirs=cfg.include_dirs(make_vars), claimed=cfg.tce_targets,
                           flags=cfg.tce_flags, killed=checked, settled=settled,
                           whole=args.full_tce)
        checked = {m.id for m in generated if m.id in checked and m.status == PENDING}
        # One its function's copy told apart from everything is compared
        # whole if it survives (5b): a caller's constants may make it
        # equivalent there.
        checked |= {mid for mid in judged["unique_by_function"]}
        with open(memo_path + ".tmp", "w") as f:
            json.dump(memo, f)
        os.replace(memo_path + ".tmp", memo_path)
        print(tce_line(judged, generated), file=sys.stderr)
        if args.tce_only:
            for mid, what in judged["split"]:
                print(f"{mid}\tnot pruned: {what}")
    phase("mutants and equivalence")
    if args.tce_only:
        return 0

    # A mutant the ledger lists is equivalent by its reason, which a person
    # wrote after it survived every suite that reaches it: running it again
    # costs every such suite (a survivor stops at none) to learn what the
    # line says. --run-ledgered runs them, to find lines a test has made
    # unnecessary.
    if not args.run_ledgered:
        for m in mutants:
            if m.status == PENDING and m.id in ledger:
                m.status, m.equivalent = IGNORED, True
                m.status_reason = report.LEDGER + ledger[m.id] + " (not run)"

    # 3. Cached results: a mutant's key is its content and the tree's inputs.
    cache = cache_mod.Cache(os.path.join(work, "cache.json"), enabled=not args.no_cache)
    keys, pending = {}, []
    for m in mutants:
        if m.status != PENDING:
            continue
        mutated = {p: apply_edits(texts[p], [e for e in m.edits if e.path == p])
                   for p in {e.path for e in m.edits}}
        keys[m.id] = cache_mod.key(m, mutated, fp, make_vars)
        hit = cache.get(keys[m.id])
        verdicts = hit.get("verdicts", {}) if hit else {}
        first = m.first_oracle if held_back(m, args.oracles) else None
        if "plain" in verdicts or (first and verdicts.get(first, {}).get("status") == KILLED):
            m.verdicts = dict(verdicts)
            m.covered_by = hit.get("covered_by", [])
            settle(m, "plain" if "plain" in verdicts else first)
            m.cached = True
        else:
            pending.append(m)

    # 4. The unmutated run and its coverage, when something is left to run
    # (kept while the inputs are the same). The coverage may wait for a
    # survivor (coverage_waits): until then every suite may run, the kill
    # map's first.
    def save_state():
        with open(state_path + ".tmp", "w") as f:
            json.dump(state, f)
        os.replace(state_path + ".tmp", state_path)

    suites, base_run, todo = state.get("suites", []), state.get("baseline"), []
    cov = None
    if pending or args.export_results:
        if reuse and "noise" in state.get("baseline", {}) and not args.export_results:
            suites, base_run = state["suites"], state["baseline"]
        else:
            suites = project.suites(tree, make_vars)
            if not suites:
                raise project.BaselineError("the configuration names no suite (suites.names "
                                            "or suites.list)")
            print(f"mutants: the unmutated run: {' '.join(suites)}", file=sys.stderr)
            export = os.path.abspath(args.export_results) if args.export_results else None
            base_run = project.baseline(tree, make_vars, suites, logdir, jobs=args.jobs,
                                        tolerate=bool(export), export=export)
            if base_run.get("failed"):
                # every suite ran and its results are out: the tree fails them
                raise project.BaselineError(
                    f"the unmutated tree fails {', '.join(base_run['failed'])}"
                    f" ({'; '.join(base_run.get('why', {}).get(f, '') for f in base_run['failed'])})")
            say_unstable(base_run)
            phase("unmutated run (plain)")
            state = {"fingerprint": fp, "make_vars": make_vars, "suites": suites,
                     "baseline": base_run}
            save_state()
        cov = state.get("coverage")
        # with nothing pending (--export-results) no mutant needs it
        if cov is None and pending and not coverage_waits(args, pending, kill_map) and \
                cfg.coverage_vars is not None:
            cov = state["coverage"] = take_coverage(tree, suites, logdir, make_vars, args,
                                                    base_run)
            save_state()
            phase("coverage")
        for m in pending:
            m.covered_by = (list(suites) if cov is None else project.covering(
                cov, project.countable(m.lines(texts), texts), suites))
            if not m.covered_by:
                m.status = NO_COVERAGE
                m.status_reason = "no suite executes the lines it changes"
                record(m, "plain")
                cache.put(keys[m.id], m)
            else:
                todo.append((m, m.covered_by))
    base_run = base_run or {"build": 0.0, "suites": {}}
    unmutated = base_run["build"] + sum(base_run["suites"].values())
    limit = args.limit or 3 * unmutated + 10

    # 5. Run them. A catalog entry whose `oracle:` line names a further
    # oracle goes to it first: the plain build is known to let it through,
    # and its every suite would run before the oracle saw it. The plain
    # build judges it only if that oracle and the others do not kill it.
    held = [(m, s) for m, s in todo if held_back(m, args.oracles)]
    todo = [(m, s) for m, s in todo if not held_back(m, args.oracles)]
    for m, _ in held:
        m.status, m.killed_by = SURVIVED, []
        m.status_reason = (f"judged by {m.first_oracle} first "
                           f"({m.first_why or 'its entry' + chr(39) + 's oracle: line'})")
    print(f"mutants: {len(mutants)} mutants, {len(todo)} to run "
          f"({sum(m.cached for m in mutants)} cached), jobs {args.jobs}, "
          f"limit {limit:.0f} s a mutant", file=sys.stderr)
    runner = Runner(tree, os.path.join(work, "work"), make_vars, base_run["suites"], limit,
                    logdir, jobs=args.jobs, ledger=ledger, per_suite=not args.limit,
                    noise=base_run.get("noise"), expected=base_run.get("results"))
    runner.kills = kill_map
    runner.case_times = base_run.get("cases") or {}
    for m in mutants:
        if m.cached:
            runner.learn(m)
    run_started = time.monotonic()
    schema = [m for m, _ in todo if len({e.path for e in m.edits}) == 1
              and m.path.endswith(".c")]
    # a schema costs a whole build and a pass of every suite: worth it for many
    ctx = dict(texts=texts, cc=cc, tree=tree, make_vars=make_vars, compiles={}, jobs=args.jobs,
               killed=set() if args.full_tce else set(kill_map))
    if len(schema) >= args.schema_min and not args.no_schemata and cfg.mutant_env:
        # a curated entry that does not compile would break the schema: built alone
        schema = compiling(ctx, schema, args.jobs)
        if not args.schema_suites:
            runner.prove_schema = lambda pairs: schema_proof(ctx, pairs)
        in_schema = runner.build_schema(texts, schema, suites)
        proven = (f"; with no mutant picked its {runner.schema_proven} files compile to the "
                  f"original's object code, so no suite runs it unmutated"
                  if in_schema and runner.schema_proven else "")
        print(f"mutants: {len(in_schema)} of {len(todo)} in one schema build "
              f"({time.monotonic() - run_started:.1f} s{proven}), the others built alone"
              + ("" if in_schema else " (the schema did not build or pass: see logs/schema.log)"),
              file=sys.stderr)
        phase("schema build (plain)")
    progress = report.Progress(len(todo))
    # where the run's time went, a line a mutant (docs/mutants.md reads it)
    times = open(os.path.join(logdir, "times.tsv"), "w")
    times.write("id\tstatus\tseconds\tsuites tried to the verdict\toracle\tkilled by\n")
    try:
        def done(m):
            runner.learn(m)
            record(m, "plain")
            cache.put(keys[m.id], m)
            progress.update(m)
            times.write(time_line(m))
            times.flush()
        runner.run_all(todo, done)
    finally:
        times.close()
        cache.save()
        shutil.rmtree(os.path.join(work, "work"), ignore_errors=True)
    run_seconds = time.monotonic() - run_started
    time_by_verdict([m for m, _ in todo], "plain")
    phase("mutant runs (plain)")

    # 5b. A mutant TCE only checked to compile (the kill map said it was
    # killed), or told apart only by its function's copy, that survives is
    # compared now, whole, before any verdict: it may have come to be
    # equivalent since, or be equivalent where its function is called, as
    # a run that compiles every mutant whole would find.
    late_tce = [m for m in generated if m.id in checked and m.status == SURVIVED]
    if late_tce:
        for m in late_tce:
            m.status = PENDING
        again = tce.prune(late_tce, texts, tree, cc=cc, jobs=args.jobs,
                          include_dirs=cfg.include_dirs(make_vars), claimed=cfg.tce_targets,
                          flags=cfg.tce_flags, whole=True)
        for m in late_tce:
            if m.status == PENDING:
                m.status = SURVIVED
            elif m.id in keys:
                cache.put(keys[m.id], m)
        print(f"mutants: TCE of the {len(late_tce)} survivors it had not compared whole: "
              f"{sum(m.equivalent for m in late_tce)} equivalent, "
              f"{sum(bool(m.duplicate_of) for m in late_tce)} duplicates; "
              f"{again['seconds']:.1f} s", file=sys.stderr)
        phase("TCE of survivors")

    # 6. Survivors of a run without coverage: one no suite reaches is
    # NoCoverage. When each is a catalog entry held back for an oracle
    # whose kill the kill map holds, or for one with suites of its own
    # (which runs those whatever reaches the mutant), the coverage waits:
    # the oracles kill them in seconds, and it is taken only if one
    # survives them (6d).
    survivors = [m for m in mutants if m.status == SURVIVED]
    def coverage_of(survivors):
        nonlocal cov
        # kept while the inputs are the same (a run whose every mutant
        # came from the cache took none)
        cov = state.get("coverage") if reuse else None
        if cov is None:
            cov = state["coverage"] = take_coverage(tree, suites, logdir, make_vars, args,
                                                    base_run)
            save_state()
            phase("coverage")
        for m in survivors:
            m.covered_by = project.covering(cov, project.countable(m.lines(texts), texts),
                                            suites)
            if not m.covered_by:
                m.status = NO_COVERAGE
                m.status_reason = "no suite executes the lines it changes"
            if m.status == NO_COVERAGE or not held_back(m, args.oracles):
                record(m, "plain")
            if m.id in keys:
                cache.put(keys[m.id], m)
        cache.save()
    deferred = False
    if survivors and cov is None and suites and cfg.coverage_vars is not None:
        deferred = all(held_back(m, args.oracles) and (
            (m.id in kill_map and kill_map[m.id].oracle in args.oracles[1:])
            or oracle_suites(m.first_oracle)) for m in survivors)
        if not deferred:
            coverage_of(survivors)

    # 6b. The cascade: a survivor of the plain build is judged again by each
    # further oracle, in its own build, with the suites that reach it.
    warnings = []
    for step in range(len(args.oracles) - 1):
        survivors = [m for m in mutants if m.status == SURVIVED]
        if not survivors:
            break
        if not suites:
            suites = project.suites(tree, make_vars)
        by_oracle = {}
        for m in survivors:
            order = oracle_order(m, args.oracles, kill_map)
            if step < len(order):
                by_oracle.setdefault(order[step], []).append(m)
        for oracle in args.oracles[1:]:
            if by_oracle.get(oracle):
                judge(oracle, by_oracle[oracle], ctx=dict(
                    args=args, work=work, tree=tree, root=root, logdir=logdir,
                    make_vars=make_vars,
                    suites=suites, base_run=base_run, state=state, save_state=save_state,
                    ledger=ledger, cache=cache, keys=keys, texts=texts, phase=phase,
                    warnings=warnings, cc=cc, kill_map=kill_map,
                    compiles=ctx["compiles"]))
    # 6c. Held back for an oracle that did not kill it: the plain build
    # judges it after all.
    late = [(m, m.covered_by) for m, _ in held if m.status == SURVIVED]
    if late:
        runner.numbers = {}
        for m, _ in late:
            m.tried, m.kind = [], ""
        with open(os.path.join(logdir, "times.tsv"), "a") as times:
            def judged_late(m):
                record(m, "plain")
                cache.put(keys[m.id], m)
                times.write(time_line(m))
                times.flush()
            try:
                runner.run_all(late, judged_late)
            finally:
                cache.save()
                shutil.rmtree(os.path.join(work, "work"), ignore_errors=True)
        phase("mutant runs (plain, after the oracles)")
    # 6d. Coverage put off (6): a survivor of every oracle may be one no
    # suite reaches.
    if deferred and any(m.status == SURVIVED for m in mutants):
        coverage_of([m for m in mutants if m.status == SURVIVED])
    for m in mutants:
        if m.status == SURVIVED:
            m.status_reason = survivor_reason(m, args.oracles)

    # 7. The ledger: a listed survivor is equivalent, with its reason.
    for m in mutants:
        if m.id in ledger and m.status in (SURVIVED, NO_COVERAGE):
            m.status, m.equivalent = IGNORED, True
            m.status_reason = report.LEDGER + ledger[m.id]

    whole = not (args.only or args.shard or args.changed_since)
    ran_ids = {m.id for m in mutants}
    for mid in sorted(ledger):
        generated_id = ":" in mid
        if whole and mid not in ran_ids and (
                (generated_id and not args.curated_only) or
                (not generated_id and not args.generated_only)):
            print(f"mutants: {cfg.ledger} lists {mid}, which is no mutant now",
                  file=sys.stderr)

    # 8. Reports.
    counts = report.counts(mutants)
    bad = report.failures(mutants)
    lines = report.results_lines(mutants, stale)
    if args.results:
        os.makedirs(os.path.dirname(os.path.abspath(args.results)), exist_ok=True)
        with open(args.results, "a") as f:
            f.write("".join(l + "\n" for l in lines))
    rep = report.to_json(mutants, texts, suites, root)
    report.write_json(os.path.join(out_dir, "report.json"), rep)
    # this run's kills, for the tree's kill map (make mutants-kills)
    kills.write(os.path.join(out_dir, "kills.tsv"),
                kills.of(mutants, runner_mod.program_re(), runner_mod.case_re()))
    js = find_elements(root, build, args.elements)
    if args.html == "yes" and not js:
        print("mutants: no mutation-test-elements.js for report.html (make mutants-npm)",
              file=sys.stderr)
        bad.append(("report.html", "mutation-testing-elements is not installed"))
    if js and args.html != "no":
        report.write_html(os.path.join(out_dir, "report.html"), rep, js)

    for mid, why in bad:
        print(f"mutants: FAIL {mid}: {why}", file=sys.stderr)
    for w in warnings:
        print(f"mutants: WARNING: {w}", file=sys.stderr)
    if counts["duplicate"] or counts["compile_error"]:
        print(f"mutants: not counted: {counts['duplicate']} duplicates, "
              f"{counts['compile_error']} that do not compile")
    elapsed = time.monotonic() - started
    names = {"mutants and equivalence": "TCE"}
    print("mutants: phases: " + ", ".join(f"{names.get(k, k)} {v:.1f} s"
                                          for k, v in phases.items()), file=sys.stderr)
    ran = len(todo)
    print(f"mutants: time {elapsed:.1f} s in all, {run_seconds:.1f} s for {ran} run "
          f"({ran / run_seconds * 60 if run_seconds > 0 else 0:.0f} mutants a minute), "
          f"unmutated build and suites {unmutated:.1f} s")
    if args.naive_sample and todo:
        # A naive driver runs every mutant that builds: no pruning, no
        # coverage, no cache, a full build and every suite each time.
        step = max(1, len(todo) // args.naive_sample)
        sample = [m for m, _ in todo][::step][:args.naive_sample]
        times = runner.naive(sample, suites)
        naive = sum(times) / len(times)
        print(f"mutants: the naive sample took {sum(times):.1f} s, past the run's time above",
              file=sys.stderr)
        median = sorted(times)[len(times) // 2]
        every = sum(1 for m in mutants if m.status != COMPILE_ERROR)
        wall_naive = naive * every / max(1, args.jobs)
        # a sampled mutant that hangs costs the naive driver its whole
        # limit: the median tells what the ratio rests on without it
        print(f"mutants: naive driver: {', '.join(f'{t:.1f}' for t in times)} s "
              f"(sample of {len(sample)}), {naive:.2f} s a mutant; "
              f"{every} mutants on {args.jobs} jobs: {wall_naive:.0f} s against "
              f"{elapsed:.0f} s for this run, {wall_naive / max(elapsed, 1e-9):.1f}x "
              f"({median * every / max(1, args.jobs) / max(elapsed, 1e-9):.1f}x at the "
              f"median sample, {median:.1f} s)"
              + (f" ({cached} results from the cache: --no-cache for a fair figure)"
                 if (cached := sum(m.cached for m in mutants)) else ""))
    hangs = hang.summary_line(mutants)
    if hangs:
        print(hangs)
    print(f"mutants: report {os.path.join(out_dir, 'report.json')}")
    print(report.score_line(counts))
    print(report.closing_line(counts))
    return 1 if bad or stale else 0
