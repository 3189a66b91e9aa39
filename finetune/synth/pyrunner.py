"""frognano's mutant runner for pytest: one pytest session, one collection, for a whole batch.

Run as `python pyrunner.py SPEC` at the top of a copy, in the sandbox. SPEC (JSON) holds
"collect" (pytest's arguments: the test files, the deselected tests), "runs" (each {"id",
"file", "variant", "original", "func", "timeout", "result", "rc"}; the first, id 0, is the
clean tree), "seconds" (the clean times of the tests, by node id) and, from an earlier
batch on the same commit, "calls" (a profile file: which tests call which function);
"reimport": false turns the re-import off (only the tests' control does that).

The runner starts pytest once with a plugin of its own (Driver) that takes over the run
loop after collection: pytest, its plugins, the conftests, the test modules and the
repository's modules are loaded once. For each run it lays the mutant's version of its file
(variant) over the file, forks, and in the child re-imports the mutated module and every
module of the copy that imported it (directly or through others; their pytest nodes and
fixtures are pointed at the new objects), runs only the selected items through pytest's own
protocol, and reports each outcome over a pipe; then the file is put back. The re-import
reads the mutant's file, so inspect.getsource, doctest and tracebacks see exactly what its
patch makes (an exec switch would not). Where that cannot be made exact, the child runs
pytest afresh on the tests' files instead (a "fresh" run): when the mutated function ran
while pytest collected (parametrize values, marks), when a conftest or a doctest depends on
the module. The parent never runs a test, so every child starts from the same state.

Selection: the clean run is profiled (which tests call which function of the copy, by file
and name; calls made while collecting are "<collect>"), unless SPEC brings a profile. A
mutant's run then holds only the tests that call its function, its timeout from their clean
times; when none does it is not run (no test can see the change). The parent writes each
run's outcomes to "result" (JSON: node id -> status, seconds, output) and its status to
"rc" (124 when it passed its time: the test it was in is "hung"), and counts in
"<dir of SPEC>/stats.json" how the runs went.
"""
import builtins
import importlib
import importlib.util
import json
import linecache
import os
import select
import shutil
import signal
import sys
import time
import types

import pytest

ROOT = os.path.realpath(os.getcwd())


RUNNER = os.path.realpath(__file__)


def in_copy(path):
    """Whether path is the copy's (this file, which frognano lays in the copy, is not)."""
    if not path:
        return False
    real = os.path.realpath(path)
    return real.startswith(ROOT + os.sep) and real != RUNNER


def module_file(mod):
    return getattr(mod, "__file__", None) or ""


# --- what imports what ---------------------------------------------------------------

IMPORTS = {}  # importer's name -> names of the modules it imported


def _note(importer, target):
    if importer and target and importer != target:
        IMPORTS.setdefault(importer, set()).add(target)


_builtin_import = builtins.__import__


def _import(name, globals=None, locals=None, fromlist=(), level=0):
    mod = _builtin_import(name, globals, locals, fromlist, level)
    try:
        importer = (globals or {}).get("__name__")
        if importer:
            if level:
                target = importlib.util.resolve_name("." * level + name if name else "." * level,
                                                     globals.get("__package__") or importer)
            else:
                target = name
            subs = [target + "." + x for x in fromlist or () if x != "*"]
            if subs and all(sys.modules.get(n) is not None and getattr(sys.modules[target], n.rpartition(".")[2], None) is sys.modules[n]
                            for n in subs):
                # `from pkg import mod`: what the importer holds is the submodules only.
                for n in subs:
                    _note(importer, n)
            else:
                parts = target.split(".")
                for i in range(1, len(parts) + 1):
                    _note(importer, ".".join(parts[:i]))
                for n in subs:
                    if n in sys.modules:
                        _note(importer, n)
    except Exception:
        pass  # only bookkeeping: the import itself succeeded
    return mod


_import_module = importlib.import_module


def _import_module_noted(name, package=None):
    mod = _import_module(name, package)
    try:
        _note(sys._getframe(1).f_globals.get("__name__"), mod.__name__)
    except Exception:
        pass
    return mod


