package env

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// build runs the suite on a fresh copy and records what it does.
func (s *Session) build(ctx context.Context, opts Options) (*Env, error) {
	start := time.Now()
	c, err := s.Copy(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	e := &Env{Version: Version, Repo: s.Checkout.Repo, Commit: s.Checkout.Commit, Kind: s.Detection.Kind,
		Command: s.Detection.Command, Modules: s.Detection.Modules, Workspace: s.Detection.Workspace,
		Tests: map[string]Result{}, Broken: map[string]string{},
		PackageTimeout: opts.PackageTimeout.Seconds(), Created: start.UTC()}
	if s.Detection.Script() {
		e.Runner = s.Detection.Runner
		if _, err := s.buildScript(ctx, c, e, opts); err != nil {
			return nil, err
		}
		return e.done(start)
	}
	if err := e.listPackages(ctx, c); err != nil {
		return nil, err
	}
	if e.Kind == KindGo {
		e.Command = e.goTestCmd(opts.PackageTimeout, "")
	}
	// A suite with a hung test takes the whole package time limit per run; the sandbox's
	// own limit is a backstop for a command that ignores go test's.
	suiteTimeout := 4*opts.PackageTimeout + 10*time.Minute
	seen := outcomes{}
	for run := 1; run <= opts.Runs; run++ {
		opts.Progress(fmt.Sprintf("test suite, run %d of %d", run, opts.Runs))
		res, err := e.runSuite(ctx, c, e.Command, suiteTimeout, opts)
		if err != nil {
			return nil, err
		}
		seen.note(res.Tests)
		for id, t := range res.Tests {
			if old, ok := e.Tests[id]; !ok || t.Seconds > old.Seconds {
				e.Tests[id] = t
			}
		}
		for pkg, sec := range res.Seconds {
			if p, ok := e.Packages[pkg]; ok && sec > p.Seconds {
				p.Seconds = sec
				e.Packages[pkg] = p
			}
		}
		if run == 1 {
			for pkg, why := range res.Broken {
				if why != "timed out" {
					e.Broken[pkg] = why
				}
			}
		}
	}
	// Failing every time: once more on their own, where a test that depends on the order
	// or on the load of the others shows itself.
	failing := map[string][]string{}
	for _, id := range seen.alwaysFailing() {
		pkg, name := SplitID(id)
		failing[pkg] = append(failing[pkg], name)
	}
	for pkg, names := range failing {
		sort.Strings(names)
		out, err := c.Run(ctx, e.goTestCmd(opts.PackageTimeout, "-run="+shellQuote(RunRegexp(names)), pkg), suiteTimeout)
		if err != nil {
			return nil, err
		}
		seen.noteRerun(ParseGoTestJSON([]byte(out.Stdout)).Tests)
	}
	seen.apply(e)
	return e.done(start)
}

// done checks that the suite gives something to work with.
func (e *Env) done(start time.Time) (*Env, error) {
	e.Seconds = time.Since(start).Seconds()
	switch {
	case len(e.Tests) == 0 && len(e.Broken) > 0:
		return nil, fmt.Errorf("%w: %s", ErrSuiteCrashed, brokenSummary(e.Broken))
	case len(e.Tests) == 0:
		return nil, ErrNoTests
	case len(e.Passing()) == 0:
		return nil, fmt.Errorf("%w (%d tests, none passing)", ErrNonePass, len(e.Tests))
	}
	return e, nil
}

func brokenSummary(broken map[string]string) string {
	var parts []string
	for pkg, why := range broken {
		parts = append(parts, pkg+": "+why)
	}
	sort.Strings(parts)
	if len(parts) > 3 {
		parts = append(parts[:3], fmt.Sprintf("and %d more", len(parts)-3))
	}
	return strings.Join(parts, "; ")
}

// runSuite runs command once; the packages where a test hung run again without it (and
// without any other that hangs next), so that their other tests are known.
func (e *Env) runSuite(ctx context.Context, c *Copy, command string, timeout time.Duration, opts Options) (Results, error) {
	out, err := c.Run(ctx, command, timeout)
	if err != nil {
		return Results{}, err
	}
	res := ParseGoTestJSON([]byte(out.Stdout))
	if out.TimedOut {
		return Results{}, fmt.Errorf("%w: the suite ran past %s", ErrSuiteCrashed, timeout)
	}
	if len(res.Tests) == 0 && len(res.Broken) == 0 && out.ExitCode != 0 {
		return Results{}, fmt.Errorf("%w: exit code %d: %s", ErrSuiteCrashed, out.ExitCode, tail(out.Stderr, 400))
	}
	skip := map[string][]string{}
	for round := 0; round < 3; round++ {
		again := map[string]bool{}
		for id, t := range res.Tests {
			if t.Status == Hung {
				pkg, name := SplitID(id)
				if !contains(skip[pkg], name) {
					skip[pkg] = append(skip[pkg], name)
					again[pkg] = true
				}
			}
		}
		if len(again) == 0 {
			break
		}
		for pkg := range again {
			opts.Progress("running " + pkg + " again without its hung tests")
			out, err := c.Run(ctx, e.goTestCmd(opts.PackageTimeout, "-skip="+shellQuote(RunRegexp(skip[pkg])), pkg), timeout)
			if err != nil {
				return Results{}, err
			}
			more := ParseGoTestJSON([]byte(out.Stdout))
			for id, t := range more.Tests {
				if res.Tests[id].Status != Hung {
					res.Tests[id] = t
				}
			}
			delete(res.Broken, pkg)
			if why, ok := more.Broken[pkg]; ok {
				res.Broken[pkg] = why
			}
		}
	}
	return res, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}

// listPackages asks go list, in each module's folder, for the module's packages, their
// files and what their test binaries are built from.
func (e *Env) listPackages(ctx context.Context, c *Copy) error {
	e.Packages = map[string]Package{}
	var script strings.Builder
	script.WriteString("set -e\n")
	for i, m := range e.Modules {
		if m.Dir == "." {
			e.Module = m.Path
		}
		// ./... in a module's folder is its packages only: a nested module's are not.
		fmt.Fprintf(&script, "echo 'module|%d'\n(%s && go list -e -test -f '{{.ImportPath}}|{{.Dir}}|{{join .GoFiles \",\"}}|{{join .Deps \" \"}}' ./...)\n", i, m.Enter())
	}
	out, err := c.Run(ctx, script.String(), 5*time.Minute)
	if err != nil {
		return err
	}
	if out.ExitCode != 0 {
		return fmt.Errorf("%w: go list: %s", ErrSuiteCrashed, tail(out.Stderr, 400))
	}
	deps := map[string][]string{} // package → its test binary's deps
	var mod Module
	for _, line := range strings.Split(out.Stdout, "\n") {
		f := strings.SplitN(line, "|", 4)
		if len(f) == 2 && f[0] == "module" {
			i, _ := strconv.Atoi(f[1])
			mod = e.Modules[i]
			continue
		}
		if len(f) != 4 {
			continue
		}
		path, dir, files, ds := f[0], f[1], f[2], f[3]
		switch {
		case strings.HasSuffix(path, ".test"):
			deps[strings.TrimSuffix(path, ".test")] = strings.Fields(ds)
		case strings.Contains(path, " "):
			// a test variant ("p [p.test]"): its deps are in p.test's
		default:
			rel, err := filepath.Rel(c.WS.Root, dir)
			if err != nil || strings.HasPrefix(rel, "..") {
				continue // outside the copy: not the repository's
			}
			var gofiles []string
			if files != "" {
				gofiles = strings.Split(files, ",")
			}
			e.Packages[path] = Package{Dir: filepath.ToSlash(rel), Module: mod.Dir, GoFiles: gofiles}
		}
	}
	for pkg, ds := range deps {
		p, ok := e.Packages[pkg]
		if !ok {
			continue
		}
		set := map[string]bool{pkg: true}
		for _, d := range ds {
			d, _, _ = strings.Cut(d, " ")
			if _, mine := e.Packages[d]; mine {
				set[d] = true
			}
		}
		for d := range set {
			p.TestDeps = append(p.TestDeps, d)
		}
		sort.Strings(p.TestDeps)
		e.Packages[pkg] = p
	}
	return nil
}
