"""The reports: the JSON validates against the schema in the npm package
mutation-testing-report-schema, and the standalone HTML renders its
mutants in headless Chromium."""
import html
import json
import os
import posixpath
import shutil
import subprocess
import tempfile
import unittest

from mutants.tests import util

NPM = os.environ.get("MUTANTS_NPM") or os.path.join(os.path.dirname(util.SCRIPTS), "build", "npm")
MODULES = os.path.join(NPM, "node_modules")
ELEMENTS = os.path.join(MODULES, "mutation-testing-elements", "dist", "mutation-test-elements.js")
CHROMIUM = shutil.which("chromium")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--no-first-run"]

# Added to a copy of the report page: once the app has rendered, it lists
# every mutant marker (data-mutant-id) found through the shadow roots.
PROBE = """<script>
(function () {
  function ids(root, out) {
    root.querySelectorAll('*').forEach(function (e) {
      if (e.hasAttribute('data-mutant-id')) out.push(e.getAttribute('data-mutant-id'));
      if (e.shadowRoot) ids(e.shadowRoot, out);
    });
    return out;
  }
  var tries = 0;
  function look() {
    var found = ids(document, []);
    if (found.length || ++tries > 100) {
      var pre = document.createElement('pre');
      pre.id = 'probe';
      pre.textContent = 'PROBE' + JSON.stringify(found) + 'EBORP';
      document.body.appendChild(pre);
    } else {
      setTimeout(look, 100);
    }
  }
  setTimeout(look, 100);
})();
</script>
"""


@unittest.skipUnless(os.path.exists(ELEMENTS), f"no {ELEMENTS} (make mutants-npm)")
class ReportTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="refrt-mutants-report-")
        cls.root = os.path.join(cls.tmp, "tree")
        shutil.copytree(util.FIXTURE, cls.root)
        cls.out = os.path.join(cls.root, "build", "report")
        cmd = util.driver_cmd(cls.root, "--only", "clamp_*", "--only", "calc.c:twice:*",
                              "--only", "calc.c:clamp:*", "--report", cls.out,
                              "--elements", ELEMENTS)
        cmd[cmd.index("--html") + 1] = "yes"
        cls.proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        with open(os.path.join(cls.out, "report.json")) as f:
            cls.report = json.load(f)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, True)

    def validate(self, path):
        p = subprocess.run(["node", os.path.join(util.HERE, "validate_report.cjs"), MODULES, path],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_the_json_report_validates_against_the_schema(self):
        self.validate(os.path.join(self.out, "report.json"))
        [(path, f)] = self.report["files"].items()
        self.assertEqual(path, "reference/src/calc.c")
        statuses = {m["id"]: m["status"] for m in f["mutants"]}
        self.assertEqual(statuses["clamp_gone"], "Killed")
        self.assertEqual(statuses["clamp_from_ten"], "Survived")
        self.assertIn("Ignored", statuses.values())       # a duplicate among clamp's
        # the oracle a kill is put down to is a test of the "oracles" file
        killed = next(m for m in f["mutants"] if m["id"] == "clamp_gone")
        self.assertEqual(killed["killedBy"], ["check-calc", "oracle:functional"])
        self.assertIn("oracle:functional",
                      [t["id"] for t in self.report["testFiles"]["oracles"]["tests"]])

    def test_a_report_that_breaks_the_schema_is_refused(self):
        bad = json.loads(json.dumps(self.report))
        next(iter(bad["files"].values()))["mutants"][0]["status"] = "Dead"
        path = os.path.join(self.tmp, "bad.json")
        with open(path, "w") as f:
            json.dump(bad, f)
        p = subprocess.run(["node", os.path.join(util.HERE, "validate_report.cjs"), MODULES, path],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 1, p.stdout)

    def test_the_html_report_renders_its_mutants(self):
        # scripts/deps installs it (scripts/packages.d/mutants): never skipped
        self.assertTrue(CHROMIUM, "no chromium: run scripts/deps (Debian package chromium)")
        with open(os.path.join(self.out, "report.html")) as f:
            page = f.read()
        self.assertNotIn('src="', page.split("<body>")[0])   # nothing loaded from elsewhere
        probed = os.path.join(self.tmp, "probed.html")
        with open(probed, "w") as f:
            f.write(page.replace("</body>", PROBE + "</body>"))
        # the app names a file by its path under the files' common folder
        paths = list(self.report["files"])
        common = posixpath.dirname(paths[0]) if len(paths) == 1 else posixpath.commonpath(paths)
        route = posixpath.relpath(paths[0], common) if common else paths[0]
        p = subprocess.run([CHROMIUM] + CHROMIUM_FLAGS + [
            "--virtual-time-budget=15000", "--dump-dom", f"file://{probed}#mutant/{route}"],
            capture_output=True, text=True, timeout=120)
        marker = '<pre id="probe">PROBE'
        self.assertIn(marker, p.stdout, p.stderr[-2000:])
        rendered = set(json.loads(html.unescape(
            p.stdout.split(marker, 1)[1].split("EBORP", 1)[0])))
        wanted = {m["id"] for m in self.report["files"][paths[0]]["mutants"]}
        self.assertTrue(wanted, "the report has no mutant")
        self.assertEqual(wanted - rendered, set())


if __name__ == "__main__":
    unittest.main()
