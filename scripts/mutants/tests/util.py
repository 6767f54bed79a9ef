"""What the driver's tests share: a copy of the fixture project, running the
driver on it, and a digest of a source tree."""
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.dirname(os.path.dirname(HERE))
DRIVER = os.path.join(SCRIPTS, "region_cache_mutants.py")
FIXTURE = os.path.join(HERE, "fixture")
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable


def configure_fixture():
    """Makes the fixture's configuration (shaped as refrt's own: its hints,
    its kinds of kill, TSan for faults of concurrency) the one the driver's
    modules read, for tests that call them in this process."""
    from mutants import config, project
    project.configure(config.load(os.path.join(FIXTURE, "mutants", "driver.toml")))


def fixture_copy(test):
    """A fresh copy of the fixture project, removed when the test ends."""
    tmp = tempfile.mkdtemp(prefix="refrt-mutants-test-")
    test.addCleanup(shutil.rmtree, tmp, True)
    root = os.path.join(tmp, "tree")
    shutil.copytree(FIXTURE, root)
    return root


def driver_cmd(root, *args):
    return [PYTHON, DRIVER, "--root", root, "--jobs", "2", "--html", "no"] + list(args)


def run_driver(root, *args, timeout=120):
    env = dict(os.environ)
    for k in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL"):
        env.pop(k, None)
    return subprocess.run(driver_cmd(root, *args), capture_output=True, text=True,
                          timeout=timeout, env=env)


def tree_digest(root):
    """sha256 over every path, mode and byte of the tree but build/."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        if os.path.relpath(dirpath, root) == ".":
            dirnames[:] = [d for d in dirnames if d != "build"]
        dirnames.sort()
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            h.update(os.path.relpath(path, root).encode() + b"\0" + str(st.st_mode).encode())
            with open(path, "rb") as f:
                h.update(f.read())
    return h.hexdigest()


def processes_under(root):
    """Pids of live processes whose command line or cwd names root."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(f"/proc/{pid}/cwd")
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and (root in cmd or cwd.startswith(root)):
            found.append(int(pid))
    return found
