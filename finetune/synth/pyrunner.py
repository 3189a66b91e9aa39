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
    try:
        rc = int(pytest.main(run["args"] + ["--junitxml=" + run["out"]]))
    except BaseException:
        rc = 3
    signal.setitimer(signal.ITIMER_REAL, 0)
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
    for run in spec["runs"]:
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
        if run.get("variant"):
            shutil.copyfile(run["original"], run["file"])


main()
