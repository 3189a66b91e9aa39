// Package reward scores a rollout episode: it runs the task's hidden tests (FAIL_TO_PASS
// and PASS_TO_PASS) on a tree that frognano builds itself, and says 1 when all of them pass,
// else 0. Entry point: [Score].
//
// The reward is the trust boundary of fine-tuning: what the agent wrote is hostile input,
// and a model trained with RL learns whatever raises its reward, including forging it.
// So nothing the agent left in its copy is run or followed as it is: the evaluation tree is
// the task's base commit (env.ExportCommit) with the task's patch (task.Apply) and only
// the agent's allowed changes laid on it (regular, non-test, non-configuration files; see
// [Score]); a static screen refuses changes that reach for the test harness; and the
// hidden tests' results are checked for consistency before they count.
package reward

import (
	"context"
	"errors"
	"time"

	"github.com/frognano/frognano/agent/workspace"
	"github.com/frognano/frognano/finetune/task"
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
	// PartialCredit makes the reward the fraction of the hidden tests that passed instead
	// of 1 or 0, when the results are trustworthy (a refused change or untrustworthy
	// results still give 0).
	PartialCredit bool
}

// Result is a scored episode.
type Result struct {
	// Reward is 1 when every hidden test passed, else 0 (or the fraction passed, with
	// Options.PartialCredit).
	Reward float64
	// Passed and Failed are the hidden tests by outcome (a test with no trustworthy
	// result is Failed).
	Passed, Failed []string
	// Reason says why the reward is not 1, in a few words; empty when it is.
	Reason string
	// Dropped are the agent's changes left out of the evaluation tree, with why.
	Dropped []workspace.Skipped
	// Prepare, Build and Test time the steps: the tree, the test binaries, their runs.
	Prepare, Build, Test time.Duration
}

// ErrNotImplemented: the skeleton, published so that callers can code against Score.
var ErrNotImplemented = errors.New("reward: not implemented yet")

// Score is the reward of an episode whose agent made changes on a copy of t's buggy tree
// (its base commit with t's patch). Errors are frognano's own failures (no sandbox, a base
// commit that is gone); whatever the agent did gives a Result, with a Reason when it is 0.
func Score(ctx context.Context, t *task.Task, changes *workspace.Changes, o Options) (*Result, error) {
	return nil, ErrNotImplemented
}
