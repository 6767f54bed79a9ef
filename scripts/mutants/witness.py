"""Witness runs: a survivor of the plain build that an oracle killed last
time (the kill map) meets that oracle's killing test first, alone.

An oracle's build is slow to test: its unmutated run of every suite that
reaches the survivors took 155 s under ASan and 127 s under TSan in the
curated run of 2 Dec 2026, for 3 mutants each, which one test case apiece
then killed. So before that run, each such mutant is tried with only what
killed it: the suite the kill map names, and in it only the programs and
cases it names (suites.hints.only_programs, only_cases). That part of the
suite runs unmutated first, on the same build, and must pass, with each
named case among its passes; then the mutant runs it. A mutant that
fails it is killed there, by a test the unmutated tree passes on the same
build, which is all a kill is. One that passes it, or whose witness did
not hold unmutated (a case renamed, a program gone), goes on to the whole
judgement: every suite that reaches it, after their unmutated run.

The map still gives no verdict: it chooses what runs first, and a stale
entry costs one small run."""
import time

from . import project


def by_suite(mutants, oracle, kill_map):
    """{suite: [mutants]}: the mutants this oracle killed last time, by the
    suite that killed them, when that suite still reaches them."""
    out = {}
    for m in mutants:
        k = kill_map.get(m.id)
        if k and k.oracle == oracle and k.suite in m.covered_by:
            out.setdefault(k.suite, []).append(m)
    return out


def restriction(mutants, kill_map):
    """(programs, cases): what a witness run of these mutants' suite runs,
    the union of what killed each; a kill that named no program (or no
    case) leaves that list empty: every program (case) runs."""
    ks = [kill_map[m.id] for m in mutants]
    programs = sorted({k.program for k in ks}) if all(k.program for k in ks) else []
    cases = sorted({k.case for k in ks}) if all(k.case for k in ks) else []
    return programs, cases


def hints(programs, cases):
    """The hints of a witness run ({} where the configuration names none:
    the whole suite is the witness)."""
    return project.hints(only_programs=" ".join(programs) or None,
                         only_cases=" ".join(cases) or None)


def held(status, results, cases):
    """Whether an unmutated witness run ran what it was for: it passed, it
    wrote at least one result line and no failure (a restriction that
    named nothing the suite has runs nothing), and each case named passed
    (results: project.result_set's {"<file>:<test>": passed}). A case
    names a test, or a program whose tests are named "<program>:<check>"
    (a conformance program, as its runner reads RT_ONLY_CASES): then one
    of them ran."""
    if status != 0 or not results or not all(results.values()):
        return False
    passed = {key.split(":", 1)[1] for key, ok in results.items() if ok}
    programs = {test.split(":", 1)[0] for test in passed if ":" in test}
    return all(c in passed or c in programs for c in cases)


def unmutated(tree, make_vars, witnesses, log, jobs=1, timeout=None, env=None):
    """Runs each witness unmutated in tree (built here first), with env
    (a schema's copy: the variable that picks none). witnesses:
    {suite: (programs, cases)}. Returns (build seconds or None when it
    does not build, {suite: seconds} of those that held, {suite: [noise
    lines]}): noise as project.baseline keeps it."""
    status, build_s = project.run_make(tree, project.BUILD_IN_COPY, make_vars,
                                       project.BUILD_STEP, log, jobs=jobs, timeout=timeout)
    if status != 0:
        return None, {}, {}
    times, noise = {}, {}
    for suite, (programs, cases) in witnesses.items():
        at, since = project.size_of(log), time.time()
        project.clear_results(tree)
        status, secs = project.run_make(tree, project.BUILD_IN_COPY, make_vars, suite, log,
                                        env=dict(env or {}, **hints(programs, cases)),
                                        jobs=jobs, timeout=timeout)
        if held(status, project.result_set(tree), cases):
            times[suite] = secs
            noise[suite] = project.noise_since(tree, log, at, since)
    return build_s, times, noise
