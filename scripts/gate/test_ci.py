#!/usr/bin/env python3
"""test_ci.py: the CI files say what docs/ci.md says they do.

Checks, one result line each in --results:
  - every .github/workflows/*.yml is valid YAML (python3-yaml's safe_load);
  - the workflow runs on push; its check job runs `ci/run check`; its
    mutant job's matrix is shards 1..SHARDS and each runs
    `ci/run shard <shard>/<SHARDS>`; its gate job needs the mutant job and
    runs `ci/run gate-merged` on the folder the shard reports are
    downloaded to;
  - every `run:` step is either ci/run with a subcommand ci/run knows, or
    the apt-get line checkout needs;
  - every make target ci/run calls exists in the Makefile (make -pq).
"""
import argparse
import os
import pathlib
import re
import subprocess
import sys

import results as results_file

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]


class Results:
    def __init__(self):
        self.lines = []

    def check(self, name, ok, why=""):
        self.lines.append(f"pass ci:{name}" if ok else f"fail ci:{name} {why}")
        return ok


def make_targets():
    p = subprocess.run(["make", "-C", str(ROOT), "-pq", "--no-print-directory", "-f", "Makefile"],
                       capture_output=True, text=True)
    return set(re.findall(r"^([A-Za-z0-9_.-]+):", p.stdout, re.M))


def steps(job):
    return [s for s in job.get("steps", []) if isinstance(s, dict)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", required=True)
    args = ap.parse_args()
    r = Results()

    ci_run = (ROOT / "ci" / "run").read_text(encoding="utf-8")
    subcommands = set(re.findall(r"^([a-z-]+)\)$", ci_run, re.M))
    r.check("ci_run_subcommands", {"check", "gate", "shard", "gate-merged"} <= subcommands,
            f"ci/run knows {sorted(subcommands)}")
    targets = make_targets()
    called = set(re.findall(r"make \$vars ([a-z-]+)", ci_run))
    r.check("ci_run_targets_exist", called and called <= targets,
            f"ci/run calls {sorted(called - targets)}, which the Makefile lacks")

    workflows = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
    r.check("workflow_present", bool(workflows), "no .github/workflows/*.yml")
    for wf in workflows:
        name = wf.name
        try:
            doc = yaml.safe_load(wf.read_text(encoding="utf-8"))
        except yaml.YAMLError as e:
            r.check(f"{name}:yaml", False, str(e).replace("\n", " "))
            continue
        r.check(f"{name}:yaml", isinstance(doc, dict))
        # YAML 1.1 reads the key "on" as true.
        on = doc.get("on", doc.get(True, {}))
        r.check(f"{name}:on_push", isinstance(on, dict) and "push" in on, f"on: {on!r}")
        jobs = doc.get("jobs", {})
        shards = int(doc.get("env", {}).get("SHARDS", 0))
        runs = {j: [s["run"] for s in steps(job) if "run" in s] for j, job in jobs.items()}
        for j, cmds in runs.items():
            for i, cmd in enumerate(cmds, 1):
                m = re.match(r"^ci/run ([a-z-]+)", cmd)
                ok = (m is not None and m.group(1) in subcommands) or cmd.startswith("apt-get ")
                r.check(f"{name}:{j}:run_{i}_known", ok, f"step runs {cmd!r}")
        r.check(f"{name}:check_job", "ci/run check" in runs.get("check", []),
                f"check job runs {runs.get('check')}")
        matrix = jobs.get("mutants", {}).get("strategy", {}).get("matrix", {}).get("shard")
        r.check(f"{name}:shards", shards > 0 and matrix == list(range(1, shards + 1)),
                f"SHARDS={shards}, matrix {matrix}")
        r.check(f"{name}:shard_step",
                "ci/run shard ${{ matrix.shard }}/${{ env.SHARDS }}" in runs.get("mutants", []),
                f"mutants job runs {runs.get('mutants')}")
        gate = jobs.get("gate", {})
        needs = gate.get("needs", [])
        needs = [needs] if isinstance(needs, str) else needs
        down = [s for s in steps(gate) if str(s.get("uses", "")).startswith("actions/download-artifact")]
        folder = down[0].get("with", {}).get("path") if down else None
        r.check(f"{name}:gate_job", "mutants" in needs and folder is not None and
                f"ci/run gate-merged {folder}" in runs.get("gate", []),
                f"needs {needs}, downloads to {folder}, runs {runs.get('gate')}")

    bad = results_file.write(args.results, r.lines)
    print(f"ci: {len(r.lines) - len(bad)} passed, {len(bad)} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit(main())
