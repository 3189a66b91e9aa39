// Package reward scores a rollout episode: it runs the task's hidden tests (FAIL_TO_PASS
// and PASS_TO_PASS) on a tree that frognano builds itself, and says 1 when all of them pass,
// else 0. Entry point: [Score].
//
// The reward is the trust boundary of fine-tuning: what the agent wrote is hostile input,
// and a model trained with RL learns whatever raises its reward, including forging it.
// So nothing the agent left in its copy is run or followed as it is: the evaluation tree is
// the task's base commit (env.ExportCommit) with the task's patch (task.Apply) and only
// the agent's allowed changes laid on it (to the files the task's patch changed, regular,
// non-test, non-configuration; see [Score]); a static screen refuses changes that reach for the test harness (screen.go);
// and the hidden tests run in the sandbox, their results checked before they count: Go's
// test binaries built by frognano with the trusted build cache and run one by one on a
// read-only tree beside canary tests, the exit status the main signal (gorun.go); pytest
// with canaries in its own process, its report checked against its progress (pyrun.go).
//
// What the agent's code does in the test process cannot be stopped there: it shares the
// process with the test harness. The layers above make a forgery need a construct the
// screen refuses (an exit call, //go:linkname; in Python an import outside an allowlist, a
// dunder, a frame, getattr and its kin), or knowledge of which tests are frognano's; each
// file says what it stops and what it does not (pyrun.go: what is still open in Python). Rewards need
// the bubblewrap sandbox (ErrUnconfined elsewhere).
package reward

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/frognano/frognano/agent/workspace"
	"github.com/frognano/frognano/finetune/env"
	"github.com/frognano/frognano/finetune/task"
	"github.com/frognano/frognano/internal/cachedir"
	"github.com/frognano/frognano/internal/gocache"
)

// Options tune Score. The zero value works.
type Options struct {
	// Repo is the repository that holds the task's base commit; default t.Repo.
	Repo string
	// Trusted is the trusted Go build cache layer of the base commit (internal/gocache);
	// default: built once per base tree in frognano's cache folder.
	Trusted string
	// Exe is the GOCACHEPROG helper's executable (frognano, or a test binary whose TestMain
	// calls gocache.HelperMain); default os.Executable().
	Exe string
	// Timeout bounds the hidden tests' run; default 10 minutes.
	Timeout time.Duration
	// Hide are more folders the hidden tests' commands find empty, besides the task's
	// repository and frognano's cache folder (the task store): the agent's code runs in the
	// test process, and what it reads there can leak through the reward (rollouts add their
	// records and other episodes' copies).
	Hide []string
	// TempDir is where the evaluation tree is made (default the system's temp folder):
	// rollouts give their work folder, which the episodes' commands find empty, since the
	// tree holds the hidden tests in full and a TMPDIR outside /tmp is shared by every
	// command the user runs.
	TempDir string
	// PartialCredit makes the reward the fraction of the hidden tests that passed instead
	// of 1 or 0, when the results are trustworthy (a refused change or untrustworthy
	// results still give 0).
	PartialCredit bool

	// noScreen skips the screen: the tests show that the guards behind it hold alone.
	noScreen bool
}

// Result is a scored episode.
type Result struct {
	// Reward is 1 when every hidden test passed, else 0 (or the fraction passed, with
	// Options.PartialCredit).
	Reward float64 `json:"reward"`
	// Passed and Failed are the hidden tests by outcome (a test with no trustworthy
	// result is Failed).
	Passed []string `json:"passed,omitempty"`
	Failed []string `json:"failed,omitempty"`
	// Reason says why the reward is not 1, in a few words; empty when it is.
	Reason string `json:"reason,omitempty"`
	// Dropped are the agent's changes left out of the evaluation tree, with why.
	Dropped []workspace.Skipped `json:"dropped,omitempty"`
	// Prepare, Build and Test time the steps: the tree and the screen, the test binaries
	// (Go), the runs.
	Prepare time.Duration `json:"prepare_ns"`
	Build   time.Duration `json:"build_ns,omitempty"`
	Test    time.Duration `json:"test_ns"`
}

