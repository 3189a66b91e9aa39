package env

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Python and JS/TS suites ("script" suites: nothing to compile) run through one command per
// run, which the runner's report is read from. Their TestIDs are "<test file> <name>": the
// file relative to the top, slash-separated, and the runner's name of the test (pytest's
// node id after the file; node's top-level test name; jest's and vitest's describe blocks
// and title joined by " > "). Names may hold spaces, file paths may not.

// Script reports whether d is a Python or JS/TS suite.
func (d Detection) Script() bool { return d.Kind == KindPython || d.Kind == KindJavaScript }

// ScriptCommand is the command that runs a Python or JS/TS suite at the top of a copy: the
// tests of files (test files, relative; all when empty), leaving out deselect (TestIDs;
// pytest only), each test limited to testTimeout where the runner can (JS), and the run to
// timeout (pytest is interrupted then, and says which test it was in). The repository's own
// command (ConfigFile) always runs whole.
func (d Detection) ScriptCommand(timeout, testTimeout time.Duration, files, deselect []string) string {
	switch d.Runner {
	case RunnerPytest:
		return pytestCommand(d.Python, timeout, files, deselect)
	case RunnerCommand:
		return fmt.Sprintf("set -o pipefail; export %s; { timeout -k 10 %d bash -c %s; } 3>&1 1>&2 | cat", resultsFD, int(timeout.Seconds()+0.999), shellQuote(d.Command))
	}
	return d.jsCommand(timeout, testTimeout, files)
}

// ParseScript reads the results of ScriptCommand's run on a copy at root from its stdout
// (the report) and stderr (the runner's talk: pytest names a test it was interrupted in).
func (d Detection) ParseScript(stdout, stderr []byte, root string) Results {
	var r Results
	switch d.Format {
	case FormatJUnitXML:
		r = ParseJUnitXML(stdout)
	case FormatJestJSON:
		r = ParseJestJSON(stdout, root)
	case FormatNodeEvents:
		r = ParseNodeEvents(stdout)
	default:
		return newResults()
	}
	if d.Runner == RunnerPytest {
		if id := pytestHung(stderr); id != "" {
			if _, done := r.Tests[id]; !done {
				r.Tests[id] = Result{Status: Hung}
				file, _ := SplitID(id)
				r.Broken[file] = "timed out"
			}
		}
	}
	return r
}

// buildScript is build for a Python or JS/TS suite.
func (s *Session) buildScript(ctx context.Context, c *Copy, e *Env, opts Options) (*Env, error) {
	d := s.Detection
	e.Sources = scriptSources(s.Checkout.Dir, d.Kind)
	suiteTimeout := s.suiteTimeout(opts)
	e.Command = d.ScriptCommand(suiteTimeout, opts.PackageTimeout, nil, nil)
	seen := outcomes{}
	note := func(res Results) {
		seen.note(res.Tests)
		for id, t := range res.Tests {
			if old, ok := e.Tests[id]; !ok || t.Seconds > old.Seconds {
				e.Tests[id] = t
			}
		}
	}
	for run := 1; run <= opts.Runs; run++ {
		opts.Progress(fmt.Sprintf("test suite, run %d of %d", run, opts.Runs))
		res, err := s.runScript(ctx, c, suiteTimeout, opts.PackageTimeout, nil)
		if err != nil {
			return nil, err
		}
		note(res)
		if run == 1 {
			for f, why := range res.Broken {
				if why != "timed out" {
					e.Broken[f] = why
				}
			}
		}
	}
	// Failing every time: once more on their own (pytest can name them).
	if d.Runner == RunnerPytest {
		failing := seen.alwaysFailing()
		if len(failing) > 0 {
			out, err := c.Run(ctx, d.ScriptCommand(suiteTimeout, opts.PackageTimeout, failing, nil), suiteTimeout+time.Minute)
			if err != nil {
				return nil, err
			}
			seen.noteRerun(d.ParseScript([]byte(out.Stdout), []byte(out.Stderr), c.WS.Root).Tests)
		}
	}
	seen.apply(e)
	return e, nil
}

// suiteTimeout is the time limit of one whole run of a script suite: pytest has no time
// limit per test, so its run is PackageTimeout; JS runners limit each test to that.
func (s *Session) suiteTimeout(opts Options) time.Duration {
	if s.Detection.Runner == RunnerPytest {
		return opts.PackageTimeout
	}
	return 4*opts.PackageTimeout + 10*time.Minute
}