builtins.__import__ = _import
importlib.import_module = _import_module_noted


# --- code objects made once ------------------------------------------------------------
# Without byte code files (PYTHONDONTWRITEBYTECODE), every re-import in a child would
# compile its module (and pytest rewrite a test module's asserts) again; the parent keeps
# what it made, keyed by the file's path and bytes, so a child compiles only the mutant.

_compiled = {}


def _memo_source_to_code():
    from importlib import _bootstrap_external as be
    orig = be.SourceLoader.source_to_code

    def source_to_code(self, data, path, *args, **kwargs):
        if args or kwargs:
            return orig(self, data, path, *args, **kwargs)
        key = ("c", str(path), bytes(data))
        co = _compiled.get(key)
        if co is None:
            co = _compiled[key] = orig(self, data, path)
        return co
    be.SourceLoader.source_to_code = source_to_code


def _memo_rewrite():
    try:
        from _pytest.assertion import rewrite
    except ImportError:
        return
    orig = rewrite._rewrite_test

    def rewrite_test(fn, config):
        key = ("r", str(fn), fn.read_bytes())
        got = _compiled.get(key)
        if got is None:
            trace = sys.gettrace()  # the profile need not see pytest rewrite (most of collecting)
            sys.settrace(None)
            try:
                got = _compiled[key] = orig(fn, config)
            finally:
                sys.settrace(trace)
        return got
    rewrite._rewrite_test = rewrite_test


# --- the profile -----------------------------------------------------------------------

class Tracker:
    """Records the tests that call each function of the copy."""

    def __init__(self):
        self.root = ROOT + os.sep
        self.current = "<collect>"
        self.calls = {}
        self.keys = {}  # code object -> its key, None outside the copy

    def profile(self, frame, event, arg):
        # A global trace function: called for each new Python frame only (a profile
        # function would be called for C calls and returns too), and it traces nothing
        # inside the frame (it returns None).
        code = frame.f_code
        key = self.keys.get(code, 0)
        if key == 0:
            fn = code.co_filename
            key = None
            if fn.startswith(self.root) and os.path.realpath(fn) != RUNNER:
                key = os.path.relpath(fn, self.root) + ":" + code.co_name
            self.keys[code] = key
        if key is not None:
            self.calls.setdefault(key, set()).add(self.importing(frame) if self.current == "<collect>" else self.current)

    def importing(self, frame):
        """Who made a call while pytest collected: "<import>" and the module of the copy
        whose import made it (importing it again makes it again), else "<collect>"."""
        f = frame.f_back
        while f is not None:
            if f.f_code.co_name == "<module>" and f.f_code.co_filename.startswith(self.root):
                return "<import>" + str(f.f_globals.get("__name__"))
            f = f.f_back
        return "<collect>"

    def start(self):
        import threading
        sys.settrace(self.profile)
        threading.settrace(self.profile)  # calls in the tests' threads count too

    def stop(self):
        import threading
        sys.settrace(None)
        threading.settrace(None)


# --- the child's side ------------------------------------------------------------------

class Reporter:
    """Sends the child's test outcomes to the parent, a JSON line each."""

    def __init__(self, fd):
        self.fd = fd

    def send(self, msg):
        data = (json.dumps(msg) + "\n").encode()
        while data:
            data = data[os.write(self.fd, data):]

    def pytest_runtest_logstart(self, nodeid, location):
        self.send({"start": nodeid})

    def pytest_runtest_logreport(self, report):
        msg = {"id": report.nodeid, "when": report.when, "outcome": report.outcome,
               "xfail": hasattr(report, "wasxfail"), "seconds": getattr(report, "duration", 0.0)}
        if report.failed:
            try:
                msg["output"] = report.longreprtext[:4096]
            except Exception:
                msg["output"] = ""
        self.send(msg)


def copy_modules():
    return {n: m for n, m in list(sys.modules.items()) if m is not None and in_copy(module_file(m))}


