"""A tree as the driver sees it: its configuration file (TOML, tomllib).

Everything the driver knows of a tree comes from here: which sources it
mutates and with which include folders, the command that builds them and
the variable that names the build folder, how a schema's mutant is picked,
the suites as commands and how each reports pass or fail, the coverage
build, the oracles (variants of the build) that judge a survivor, the
targets of trivial compiler equivalence, the catalog and the ledger.
docs/mutants.md, "Configuration", lists every key.

What a tree does not give turns a feature off: the driver says which and
why in one line (`mutants: <feature> off: <why>`, Config.off) and still
works, each mutant built alone and cached by content.

Strings may name values in braces, filled in where they are used:
{build} (the build folder, relative to the copy of the tree), {suite},
{jobs}, {cc} (the compiler's name), {dump_on_signal} (in the coverage
build's variables: the object that writes a dying test's counters), and
any make variable ({IMPL_SRC}). `${...}` is left to the shell."""
import glob
import hashlib
import json
import os
import re
import shlex
import tomllib

FILE = os.path.join("mutants", "driver.toml")     # where a tree keeps its own

EXIT = "exit"           # a suite passes when its command exits 0
RESULTS = "results"     # a suite's results (pass/fail lines) must equal the unmutated run's

KEYS = {
    "": {"name", "root", "work", "make_vars", "tree", "sources", "build", "suites",
         "coverage", "oracles", "tce", "catalog", "kill_kinds"},
    "tree": {"skip", "not_inputs"},
    "sources": {"mutate", "include", "test_only"},
    "sources.test_only": {"define", "statements"},
    "build": {"command", "dir_var", "parallel", "vars", "lenient", "mutant_env",
              "configurations"},
    "suites": {"names", "list", "run", "passes", "results", "reports", "hints", "runs",
               "direct", "programs"},
    "suites.hints": {"fail_fast", "case_timeout", "case_timeouts", "first_programs",
                     "first_cases", "run_case",
                     "program", "expected", "only_programs", "only_cases"},
    "coverage": {"make_vars", "cc"},
    "tce": {"targets", "flags"},
    "catalog": {"files", "ledger", "kills"},
}
ORACLE_KEYS = {"make_vars", "concurrency", "suites"}
KIND_KEYS = {"pattern", "about"}

_PLACE = re.compile(r"(?<!\$)\{(\w+)\}")


class ConfigError(Exception):
    """A configuration the driver cannot use; the message names the file."""


def expand(text, values):
    """text with each {name} that values knows replaced; the rest as is."""
    return _PLACE.sub(lambda m: str(values[m.group(1)]) if m.group(1) in values
                      else m.group(0), text)


def _words(value, where):
    if isinstance(value, str):
        return shlex.split(value)
    if isinstance(value, list) and all(isinstance(w, str) for w in value):
        return list(value)
    raise ConfigError(f"{where}: a command is a string or a list of strings")