// Score is the reward of an episode whose agent made changes on a copy of t's buggy tree
// (its base commit with t's patch applied). Errors are frognano's own failures (no
// confining sandbox, a base commit that is gone, a task that is not well formed); whatever
// the agent did gives a Result, with a Reason when the reward is not 1.
//
// The evaluation tree is made here, fresh: t's base commit exported (env.ExportCommit),
// t's patch applied (task.Apply), and the agent's changes laid on it, but only to the files
// the patch changes (either side: modified, added, deleted; the fix of a synthesized task is
// its patch reversed, and any other file is code the tests would run that a fix does not
// need: a helper module, a sitecustomize.py, another module made to lie), and only regular
// files that are neither tests nor configuration: go.mod, go.sum, go.work, vendor/,
// testdata/, *_test.go; conftest.py, pytest.ini, setup.cfg, tox.ini, pyproject.toml,
// setup.py, pytest.toml, test files and tests/ folders, byte code (.pyc, __pycache__/),
// *.dist-info/ and *.egg-info/ (entry points), and in a Python task a new top-level module
// (at the top or in src/, where it could shadow pytest), in a Go task a test helper
// package's files (a folder named test…) unless the hidden tests or the task's patch are
// there; package.json, lockfiles, *.test.* and *.spec.* files, test runners'
// configurations; hidden files and folders; symbolic links, other non-regular files, paths
// that leave the tree. Those keep the base commit's version and are named in
// Result.Dropped. Nothing the agent left in its copy is read but through
// changes, which workspace.Changes made from git's record without following links.
//
// Then the screen (screen.go; screenpy.go for Python) reads what is kept and refuses a
// change that reaches for the test harness (reward 0, the findings in Reason), and the hidden tests run in the sandbox
// (gorun.go for Go, on the trusted build cache; pyrun.go for pytest), their results checked
// before they count. Go and Python (pytest) tasks are scored; others return ErrUnsupported.
func Score(ctx context.Context, t *task.Task, changes *workspace.Changes, o Options) (*Result, error) {
	start := time.Now()
	o, err := o.withDefaults(t)
	if err != nil {
		return nil, err
	}
	hidden := hiddenTests(t)
	if len(hidden) == 0 {
		return nil, fmt.Errorf("reward: task %s has no hidden tests", t.ID)
	}
	if t.Test.Kind != env.KindGo && t.Test.Kind != env.KindPython {
		return nil, fmt.Errorf("reward: %w: %q tasks (Go and Python so far)", ErrUnsupported, t.Test.Kind)
	}
	tmp, err := os.MkdirTemp(o.TempDir, "frognano-reward-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	// The sandbox's user (nobody, when frognano is root) must pass through to the tree and
	// the binaries, which it may not list or change.
	if err := os.Chmod(tmp, 0o711); err != nil {
		return nil, err
	}
	root := filepath.Join(tmp, "tree")
	co, err := env.ExportCommit(ctx, o.Repo, t.BaseCommit, root)
	if err != nil {
		return nil, fmt.Errorf("reward: %w", err)
	}
	if o.Trusted == "" && t.Test.Kind == env.KindGo {
		o.Trusted = filepath.Join(cachedir.Dir(), "finetune", "gocache", co.Tree+"-"+runtime.Version())
		if err := gocache.Build(ctx, root, o.Trusted, o.Exe); err != nil {
			return nil, fmt.Errorf("reward: the trusted build cache: %w", err)
		}
	}
	files, err := patchFiles(ctx, root, t.Patch)
	if err != nil {
		return nil, fmt.Errorf("reward: %w", err)
	}
	orig := map[string][]byte{} // the patched files before the patch, for the screen
	for p := range files {
		if realParents(root, p) != nil {
			continue
		}
		if st, err := os.Lstat(filepath.Join(root, filepath.FromSlash(p))); err == nil && st.Mode().IsRegular() {
			if b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p))); err == nil {
				orig[p] = b
			}
		}
	}
	if err := task.Apply(ctx, root, t.Patch); err != nil {
		return nil, fmt.Errorf("reward: %w", err)
	}
	res := &Result{}
	// A Python test's file may be named as its suite's configuration says (not test_*.py):
	// the hidden tests' files are the base's whatever their names.
	protect := map[string]bool{}
	if t.Test.Kind != env.KindGo {
		for _, id := range hidden {
			file, _ := env.SplitID(id)
			protect[file] = true
		}
	}
	keep, dropped := sortChanges(changes, protect)
	keep, outside := outsidePatch(keep, files)
	for i := range keep {
		keep[i].Orig = orig[keep[i].Path]
	}
	dropped = append(dropped, outside...)
	var helpers []workspace.Skipped
	if t.Test.Kind == env.KindPython {
		keep, helpers = newTopModules(root, keep)
	} else if module, err := modulePath(root); err == nil {
		keep, helpers = testHelpers(keep, t.Patch, module, hidden)
	}
	dropped = append(dropped, helpers...)
	res.Dropped = dropped
	if why := screen(keep, pyModules(root)); why != "" && !o.noScreen {
		res.Failed = hidden
		res.Reason = "refused by the screen: " + why
		res.Prepare = time.Since(start)
		return res, nil
	}
	more, err := lay(root, keep)
	if err != nil {
		return nil, fmt.Errorf("reward: laying the agent's changes: %w", err)
	}
	res.Dropped = append(res.Dropped, more...)
	res.Prepare = time.Since(start)

	var passed map[string]bool
	var untrusted, broken string
	if t.Test.Kind == env.KindGo {
		passed, untrusted, broken, err = runGo(ctx, root, tmp, t.Test, hidden, o, res)
	} else {
		passed, untrusted, err = runPytest(ctx, root, tmp, co.Repo, hidden, o, res)
	}
	if err != nil {
		return nil, err
	}
	for _, id := range hidden {
		if passed[id] {
			res.Passed = append(res.Passed, id)
		} else {
			res.Failed = append(res.Failed, id)
		}
	}
	switch {
	case untrusted != "":
		res.Reason = "results not trustworthy: " + untrusted
		res.Passed, res.Failed = nil, hidden
	case len(res.Failed) > 0:
		res.Reason = fmt.Sprintf("%d of %d hidden tests failed", len(res.Failed), len(hidden)) + broken
		if o.PartialCredit {
			res.Reward = float64(len(res.Passed)) / float64(len(hidden))
		}
	default:
		res.Reward = 1
	}
	return res, nil
}

// hide is what the hidden tests' sandbox hides (Options.Hide).
func (o Options) hide() []string {
	return append([]string{o.Repo, cachedir.Dir()}, o.Hide...)
}

// ErrUnsupported: a task of a kind Score does not run yet.
var ErrUnsupported = errors.New("reward: not supported")

func (o Options) withDefaults(t *task.Task) (Options, error) {
	if o.Repo == "" {
		o.Repo = t.Repo
	}
	if o.Exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return o, err
		}
		o.Exe = exe
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Minute
	}
	return o, nil
}

// hiddenTests are t's FAIL_TO_PASS and PASS_TO_PASS, sorted, each once.
func hiddenTests(t *task.Task) []string {
	set := map[string]bool{}
	for _, id := range append(append([]string{}, t.FailToPass...), t.PassToPass...) {
		set[id] = true
	}
	return sortedKeys(set)
}
