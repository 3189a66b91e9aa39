package synth

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/frognano/frognano/finetune/task"
	"github.com/frognano/frognano/internal/lazyregexp"
)

// combineCandidates pair the store's single-bug tasks of the base commit (those of this run
// and earlier ones) whose patches touch different places: different functions, and no
// hunk of one within the other's context in a shared file. Each pair's patches are applied
// one after the other to the base (both must apply), and the result is a candidate with
// two bugs, validated again as a whole like any other. At most tries pairs, in the seed's
// order.
func (r *runner) combineCandidates(ctx context.Context, store *task.Store, sum *Summary, tries int) ([]*patchCandidate, error) {
	all, err := store.List()
	if err != nil {
		return nil, err
	}
	var pool []*task.Task
	for _, t := range all {
		if t.BaseCommit == r.s.Checkout.Commit && t.Features.Bugs <= 1 && t.Features.Synthesizer != SynthCombined {
			pool = append(pool, t)
		}
	}
	rng := rand.New(rand.NewPCG(r.opts.Seed, 0xc0b1))
	rng.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
	pool = pool[:min(len(pool), maxCombinePool)]
	var out []*patchCandidate
	for _, p := range pairOrder(pool) {
		if len(out) >= tries {
			break
		}
		a, b := pool[p[0]], pool[p[1]]
		sum.Candidates[SynthCombined]++
		pc := r.combine(ctx, a, b)
		if pc == nil {
			sum.reject(SynthCombined, RejectRevert) // the second patch does not apply after the first
			continue
		}
		out = append(out, pc)
	}
	return out, nil
}

// pairOrder is the order to try the pairs of pool that are apart in: first pairs that use
// each task at most once, so that the pairs spread over the pool (in plain order the first
// task would be in every pair), then the pairs left.
func pairOrder(pool []*task.Task) [][2]int {
	used := make([]bool, len(pool))
	tried := map[[2]int]bool{}
	var out [][2]int
	for pass := 0; pass < 2; pass++ {
		for i := range pool {
			for j := i + 1; j < len(pool); j++ {
				if tried[[2]int{i, j}] || (pass == 0 && (used[i] || used[j])) {
					continue
				}
				tried[[2]int{i, j}] = true
				if apart(pool[i], pool[j]) {
					used[i], used[j] = true, true
					out = append(out, [2]int{i, j})
				}
			}
		}
	}
	return out
}

// maxCombinePool bounds the tasks combined pairs are drawn from (the store grows run after
// run; the pairs of 200 tasks are plenty).
const maxCombinePool = 200

// apart says whether a and b change different functions and no overlapping lines.
func apart(a, b *task.Task) bool {
	if a.Origin.File == b.Origin.File && a.Origin.Function == b.Origin.Function {
		return false
	}
	ha, hb := hunks(a.Patch), hunks(b.Patch)
	for _, x := range ha {
		for _, y := range hb {
			if x.file == y.file && x.first <= y.last+1 && y.first <= x.last+1 {
				return false
			}
		}
	}
	return true
}

// hunk is the lines of the base one hunk of a patch covers, context included.
type hunk struct {
	file        string
	first, last int
}

var (
	hunkFile   = lazyregexp.New(`(?m)^--- a/(.+)$|^@@ -(\d+)(?:,(\d+))? `)
	patchPaths = lazyregexp.New(`(?m)^--- a/(.+)$`)
)

func hunks(patch string) []hunk {
	var out []hunk
	file := ""
	for _, m := range hunkFile.FindAllStringSubmatch(patch, -1) {
		if m[1] != "" {
			file = m[1]
			continue
		}
		first, _ := strconv.Atoi(m[2])
		n := 1
		if m[3] != "" {
			n, _ = strconv.Atoi(m[3])
		}
		out = append(out, hunk{file: file, first: first, last: first + n - 1})
	}
	return out
}

// combine is a and b applied one after the other to the base; nil when that fails.
func (r *runner) combine(ctx context.Context, a, b *task.Task) *patchCandidate {
	base := map[string][]byte{}
	for _, p := range []string{a.Patch, b.Patch} {
		for _, m := range patchPaths.FindAllStringSubmatch(p, -1) {
			src, err := readSource(filepath.Join(r.s.Checkout.Dir, filepath.FromSlash(m[1])))
			if err != nil {
				return nil
			}
			base[m[1]] = src
		}
	}
	both, err := applyPatches(ctx, base, a.Patch, b.Patch)
	if err != nil {
		return nil
	}
	var changes []task.Change
	for p, old := range base {
		if !bytes.Equal(old, both[p]) {
			changes = append(changes, task.Change{Path: p, Old: old, New: both[p]})
		}
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].Path < changes[j].Path })
	return &patchCandidate{synth: SynthCombined, changes: changes, bugs: max(a.Features.Bugs, 1) + max(b.Features.Bugs, 1),
		origin: task.Origin{Synthesizer: SynthCombined, File: a.Origin.File, Function: a.Origin.Function, Line: a.Origin.Line,
			Parts:       []string{a.ID, b.ID},
			Description: fmt.Sprintf("combines %s (%s) and %s (%s)", a.ID, a.Origin.Description, b.ID, b.Origin.Description)}}
}
