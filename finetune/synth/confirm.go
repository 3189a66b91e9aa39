package synth

import (
	"context"
	"path/filepath"
	"sort"
	"time"

	"github.com/frognano/frognano/finetune/task"
)

// Confirm turns the screened candidates of repo's HEAD commit in the store (Options.
// LazyConfirm) into tasks: each is built as a plain patch on a fresh copy and its
// affected packages' tests run, exactly as eager synthesis confirms; a confirmed one is
// written as a task and leaves screened/, a refuted one only leaves screened/. Only
// candidates whose ids are in ids are confirmed (all when ids is empty); candidates of
// other commits are left as they are. The summary counts Valid, ValidBy and Rejected.
func Confirm(ctx context.Context, repo string, ids []string, opts Options) (*Summary, error) {
	if opts.Progress == nil {
		opts.Progress = func(Progress) {}
	}
	start := time.Now()
	s, r, store, sum, err := open(ctx, repo, opts)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	screened, err := store.ListScreened()
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var todo []*task.Task
	for _, t := range screened {
		if t.BaseCommit == s.Checkout.Commit && (len(want) == 0 || want[t.ID]) {
			todo = append(todo, t)
		}
	}
	// All are confirmed first (on one copy, proven clean at the end), then written.
	pc := &plainCopy{r: r}
	verdicts := make([]*verdict, len(todo))
	for i, t := range todo {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		opts.Progress(Progress{Phase: "confirming", Done: i, Total: len(todo), Valid: sum.Valid, Text: t.Origin.File + ": " + t.Origin.Description})
		v := &verdict{}
		if m, ok := r.mutantOf(ctx, t); ok {
			v.m = m
			pc.confirm(ctx, v)
		} else {
			v.reason = RejectPatch // the candidate is not one this commit's operators make
		}
		verdicts[i] = v
	}
	pc.Close(ctx)
	var times []float64
	for i, t := range todo {
		v := verdicts[i]
		times = append(times, v.seconds)
		sum.ValidatedBy[t.Origin.Synthesizer]++
		if v.reason == "" && task.MakeID(s.Checkout.Commit, v.patch) == t.ID {
			if err := store.Put(r.task(ctx, v, t.ID)); err != nil {
				return nil, err
			}
			sum.Valid++
			sum.ValidBy[t.Origin.Synthesizer]++
			sum.Tasks = append(sum.Tasks, t.ID)
		} else {
			if v.reason == "" {
				v.reason = RejectPatch
			}
			sum.reject(t.Origin.Synthesizer, v.reason)
		}
		if err := store.RemoveScreened(t.ID); err != nil {
			return nil, err
		}
	}
	sum.MedianSeconds = median(times)
	sum.Seconds = time.Since(start).Seconds()
	if sum.Seconds > 0 {
		sum.TasksPerMinute = float64(sum.Valid) / sum.Seconds * 60
	}
	return sum, nil
}

// mutantOf finds the mutant a screened candidate was made from: the operators are
// deterministic on a commit, so it is the one at the same place with the same patch.
func (r *runner) mutantOf(ctx context.Context, t *task.Task) (Mutant, bool) {
	file := t.Origin.File
	if r.s.Detection.Script() {
		return r.scriptMutantOf(ctx, t)
	}
	var pkgs []string
	for pkg, info := range r.s.Env.Packages {
		for _, f := range info.GoFiles {
			if filepath.ToSlash(filepath.Join(info.Dir, f)) == file {
				pkgs = append(pkgs, pkg)
			}
		}
	}
	sort.Strings(pkgs)
	if len(pkgs) == 0 {
		return Mutant{}, false
	}
	src, err := readSource(filepath.Join(r.s.Checkout.Dir, filepath.FromSlash(file)))
	if err != nil {
		return Mutant{}, false
	}
	r.sources[file] = src
	ms, err := GoMutants(pkgs[0], file, src)
	if err != nil {
		return Mutant{}, false
	}
	return r.matching(ctx, t, ms)
}

// scriptMutantOf is mutantOf for a Python or JS/TS repository.
func (r *runner) scriptMutantOf(ctx context.Context, t *task.Task) (Mutant, bool) {
	file := t.Origin.File
	found := false
	for _, f := range r.s.Env.Sources {
		found = found || f == file
	}
	if !found {
		return Mutant{}, false
	}
	src, err := readSource(filepath.Join(r.s.Checkout.Dir, filepath.FromSlash(file)))
	if err != nil {
		return Mutant{}, false
	}
	r.sources[file] = src
	ms, err := ScriptMutants(file, src)
	if err != nil {
		return Mutant{}, false
	}
	return r.matching(ctx, t, ms)
}

// matching is the mutant among ms that t was made from: same origin, and a patch that is
// t's to the byte.
func (r *runner) matching(ctx context.Context, t *task.Task, ms []Mutant) (Mutant, bool) {
	for _, m := range ms {
		if m.Synthesizer != t.Origin.Synthesizer || m.Operator != t.Origin.Operator || m.Line != t.Origin.Line || m.Desc != t.Origin.Description {
			continue
		}
		v := &verdict{m: m}
		if r.makePatch(ctx, v) && v.patch == t.Patch {
			return m, true
		}
	}
	return Mutant{}, false
}