def affected(mutated):
    """The names of the modules of the copy that must be imported again for the mutant of
    the file mutated: those loaded from it and their importers (see importers)."""
    mods = copy_modules()
    return importers({n for n, m in mods.items() if os.path.realpath(module_file(m)) == mutated}, mods)


def importers(names, mods):
    """names and every module of the copy that imported one of them (or holds a module or
    object of theirs), directly or through others."""
    out = set(names)
    todo = list(out)
    while todo:
        name = todo.pop()
        for other, mod in mods.items():
            if other in out:
                continue
            hit = name in IMPORTS.get(other, ())
            if not hit:
                try:
                    # (a package's attribute for its submodule is set again by the import)
                    hit = any((v is mods[name] and name.rpartition(".")[0] != other) or
                              (isinstance(v, (types.FunctionType, type)) and v.__module__ == name)
                              for v in list(vars(mod).values()))
                except Exception:
                    hit = True
            if hit:
                out.add(other)
                todo.append(other)
    return out


class Stale(Exception):
    """The child's pytest state cannot be pointed at the re-imported modules exactly."""


class Interrupted(Exception):
    """A test module fails to import with the mutant: pytest would run no test."""


def resolve(mod, qualname):
    obj = mod
    for part in qualname.split("."):
        if part == "<locals>":
            return None
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    wrapped = getattr(obj, "_get_wrapped_function", None)  # a @pytest.fixture definition
    if callable(wrapped):
        try:
            obj = wrapped()
        except Exception:
            pass
    return obj


def rebinder(names):
    """rebind(x) is x's counterpart in the re-imported modules of names (x itself when it
    is not a function, class or method of theirs)."""
    def rebind(x):
        if isinstance(x, types.MethodType):
            f = rebind(x.__func__)
            owner = x.__self__
            if isinstance(owner, type):
                owner = rebind(owner)
            elif type(owner).__module__ in names:
                cls = rebind(type(owner))
                owner = object.__new__(cls) if isinstance(cls, type) else owner
            return types.MethodType(f, owner) if f is not x.__func__ or owner is not x.__self__ else x
        if isinstance(x, (types.FunctionType, type)) and getattr(x, "__module__", None) in names:
            mod = sys.modules.get(x.__module__)
            new = resolve(mod, x.__qualname__) if mod is not None else None
            return new if new is not None else x
        return x
    return rebind


def reimport(session, items, mutated):
    """Imports again what the mutant of mutated changes and points the items' nodes and
    the fixtures at it. Raises Interrupted when a test module fails to import: a plain run
    then stops after collecting and runs no test."""
    import _pytest.python as py
    names = affected(mutated)
    if not names:
        return items
    plugins = {id(p) for p in session.config.pluginmanager.get_plugins()}
    if any(id(sys.modules[n]) in plugins for n in names):
        raise Stale("a conftest or plugin imports the module")
    for item in items:
        for node in item.listchain():
            if type(node).__name__ in ("DoctestModule", "DoctestItem", "DoctestTextfile") and \
                    in_copy(str(getattr(node, "path", ""))):
                mod = getattr(getattr(node, "dtest", None), "globs", {}).get("__name__")
                if mod is None or mod in names:
                    raise Stale("a doctest of the module")
    old = {n: sys.modules.pop(n) for n in names}
    linecache.clearcache()
    importlib.invalidate_caches()
    rebind = rebinder(names)
    # Every test module that imported the module, selected or not, in collection order:
    # pytest imports them all before it runs a test (and one that fails stops the run).
    modules = {}
    for item in session.items:
        node = item.getparent(py.Module)
        if node is not None and id(node) not in modules:
            obj = node.__dict__.get("_obj")
            if isinstance(obj, types.ModuleType) and obj.__name__ in names:
                node._obj = None
                modules[id(node)] = node
    for item in items:
        for node in item.listchain():
            if not isinstance(node, py.PyobjMixin):
                continue
            obj = node.__dict__.get("_obj")
            mod = obj.__name__ if isinstance(obj, types.ModuleType) else getattr(obj, "__module__", None)
            if isinstance(node, py.Function) or mod in names:
                node._obj = None
                node.__dict__.pop("_instance", None)
    for node in modules.values():
        try:
            node.obj
        except Exception as e:
            raise Interrupted(f"{node.nodeid}: {e!r}"[:500])
    for item in items:
        item.obj
        callspec = getattr(item, "callspec", None)
        if callspec is not None:  # parametrize values: made while collecting
            for k, v in list(callspec.params.items()):
                callspec.params[k] = rebind(v)
    for name, mod in list(sys.modules.items()):  # a package made again knows its submodules
        parent, _, child = name.rpartition(".")
        if parent in old and parent in sys.modules and not hasattr(sys.modules[parent], child):
            setattr(sys.modules[parent], child, mod)
    for fd in fixturedefs(session, items):
        fd.func = rebind(fd.func)
        for cell in getattr(fd.func, "__closure__", None) or ():  # xunit setup_* fixtures
            try:
                cell.cell_contents = rebind(cell.cell_contents)
            except ValueError:
                pass  # an empty cell
    return items


