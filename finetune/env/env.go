package env

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/frognano/frognano/internal/atomicfile"
	"github.com/frognano/frognano/internal/cachedir"
)

// Version of the cached Env format; a cache entry of another version is made again.
// Version 2 added the Go modules (Modules, Workspace, Package.Module): a version 1 entry
// saw the module at the top only, and is made again. Version 3 added Module.Work (a go.work
// below the top ties its modules): a version 2 entry ran those with GOWORK=off.
const Version = 3

// Options tune Open. The zero value works.
type Options struct {
	// PackageTimeout is go test's -timeout: a package whose tests run longer is stopped and
	// the test running then is recorded as hung. Default 2 minutes.
	PackageTimeout time.Duration
	// Runs is how many times the whole suite runs (tests that both pass and fail are flaky);
	// default 2. Tests that failed every time are run once more on their own.
	Runs int
	// GoCache overrides the sandbox's Go build cache (default: the repository's own, or
	// FROGNANO_SANDBOX_GOCACHE).
	GoCache string
	// CacheDir holds cached environments; default finetune/env in frognano's cache folder.
	CacheDir string
	// Fresh ignores a cached environment (it is still written).
	Fresh bool
	// Progress, when set, hears what is being done, in a few words.
	Progress func(string)
}

func (o Options) withDefaults() Options {
	if o.PackageTimeout <= 0 {
		o.PackageTimeout = 2 * time.Minute
	}
	if o.Runs <= 0 {
		o.Runs = 2
	}
	if o.CacheDir == "" {
		o.CacheDir = filepath.Join(cachedir.Dir(), "finetune", "env")
	}
	if o.Progress == nil {
		o.Progress = func(string) {}
	}
	return o
}

// Env is what a repository's suite does on one commit. Its JSON form is the cache.
type Env struct {
	Version int    `json:"version"`
	Repo    string `json:"repo"`
	Commit  string `json:"commit"`
	Kind    string `json:"kind"`
	Command string `json:"command"`
	// Module is the path of the Go module at the top ("" when the top has none).
	Module string `json:"module,omitempty"`
	// Modules are every Go module the suite runs (the top's first), and Workspace whether
	// a go.work at the top ties them (go runs with it; without, in each module's folder
	// with the go.work below the top that ties it, Module.Work, else GOWORK=off). See
	// [Modules].
	Modules   []Module `json:"modules,omitempty"`
	Workspace bool     `json:"workspace,omitempty"`
	// Tests by TestID: pass, fail, skip, flaky or hung.
	Tests map[string]Result `json:"tests"`
	// Packages of the modules by import path (Go).
	Packages map[string]Package `json:"packages"`
	// Runner of a Python or JS/TS suite, and Sources, the files mutations may change there
	// (slash paths from the top; their tests are not among them).
	Runner  string   `json:"runner,omitempty"`
	Sources []string `json:"sources,omitempty"`
	// Broken are packages that failed outside their tests on the clean commit.
	Broken         map[string]string `json:"broken,omitempty"`
	PackageTimeout float64           `json:"package_timeout_seconds"`
	Seconds        float64           `json:"seconds"` // to make this environment
	Created        time.Time         `json:"created"`
	// Cached is true when Open read it from the cache (not stored).
	Cached bool `json:"-"`
}

// Package is one package of a Go module.
type Package struct {
	Dir string `json:"dir"` // relative to the top, slash-separated; "." for the top
	// Module is the folder of its module (a Module's Dir): its tests run there.
	Module string `json:"module"`
	// GoFiles are the package's non-test Go files, as go list chose them (build tags).
	GoFiles []string `json:"go_files,omitempty"`
	// TestDeps are the repository's packages its test binary is built from (itself
	// included; another module's, when its module requires that one through a replace or
	// the go.work):
	// a change in one of them can change its tests' outcome.
	TestDeps []string `json:"test_deps,omitempty"`
	Seconds  float64  `json:"seconds,omitempty"` // its tests' run time on the clean commit
}

// Passing are the tests that passed on the clean commit, every time.
func (e *Env) Passing() []string { return e.with(Pass) }

func (e *Env) with(status string) []string { return Results{Tests: e.Tests}.IDs(status) }

// Count is how many tests have status.
func (e *Env) Count(status string) int { return len(e.with(status)) }

// Affected are the packages whose tests a change to pkg can affect, pkg first.
func (e *Env) Affected(pkg string) []string {
	out := []string{pkg}
	for p, info := range e.Packages {
		if p == pkg {
			continue
		}
		for _, d := range info.TestDeps {
			if d == pkg {
				out = append(out, p)
				break
			}
		}
	}
	sort.Strings(out[1:])
	return out
}

// Problems that end synthesis, each worded for people by the CLI.
var (
	ErrNoTests      = errors.New("the repository has no tests")
	ErrNonePass     = errors.New("no test passes on the clean commit")
	ErrSuiteCrashed = errors.New("the test suite did not run")
)

// Open makes the session and its environment: from the cache when this commit's was made
// before with the same settings, else by running the suite.
func Open(ctx context.Context, repo string, opts Options) (*Session, error) {
	opts = opts.withDefaults()
	s, err := NewSession(ctx, repo, opts)
	if err != nil {
		return nil, err
	}
	if s.Detection.Unsupported != "" {
		s.Close()
		return nil, fmt.Errorf("%w: %s", ErrUnsupported, s.Detection.Unsupported)
	}
	cachePath := opts.cachePath(s.Checkout, s.Detection)
	if !opts.Fresh {
		if e, err := loadEnv(cachePath, s.Checkout.Commit); err == nil {
			e.Cached = true
			s.Env = e
			return s, nil
		}
	}
	opts.Progress("running the test suite at " + s.Checkout.Commit[:12])
	e, err := s.build(ctx, opts)
	if err != nil {
		s.Close()
		return nil, err
	}
	b, err := json.MarshalIndent(e, "", "  ")
	if err == nil {
		err = atomicfile.Write(cachePath, b, 0o644)
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("caching the environment: %w", err)
	}
	s.Env = e
	return s, nil
}

// cachePath keys an environment by repository, commit and what shapes the result.
func (o Options) cachePath(co *Checkout, d Detection) string {
	repo := sha256.Sum256([]byte(co.Repo))
	key := sha256.Sum256([]byte(fmt.Sprintf("v%d|%s|%s|%s|%d|%s|%s|%s", Version, d.Command, d.Format, o.PackageTimeout, o.Runs, d.Runner, d.Python, d.NodeModules)))
	return filepath.Join(o.CacheDir, hex.EncodeToString(repo[:8]), co.Commit+"-"+hex.EncodeToString(key[:4])+".json")
}

func loadEnv(p, commit string) (*Env, error) {
	b, err := readRegular(p)
	if err != nil {
		b, err = os.ReadFile(p) // an environment may be larger than 1 MiB
		if err != nil {
			return nil, err
		}
	}
	var e Env
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, err
	}
	if e.Version != Version || e.Commit != commit {
		return nil, errors.New("stale")
	}
	return &e, nil
}

// goTestCmd is the go test command for pkgs (import paths; none: ./... in every module).
func (e *Env) goTestCmd(timeout time.Duration, extra string, pkgs ...string) string {
	return e.InModules(pkgs, func(args string) string {
		return fmt.Sprintf("go test -json -count=1 -vet=off -timeout=%s %s %s", timeout, extra, args)
	})
}

// RunRegexp matches exactly names (for -run and -skip).
func RunRegexp(names []string) string {
	return "^(" + strings.Join(names, "|") + ")$"
}