// runScript runs the suite (or files) once; when pytest was interrupted in a hung test, the
// hung test's file runs again without it (and any other that hangs next), so that the
// tests after it are known.
func (s *Session) runScript(ctx context.Context, c *Copy, timeout, testTimeout time.Duration, files []string) (Results, error) {
	d := s.Detection
	out, err := c.Run(ctx, d.ScriptCommand(timeout, testTimeout, files, nil), timeout+time.Minute)
	if err != nil {
		return Results{}, err
	}
	res := d.ParseScript([]byte(out.Stdout), []byte(out.Stderr), c.WS.Root)
	// pytest's 5 is "no tests collected".
	if len(res.Tests) == 0 && len(res.Broken) == 0 && out.ExitCode != 0 && !(d.Runner == RunnerPytest && out.ExitCode == 5) {
		return Results{}, fmt.Errorf("%w: exit code %d: %s", ErrSuiteCrashed, out.ExitCode, tail(out.Stderr+out.Stdout, 400))
	}
	if d.Runner != RunnerPytest {
		return res, nil
	}
	var skip []string
	for round := 0; round < 3; round++ {
		var hung []string
		for id, t := range res.Tests {
			if t.Status == Hung && !contains(skip, id) {
				hung = append(hung, id)
			}
		}
		if len(hung) == 0 {
			break
		}
		skip = append(skip, hung...)
		fileSet := map[string]bool{}
		for _, id := range hung {
			f, _ := SplitID(id)
			fileSet[f] = true
		}
		var again []string
		for f := range fileSet {
			again = append(again, f)
		}
		sort.Strings(again)
		s.progress("running " + strings.Join(again, ", ") + " again without its hung tests")
		out, err := c.Run(ctx, d.ScriptCommand(timeout, testTimeout, again, skip), timeout+time.Minute)
		if err != nil {
			return Results{}, err
		}
		more := d.ParseScript([]byte(out.Stdout), []byte(out.Stderr), c.WS.Root)
		for id, t := range more.Tests {
			if res.Tests[id].Status != Hung {
				res.Tests[id] = t
			}
		}
		for _, f := range again {
			delete(res.Broken, f)
			if why, ok := more.Broken[f]; ok {
				res.Broken[f] = why
			}
		}
	}
	return res, nil
}

// scriptSources are the files of a Python or JS/TS repository that mutations may change:
// its code, not its tests, configuration, vendored packages or virtual environments.
func scriptSources(dir, kind string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		name := de.Name()
		if de.IsDir() {
			if p != dir && (strings.HasPrefix(name, ".") || skipDirs[name]) {
				return filepath.SkipDir
			}
			return nil
		}
		if !de.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || strings.Contains(rel, " ") {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if isSource(rel, kind) {
			out = append(out, rel)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

// skipDirs hold no code of the repository's own that its tests exercise.
var skipDirs = map[string]bool{"node_modules": true, "venv": true, "env": true, "__pycache__": true,
	"build": true, "dist": true, "site-packages": true, "tests": true, "test": true, "__tests__": true,
	"testing": true, "docs": true, "doc": true, "examples": true, "example": true, "benchmarks": true,
	"scripts": true, "coverage": true, "vendor": true, "third_party": true}

func isSource(rel, kind string) bool {
	base := filepath.Base(rel)
	switch kind {
	case KindPython:
		return strings.HasSuffix(base, ".py") && !strings.HasPrefix(base, "test_") && !strings.HasSuffix(base, "_test.py") &&
			base != "conftest.py" && base != "setup.py" && base != "noxfile.py" && base != "conf.py"
	case KindJavaScript:
		for _, ext := range []string{".js", ".mjs", ".cjs", ".ts", ".mts", ".cts"} {
			if strings.HasSuffix(base, ext) {
				stem := strings.TrimSuffix(base, ext)
				return !strings.HasSuffix(base, ".d.ts") && !strings.HasSuffix(stem, ".test") && !strings.HasSuffix(stem, ".spec") &&
					!strings.HasSuffix(stem, ".config") && !strings.HasPrefix(stem, ".") && !strings.HasPrefix(base, "test")
			}
		}
	}
	return false
}

// linkNodeModules makes the copy's node_modules the user's (bound read-only): a link made by
// frognano, to a folder of the user's.
func (d Detection) linkNodeModules(root string) error {
	if d.NodeModules == "" {
		return nil
	}
	p := filepath.Join(root, "node_modules")
	if _, err := os.Lstat(p); err == nil {
		return nil // committed: the repository vendors its packages
	}
	return os.Symlink(d.NodeModules, p)
}