def fixturedefs(session, items):
    """Every fixture definition the items can reach, whichever way this pytest keeps them."""
    seen = {}

    def walk(x):
        if isinstance(x, dict):
            for v in x.values():
                walk(v)
        elif isinstance(x, (list, tuple)):
            for v in x:
                walk(v)
        elif hasattr(x, "func") and hasattr(x, "argname"):
            seen[id(x)] = x
    fm = session._fixturemanager
    for attr in ("_arg2fixturedefs", "_arg2node2fixturedefs", "_arg2nodeid2fixturedefs"):
        walk(getattr(fm, attr, None))
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        walk(getattr(info, "name2fixturedefs", None))
    return list(seen.values())


def run_items(session, items):
    for i, item in enumerate(items):
        nextitem = items[i + 1] if i + 1 < len(items) else None
        item.config.hook.pytest_runtest_protocol(item=item, nextitem=nextitem)
        if session.shouldfail or session.shouldstop:
            break


def child(driver, run, items, fresh, wfd, log):
    """The forked child of one run: never returns."""
    rc = 0
    try:
        os.setpgid(0, 0)  # the parent ends the child's whole group, strays included
        os.environ["FROGNANO_MUTANT"] = str(run["id"])
        reporter = Reporter(wfd)
        if fresh:
            for name, mod in list(sys.modules.items()):
                if mod is not None and in_copy(module_file(mod)):
                    del sys.modules[name]
            linecache.clearcache()
            importlib.invalidate_caches()
            rc = int(pytest.main(driver.opts + fresh, plugins=[reporter]))
        else:
            session = driver.session
            session.config.pluginmanager.register(reporter, "frognano-reporter")
            if run.get("variant") and driver.spec.get("reimport", True):
                items = reimport(session, items, os.path.realpath(run["file"]))
            if run.get("profile"):
                driver.tracker.start()
            run_items(session, items)
            if run.get("profile"):
                driver.tracker.stop()
                with open(run["profile"], "w") as f:
                    json.dump({k: sorted(v) for k, v in driver.tracker.calls.items()}, f)
    except Interrupted as e:
        try:
            Reporter(wfd).send({"interrupted": str(e)})
        except Exception:
            pass
        rc = 2  # pytest's "interrupted"
    except Stale as e:
        try:
            Reporter(wfd).send({"stale": str(e)})
        except Exception:
            pass
        rc = 75
    except BaseException:
        import traceback
        os.write(log, traceback.format_exc().encode())  # pytest's capture may hold fds 1 and 2
        rc = 3
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc)