class Config:
    """The settings of one tree. Build with load(); default() is a tree
    that names nothing but its sources and build (the driver's tests)."""

    def __init__(self, data, path=None, root=None):
        self.path = os.path.abspath(path) if path else None
        self.data = data
        self._check(data)
        here = os.path.dirname(self.path) if self.path else os.getcwd()
        self.root = os.path.abspath(root or os.path.join(here, data.get("root", ".")))
        self.name = data.get("name") or os.path.basename(self.root)
        self.work = data.get("work")              # relative to root; None: outside it
        self.make_vars = {k: str(v) for k, v in data.get("make_vars", {}).items()}

        tree = data.get("tree", {})
        self.skip = tuple(tree.get("skip", [".git"]))
        self.not_inputs = tuple(tree.get("not_inputs", []))

        src = data.get("sources", {})
        self.mutate = list(src.get("mutate", []))
        self.include = list(src.get("include", []))
        only = src.get("test_only", {})
        self.test_define = only.get("define")
        self.test_statements = tuple(only.get("statements", []))

        b = data.get("build", {})
        self.build_command = _words(b.get("command", "make"), "build.command")
        self.dir_var = b.get("dir_var")
        self.parallel = b.get("parallel", "")
        self.vars_as = b.get("vars", "args")
        if self.vars_as not in ("args", "env"):
            raise ConfigError(f"{self.where}: build.vars is \"args\" or \"env\"")
        self.lenient = {k: str(v) for k, v in b.get("lenient", {}).items()}
        self.mutant_env = b.get("mutant_env")
        # the preprocessor configurations the suites compile the sources
        # in (flags each): a schema is shown to be the original in each
        confs = b.get("configurations", [[]])
        if not isinstance(confs, list) or not all(
                isinstance(c, list) and all(isinstance(f, str) for f in c) for c in confs):
            raise ConfigError(f"{self.where}: build.configurations is a list of lists of flags")
        self.configurations = [list(c) for c in confs] or [[]]

        s = data.get("suites", {})
        self.suite_names = list(s.get("names", []))
        self.suite_list = _words(s["list"], "suites.list") if "list" in s else None
        self.suite_run = _words(s.get("run", "make {suite}"), "suites.run")
        self.passes = s.get("passes", EXIT)
        if self.passes not in (EXIT, RESULTS):
            raise ConfigError(f"{self.where}: suites.passes is \"{EXIT}\" or \"{RESULTS}\"")
        self.results = s.get("results")
        self.reports = s.get("reports")
        self.runs = int(s.get("runs", 1))
        # builds the programs of the suites {suites} names (space-separated),
        # running none: then the unmutated run runs its suites side by side
        # and a schema's copies hold every program built (project.baseline)
        self.programs = (_words(s["programs"], "suites.programs")
                         if "programs" in s else None)
        self.hints = dict(s.get("hints", {}))
        # {suite: (argv words, {variable: value})}: how one program of the
        # suite runs with no make, for a first try in a schema's copy
        self.direct = {}
        for suite, d in s.get("direct", {}).items():
            if not isinstance(d, dict) or "run" not in d:
                raise ConfigError(f"{self.where}: suites.direct.{suite} needs run "
                                  f"(and may give env)")
            self.direct[suite] = (_words(d["run"], f"suites.direct.{suite}.run"),
                                  {k: str(v) for k, v in d.get("env", {}).items()})
        if self.passes == RESULTS and not self.results:
            raise ConfigError(f"{self.where}: suites.passes = \"results\" needs suites.results "
                              f"(the folder of the pass/fail lines to compare)")

        cov = data.get("coverage")
        self.coverage_vars = ({k: str(v) for k, v in cov.get("make_vars", {}).items()}
                              if cov is not None else None)
        self.coverage_cc = (cov or {}).get("cc", "gcc")

        self.oracles = {}
        for name, o in data.get("oracles", {}).items():
            if name == "plain":
                raise ConfigError(f"{self.where}: oracles.plain: the plain build is the "
                                  f"build itself, not a variant")
            if not isinstance(o, dict) or set(o) - ORACLE_KEYS or "make_vars" not in o:
                raise ConfigError(f"{self.where}: oracles.{name}: a table with make_vars "
                                  f"(and concurrency)")
            own = o.get("suites", [])
            if not isinstance(own, list) or not all(isinstance(x, str) and x for x in own):
                raise ConfigError(f"{self.where}: oracles.{name}.suites: a list of suite names")
            # suites: what this oracle runs instead of the suites that reach
            # a survivor; for a suite the coverage build cannot see (a cross
            # build run under an emulator), which reaches every source it builds
            self.oracles[name] = {"make_vars": {k: str(v) for k, v in o["make_vars"].items()},
                                  "concurrency": bool(o.get("concurrency", False)),
                                  "suites": list(own)}

        t = data.get("tce", {})
        self.tce_targets = tuple(tuple(x) for x in t.get("targets", []))
        self.tce_flags = list(t.get("flags", ["-O2"]))

        c = data.get("catalog", {})
        self.catalog = list(c.get("files", []))
        self.ledger = c.get("ledger")
        # the kill map (kills.py): what to try first, never a verdict
        self.kills = c.get("kills")

        self.kill_kinds = {}
        for kind, k in data.get("kill_kinds", {}).items():
            if not isinstance(k, dict) or set(k) - KIND_KEYS or "pattern" not in k:
                raise ConfigError(f"{self.where}: kill_kinds.{kind}: a table with pattern "
                                  f"(and about)")
            self.kill_kinds[kind] = (re.compile(k["pattern"]), k.get("about", kind))

    @property
    def where(self):
        return self.path or "the configuration"

    def _check(self, data):
        def walk(table, prefix):
            allowed = KEYS.get(prefix)
            if allowed is None:
                return
            for k, v in table.items():
                if k not in allowed:
                    raise ConfigError(f"{self.where}: unknown key "
                                      f"{(prefix + '.' if prefix else '') + k}")
                if isinstance(v, dict):
                    walk(v, (prefix + "." if prefix else "") + k)
        walk(data, "")

    # ---- what the tree leaves off ------------------------------------------

    def off(self, curated_only=False):
        """[(feature, why)]: what this tree's configuration turns off."""
        out = []
        if not self.mutate and not curated_only:
            out.append(("generated mutants", "the configuration names no source to mutate "
                        "(sources.mutate)"))
        if not self.mutant_env:
            out.append(("schemata", "the configuration names no variable that picks a "
                        "schema's mutant (build.mutant_env): each mutant is built alone"))
        if self.coverage_vars is None:
            out.append(("coverage", "the configuration names no coverage build ([coverage]): "
                        "every suite is run on every mutant, and none is called NoCoverage"))
        if not self.oracles:
            out.append(("oracles", "the configuration names no variant of the build "
                        "([oracles]): the plain build alone judges"))
        if len(self.tce_targets) < 2 and not curated_only:
            out.append(("TCE on a second target", "the configuration names no other "
                        "target ([tce] targets): equivalence judged on the build's "
                        "compiler alone"))
        if not self.catalog:
            out.append(("catalog", "the configuration names no catalog (catalog.files): "
                        "generated mutants only"))
        if not self.ledger:
            out.append(("ledger", "the configuration names no ledger of equivalent "
                        "mutants (catalog.ledger)"))
        if not self.dir_var:
            out.append(("build folder", "the configuration names no variable for the build "
                        "folder (build.dir_var): each build happens in its own copy of the "
                        "tree, in place"))
        return out

    # ---- commands ---------------------------------------------------------

    def values(self, build, make_vars, **more):
        v = dict(make_vars)
        v.update(build=build, **more)
        return v

    def command(self, words, build, make_vars, jobs=1, **more):
        """(argv, extra environment) of a command of the config: its words
        filled in, then the build folder's variable, -jN and the make
        variables as VAR=value (or in the environment, build.vars = "env")."""
        values = self.values(build, make_vars, jobs=jobs, **more)
        argv = [expand(w, values) for w in words]
        extra = {}
        pairs = ([(self.dir_var, build)] if self.dir_var else []) + list(make_vars.items())
        if self.vars_as == "env":
            extra = {k: v for k, v in pairs}
        else:
            argv += [f"{k}={v}" for k, v in pairs]
        if jobs > 1 and self.parallel:
            argv += [expand(w, values) for w in shlex.split(self.parallel)]
        return argv, extra

    def path_in(self, template, build, make_vars):
        """A path of the config (suites.results, suites.reports), relative
        to the copy of the tree."""
        return expand(template, self.values(build, make_vars)) if template else None

    # ---- sources ------------------------------------------------------------

    def sources(self, texts, make_vars):
        """The paths among texts that sources.mutate names, sorted."""
        pats = [expand(p, make_vars) for p in self.mutate]
        return sorted(p for p in texts if any(_glob_match(p, pat) for pat in pats))

    def include_dirs(self, make_vars):
        return [expand(d, make_vars) for d in self.include]

    def catalog_files(self, tree, make_vars):
        out = []
        for pat in self.catalog:
            out += sorted(glob.glob(os.path.join(tree, expand(pat, make_vars))))
        return out

    def digest(self):
        """What of the configuration changes a verdict (all but names and
        places): part of every mutant's cache key."""
        data = {k: v for k, v in self.data.items() if k not in ("name", "root", "work")}
        return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


def _glob_match(path, pattern):
    """Whether path matches a glob pattern whose * does not cross a /."""
    rx = "".join("[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c)
                 for c in pattern)
    return re.fullmatch(rx, path) is not None


def load(path, root=None):
    """The configuration in path (TOML)."""
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as e:
        raise ConfigError(f"{path}: {e.strerror}") from e
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: {e}") from e
    return Config(data, path, root)


def find(root):
    """The tree's own configuration (ROOT/mutants/driver.toml), or None."""
    path = os.path.join(root, FILE)
    return path if os.path.exists(path) else None


def default():
    """A configuration that names nothing: make and its exit status."""
    return Config({})
