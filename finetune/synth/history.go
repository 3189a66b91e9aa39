package synth

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/frognano/frognano/finetune/task"
	"github.com/frognano/frognano/internal/gitcmd"
)

// DefaultHistoryDepth is how many commits before the base the history synthesizer reads.
const DefaultHistoryDepth = 300

// userGit is the user's repository, as they configured it, for reading only: every command
// here is plumbing that reads objects (rev-list, diff-tree, cat-file), nothing writes the
// index or refs, and GIT_OPTIONAL_LOCKS=0 keeps git from refreshing the index on its own.
func userGit(repo string) gitcmd.Repo {
	return gitcmd.Repo{Dir: repo, Trust: gitcmd.User, Env: []string{"GIT_OPTIONAL_LOCKS=0"}}
}

// historyCandidates are the past commits of the base (newest first, at most depth) that
// changed both tests that still exist and non-test Go code, each as the reverse of its
// non-test Go changes laid on the base: the behaviour before the commit, which its tests
// (still in the repository) should now catch. A commit whose reverse does not apply cleanly
// to the base is counted and rejected here; one that added or deleted non-test Go files is
// not a candidate (reverting it would remove or restore a whole file, which rarely builds).
func (r *runner) historyCandidates(ctx context.Context, sum *Summary) ([]*patchCandidate, error) {
	depth := r.opts.HistoryDepth
	if depth <= 0 {
		depth = DefaultHistoryDepth
	}
	g := userGit(r.s.Checkout.Repo)
	out, err := g.Run(ctx, nil, "rev-list", "--no-merges", "--parents", fmt.Sprintf("--max-count=%d", depth), r.s.Checkout.Commit)
	if err != nil {
		return nil, fmt.Errorf("reading the history: %w", err)
	}
	var cands []*patchCandidate
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 { // a root commit: reverting it removes everything
			continue
		}
		commit, parent := f[0], f[1]
		pc, err := r.revertOf(ctx, g, commit, parent)
		if err != nil {
			return nil, err
		}
		if pc == nil {
			continue
		}
		sum.Candidates[SynthHistory]++
		if pc.changes == nil {
			sum.reject(SynthHistory, RejectRevert)
			continue
		}
		cands = append(cands, pc)
	}
	return cands, nil
}

// revertOf is the candidate made from commit; nil when the commit is not one (no test that
// still exists, no non-test Go change, a non-test Go file added or deleted), and without
// changes when its reverse does not apply to the base.
func (r *runner) revertOf(ctx context.Context, g gitcmd.Repo, commit, parent string) (*patchCandidate, error) {
	out, err := g.Run(ctx, nil, "diff-tree", "-r", "-z", "--no-renames", "--name-status", parent, commit)
	if err != nil {
		return nil, fmt.Errorf("reading commit %.12s: %w", commit, err)
	}
	parts := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	var code []string
	tests := false
	for i := 0; i+1 < len(parts); i += 2 {
		status, p := parts[i], parts[i+1]
		switch {
		case isTestPath(p):
			if strings.HasSuffix(p, "_test.go") && status != "D" && r.existsAtBase(p) {
				tests = true
			}
		case strings.HasSuffix(p, ".go"):
			if status != "M" || !r.existsAtBase(p) {
				return nil, nil
			}
			code = append(code, p)
		}
	}
	if !tests || len(code) == 0 {
		return nil, nil
	}
	subject, _ := g.Run(ctx, nil, "log", "-1", "--format=%s", "--no-show-signature", commit)
	pc := &patchCandidate{synth: SynthHistory, bugs: 1, hint: strings.TrimSpace(string(subject)),
		origin: task.Origin{Synthesizer: SynthHistory, File: code[0], Commit: commit,
			Description: fmt.Sprintf("reverts the code of %.12s %q", commit, strings.TrimSpace(string(subject)))}}
	// The reverse of the commit's change to each file, as frognano's own diff of the two
	// blobs (the user's diff settings never shape it), applied to the base's file.
	var reverse []task.Change
	base := map[string][]byte{}
	for _, p := range code {
		before, err := g.Run(ctx, nil, "cat-file", "blob", parent+":"+p)
		if err != nil {
			return nil, fmt.Errorf("reading %s at %.12s: %w", p, parent, err)
		}
		after, err := g.Run(ctx, nil, "cat-file", "blob", commit+":"+p)
		if err != nil {
			return nil, fmt.Errorf("reading %s at %.12s: %w", p, commit, err)
		}
		reverse = append(reverse, task.Change{Path: p, Old: after, New: before})
		if base[p], err = readSource(filepath.Join(r.s.Checkout.Dir, filepath.FromSlash(p))); err != nil {
			return pc, nil
		}
	}
	patch, err := task.MakePatch(ctx, reverse)
	if err != nil {
		return pc, nil
	}
	reverted, err := applyPatches(ctx, base, patch)
	if err != nil {
		return pc, nil
	}
	var changes []task.Change
	for _, p := range code {
		if !bytes.Equal(base[p], reverted[p]) {
			changes = append(changes, task.Change{Path: p, Old: base[p], New: reverted[p]})
		}
	}
	if len(changes) == 0 {
		return pc, nil // nothing left to revert: the base already differs there
	}
	pc.changes = changes
	if fs := changedFuncs(changes); len(fs) > 0 {
		pc.origin.File, pc.origin.Function, pc.origin.Line = fs[0].file, fs[0].name, fs[0].line
	}
	return pc, nil
}

// existsAtBase says whether p is a regular file of the base commit.
func (r *runner) existsAtBase(p string) bool {
	st, err := os.Lstat(filepath.Join(r.s.Checkout.Dir, filepath.FromSlash(p)))
	return err == nil && st.Mode().IsRegular()
}