def fork_run(driver, run, items, fresh):
    """Runs one run in a forked child and returns its rc and the outcomes by node id."""
    rfd, wfd = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        os.close(rfd)
        out = os.open(run["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(out, 1)
        os.dup2(out, 2)
        child(driver, run, items, fresh, wfd, out)
    os.close(wfd)
    try:
        os.setpgid(pid, pid)
    except OSError:
        pass  # the child did it first, or has ended
    deadline = time.monotonic() + run["timeout"]
    tests, state, buf, status, ended = {}, {"running": None, "stale": None, "interrupted": False}, [b""], None, None
    os.set_blocking(rfd, False)
    while True:
        eof = drain(rfd, buf, tests, state)
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            ended = st
            drain(rfd, buf, tests, state)  # what it wrote before it ended
            break
        if eof:
            time.sleep(0.001)  # the pipe closed: the child is ending
            continue
        left = deadline - time.monotonic()
        if left <= 0:
            status = 124
            break
        select.select([rfd], [], [], min(left, 0.2))
    try:
        os.killpg(pid, signal.SIGKILL)  # a timed-out child, and what the tests left running
    except OSError:
        pass
    if ended is None:
        _, ended = os.waitpid(pid, 0)
    os.close(rfd)
    if status is None:
        status = os.waitstatus_to_exitcode(ended)
    if status == 124 and state["running"] is not None:
        tests[state["running"]] = {"status": "hung", "seconds": 0.0}
    if state["interrupted"]:
        driver.stats["interrupted"] += 1
    return status, tests, state["stale"]


def drain(fd, buf, tests, state):
    """Reads what the child sent so far; true at the end of the pipe."""
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            return False
        if not chunk:
            return True
        *lines, buf[0] = (buf[0] + chunk).split(b"\n")
        for line in lines:
            msg = json.loads(line)
            if "stale" in msg:
                state["stale"] = msg["stale"]
            elif "interrupted" in msg:
                state["interrupted"] = True
            elif "start" in msg:
                state["running"] = msg["start"]
            else:
                note(tests, msg)
                if msg["when"] == "teardown":
                    state["running"] = None


def note(tests, msg):
    t = tests.setdefault(msg["id"], {"status": "pass", "seconds": 0.0})
    t["seconds"] += msg.get("seconds") or 0.0
    if msg["outcome"] == "failed":
        if t["status"] != "fail":
            t["status"], t["output"] = "fail", msg.get("output", "")
    elif msg["outcome"] == "skipped" and t["status"] == "pass":
        t["status"] = "skip"  # skipped, or an expected failure (as JUnit XML says)


class Driver:
    """The pytest plugin that runs the batch once collection is done."""

    def __init__(self, spec, spec_dir):
        self.spec = spec
        # The screen reads only whether a test passed: pytest's own traceback (which
        # re-reads and parses the test's file) would be most of a failing mutant's time.
        self.opts = spec["opts"] + ["--tb=native"]
        self.stats = {"forked": 0, "fresh": 0, "not_run": 0, "stale": {}, "timed_out": 0, "interrupted": 0,
                      "seconds": {}}
        self.stats_path = os.path.join(spec_dir, "stats.json")
        self.tracker = None
        self.calls = None
        if spec.get("calls"):
            try:
                with open(spec["calls"]) as f:
                    self.calls = json.load(f)
            except (OSError, ValueError):
                self.calls = None
        if self.calls is None:
            self.tracker = Tracker()
            self.tracker.start()  # calls while pytest starts and collects: "<collect>", "<import>..."
        self.session = None
        self.importing = {}  # module name -> node ids (tests_importing)
        self.test_modules = set()
        self.start = self.collected = time.monotonic()

    def pytest_collection_finish(self, session):
        if self.tracker is not None:
            self.tracker.stop()
        self.collected = time.monotonic()
        self.test_modules = {p.__name__ for p in session.config.pluginmanager.get_plugins()
                             if isinstance(p, types.ModuleType) and in_copy(module_file(p))}
        for item in session.items:
            mod = getattr(item, "module", None)
            if isinstance(mod, types.ModuleType):
                self.test_modules.add(mod.__name__)

    def tests_importing(self, name, items):
        """The node ids of the items whose test module imports the module name."""
        if name not in self.importing:
            mods = copy_modules()
            closure = importers({name}, mods) if name in mods else set()
            self.importing[name] = [it.nodeid for it in items
                                    if getattr(getattr(it, "module", None), "__name__", None) in closure]
        return self.importing[name]

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session):
        self.session = session
        if session.testsfailed and not session.config.option.continue_on_collection_errors:
            return None  # pytest reports the collection errors; nothing is run
        items = list(session.items)
        by_id = {it.nodeid: it for it in items}
        seconds = self.spec.get("seconds", {})
        for run in self.spec["runs"]:
            run = dict(run, log=run["rc"][:-3] + ".log")
            selected, fresh = items, None
            if run["id"] != 0 and self.calls is not None and run.get("func"):
                tests = self.calls.get(run["func"], [])
                imports = [t[len("<import>"):] for t in tests if t.startswith("<import>")]
                if "<collect>" in tests or any(m in self.test_modules for m in imports):
                    fresh = run["args"]  # collection itself ran the function
                elif "<between>" not in tests:
                    # A function the import of a module ran: the re-import runs the mutant
                    # there again; what it made there is the business of the tests of the
                    # test modules that import that module.
                    tests = [t for t in tests if not t.startswith("<import>")]
                    for m in imports:
                        tests += self.tests_importing(m, items)
                    if not tests:
                        self.stats["not_run"] += 1
                        write(run, 5, {})
                        continue
                    want = set(tests)
                    fixtures = {t[len("<fixture>"):] for t in tests if t.startswith("<fixture>")}
                    selected = [it for it in items if it.nodeid in want or fixtures.intersection(getattr(it, "fixturenames", ()))]
                    want = {it.nodeid for it in selected}
                    run["timeout"] = min(run["timeout"], 10 * sum(seconds.get(t, 1) for t in want if t in by_id) + 10)
            if run["id"] == 0 and self.tracker is not None:
                run["profile"] = run["rc"][:-3] + ".profile.json"
                self.tracker.current = "<between>"
            began = time.monotonic()
            if run.get("variant"):
                shutil.copyfile(run["variant"], run["file"])
            try:
                status, tests, stale = fork_run(self, run, selected, fresh)
                if stale is not None:
                    self.stats["stale"][stale] = self.stats["stale"].get(stale, 0) + 1
                    status, tests, _ = fork_run(self, run, selected, run["args"])
                    fresh = run["args"]
            finally:
                if run.get("variant"):
                    shutil.copyfile(run["original"], run["file"])
            kind = "clean" if run["id"] == 0 else "fresh" if fresh else "forked"
            self.stats["seconds"][kind] = self.stats["seconds"].get(kind, 0.0) + time.monotonic() - began
            self.stats["fresh" if fresh else "forked"] += 1
            self.stats["timed_out"] += status == 124
            write(run, status, tests)
            if run.get("profile"):
                try:
                    with open(run["profile"]) as f:
                        self.calls = json.load(f)
                except (OSError, ValueError):
                    self.calls = None  # no profile: every mutant runs every test
        self.stats["seconds"]["collect"] = self.collected - self.start
        with open(self.stats_path, "w") as f:
            json.dump(self.stats, f)
        return True

    @pytest.hookimpl(wrapper=True)
    def pytest_fixture_setup(self, fixturedef, request):
        # What a module-, class- or session-wide fixture calls counts for every test that
        # uses it, not only for the first, in whose setup it runs.
        if self.tracker is None or fixturedef.scope == "function":
            return (yield)
        before, self.tracker.current = self.tracker.current, "<fixture>" + fixturedef.argname
        try:
            return (yield)
        finally:
            self.tracker.current = before

    def pytest_runtest_logstart(self, nodeid, location):
        if self.tracker is not None:
            self.tracker.current = nodeid

    def pytest_runtest_logfinish(self, nodeid, location):
        if self.tracker is not None:
            self.tracker.current = "<between>"


def write(run, status, tests):
    with open(run["result"], "w") as f:
        json.dump({"tests": tests}, f)
    with open(run["rc"], "w") as f:
        f.write(str(status) + "\n")


def main():
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    _memo_source_to_code()
    _memo_rewrite()
    driver = Driver(spec, os.path.dirname(os.path.abspath(sys.argv[1])))
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    pytest.main(driver.opts + spec["collect"], plugins=[driver])


main()
