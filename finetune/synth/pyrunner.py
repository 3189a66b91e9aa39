"""frognano's mutant runner for pytest: one interpreter for a whole batch of mutants.

Run as `python pyrunner.py SPEC` at the top of a copy, in the sandbox. SPEC (JSON) lists
runs: {"id", "file", "variant", "original", "args", "timeout", "out", "err", "rc"}. The
runner first collects the tests once (importing pytest, its plugins and whatever the tests
import), then forgets every module loaded from the copy and, for each run, lays the
mutant's version of its file (variant) over the file, forks, and in the child runs pytest
with args (its JUnit XML to out, its talk to err): the child imports the repository's
modules afresh, so each mutant's code is exactly what its patch makes, while the start of
Python, pytest and the third-party packages is paid once. A run that passes its timeout
is interrupted as pytest is by Ctrl-C (it still writes its report) and its rc is 124.

The clean run (the first, id 0) is profiled: which tests call which function of the copy
(by file and name; calls made while collecting count for every test). A mutant's run with
"func" then runs only the tests that call its function ("opts" and their node ids, its
timeout from their clean times in "seconds"); when none does, the run is skipped (no test
can see the change) and reports no test.
"""
import json
import os
import shutil
import signal
import sys
import time


def purge(root):
    for name, mod in list(sys.modules.items()):
        f = getattr(mod, "__file__", None) or ""
        if f and os.path.realpath(f).startswith(root + os.sep):
            del sys.modules[name]
    sys.path_importer_cache.clear()
    import importlib
    importlib.invalidate_caches()


class Tracker:
    """Records, during the clean run, the tests that call each function of the copy."""

    def __init__(self, root):
        self.root = root + os.sep
        self.current = "<collect>"
        self.calls = {}

    def profile(self, frame, event, arg):
        if event != "call":
            return
        code = frame.f_code
        fn = code.co_filename
        if fn.startswith(self.root):
            key = os.path.relpath(fn, self.root) + ":" + code.co_name
            self.calls.setdefault(key, set()).add(self.current)

    def pytest_runtest_logstart(self, nodeid, location):
        self.current = nodeid

    def pytest_runtest_logfinish(self, nodeid, location):
        self.current = "<between>"


def child(run, root):
    purge(root)
    os.environ["FROGNANO_MUTANT"] = str(run["id"])
    err = os.open(run["err"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(err, 1)
    os.dup2(err, 2)
    fired = []

    def alarm(*_):
        fired.append(1)
        raise KeyboardInterrupt

    signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, run["timeout"])
    import pytest
    tracker = None
    plugins = []
    if run.get("profile"):
        tracker = Tracker(root)
        plugins.append(tracker)
        sys.setprofile(tracker.profile)
        import threading
        threading.setprofile(tracker.profile)  # calls in the tests' threads count too
    try:
        rc = int(pytest.main(run["args"] + ["--junitxml=" + run["out"]], plugins=plugins))
    except BaseException:
        rc = 3
    sys.setprofile(None)
    if tracker is not None:
        import threading
        threading.setprofile(None)
    signal.setitimer(signal.ITIMER_REAL, 0)
    if tracker is not None:
        with open(run["profile"], "w") as f:
            json.dump({k: sorted(v) for k, v in tracker.calls.items()}, f)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(124 if fired else rc)


def main():
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    root = os.path.realpath(os.getcwd())
    import pytest
    devnull = os.open(os.devnull, os.O_WRONLY)
    saved = os.dup(1), os.dup(2)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    try:
        pytest.main(spec["collect"])
    except BaseException:
        pass
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(saved[0], 1)
    os.dup2(saved[1], 2)
    purge(root)
    calls = None
    for run in spec["runs"]:
        if run.get("func") and calls is not None:
            tests = calls.get(run["func"], [])
            if "<collect>" not in tests and "<between>" not in tests:
                if not tests:
                    with open(run["rc"], "w") as f:
                        f.write("5\n")  # pytest's "no tests": nothing calls the function
                    continue
                run = dict(run, args=run["opts"] + tests,
                           timeout=10 * sum(spec.get("seconds", {}).get(t, 1) for t in tests) + 10)
        if run.get("variant"):
            shutil.copyfile(run["variant"], run["file"])
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            child(run, root)
        deadline = time.monotonic() + run["timeout"] + 10
        status = None
        while status is None:
            done, st = os.waitpid(pid, os.WNOHANG)
            if done:
                status = os.waitstatus_to_exitcode(st)
            elif time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                status = 137
            else:
                time.sleep(0.005)
        with open(run["rc"], "w") as f:
            f.write(str(status) + "\n")
        if run.get("profile"):
            try:
                with open(run["profile"]) as f:
                    calls = json.load(f)
            except (OSError, ValueError):
                calls = None  # no profile: every mutant runs its files' tests
        if run.get("variant"):
            shutil.copyfile(run["original"], run["file"])


main()
