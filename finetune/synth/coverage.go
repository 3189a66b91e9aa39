package synth

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/frognano/frognano/finetune/env"
	"github.com/frognano/frognano/internal/atomicfile"
	"github.com/frognano/frognano/internal/cachedir"
)

// Coverage: a mutant in code that no passing test runs can never be a task, so it is not
// worth a place in a switched build or a run. Before screening, the suite's passing tests
// run once with Go's coverage over every package of the repository's modules (-coverpkg;
// each module's tests in its folder, the profiles merged), and candidates
// whose change lies outside every block those tests ran are set aside as not covered (as
// Stryker reports "no coverage" mutants): counted, never validated. The profile is cached
// by commit, as the environment is.

// RejectUncovered is why a candidate in code no passing test runs is not validated.
const RejectUncovered = "no passing test runs it"

// coverBlock is a run of statements, in 1-based lines and byte columns, as go's profile
// gives them.
type coverBlock struct {
	StartLine, StartCol, EndLine, EndCol int
}

// coverage is the blocks the passing tests ran, by file (slash path from the top).
type coverage struct {
	Version int                     `json:"version"`
	Commit  string                  `json:"commit"`
	Files   map[string][]coverBlock `json:"files"` // every instrumented file, ran blocks only
	Seconds float64                 `json:"seconds"`
}

const coverageVersion = 1

// coverage runs (or reads from the cache) the passing tests' coverage; nil when it cannot
// be had, and then nothing is set aside.
func (r *runner) coverage(ctx context.Context) *coverage {
	e := r.s.Env
	mods := e.Modules
	if len(mods) == 0 && e.Module != "" {
		mods = []env.Module{{Path: e.Module, Dir: "."}}
	}
	if e.Kind != env.KindGo || len(mods) == 0 {
		return nil
	}
	dir := r.opts.Env.CacheDir
	if dir == "" {
		dir = filepath.Join(cachedir.Dir(), "finetune", "env")
	}
	key := sha256.Sum256([]byte(fmt.Sprintf("%s|%s|%v", r.s.Checkout.Repo, moduleKey(mods), r.excluded)))
	cachePath := filepath.Join(dir, "coverage", r.s.Checkout.Commit+"-"+hex.EncodeToString(key[:6])+".json")
	if b, err := os.ReadFile(cachePath); err == nil {
		var cv coverage
		if json.Unmarshal(b, &cv) == nil && cv.Version == coverageVersion && cv.Commit == r.s.Checkout.Commit {
			cv.Seconds = 0 // cached: cost nothing this time
			return &cv
		}
	}
	start := time.Now()
	cv, err := r.runCoverage(ctx, mods)
	if err != nil {
		return nil
	}
	cv.Seconds = time.Since(start).Seconds()
	if b, err := json.Marshal(cv); err == nil {
		atomicfile.Write(cachePath, b, 0o644) // a cache: a failed write costs the next run only
	}
	return cv
}

// moduleKey names the modules in the coverage cache's key: one module at the top keeps the
// key it had before modules were recorded.
func moduleKey(mods []env.Module) string {
	if len(mods) == 1 && mods[0].Dir == "." && mods[0].Work == "" {
		return mods[0].Path
	}
	var parts []string
	for _, m := range mods {
		if p := m.Path + "=" + m.Dir; m.Work != "" {
			parts = append(parts, p+"@"+m.Work) // a workspace can build it differently
		} else {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, ",")
}

func (r *runner) runCoverage(ctx context.Context, mods []env.Module) (*coverage, error) {
	e := r.s.Env
	var pkgs []string
	for _, p := range sortedKeys(e.Packages) {
		if len(r.selected(p)) > 0 {
			pkgs = append(pkgs, p)
		}
	}
	if len(pkgs) == 0 {
		return nil, errors.New("no package with passing tests")
	}
	c, err := r.s.Copy(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	skip := ""
	if len(r.excluded) > 0 {
		skip = "-skip=" + env.ShellQuote(env.RunRegexp(r.excluded))
	}
	// Every module's packages, from every module's tests: a module's code may be run by
	// the tests of one that requires it (go warns of a pattern no test depends on, and
	// goes on).
	var coverpkg []string
	for _, m := range mods {
		coverpkg = append(coverpkg, m.Path+"/...")
	}
	// The profiles are written by the commands' user, into a folder of theirs, one per
	// module's run.
	const profDir = ".frognano-cover"
	n := 0
	cmd := "top=\"$PWD\"\nmkdir -p " + profDir + " && " + e.InModules(pkgs, func(args string) string {
		n++
		return fmt.Sprintf("go test -count=1 -vet=off -timeout=%s -covermode=set -coverpkg=%s -coverprofile=\"$top\"/%s/profile-%d %s %s >/dev/null",
			r.packageTimeout(), env.ShellQuote(strings.Join(coverpkg, ",")), profDir, n, skip, args)
	})
	res, err := c.Run(ctx, cmd, 4*r.packageTimeout()+5*time.Minute)
	if err != nil {
		return nil, err
	}
	if res.TimedOut {
		return nil, errors.New("coverage timed out")
	}
	cv := &coverage{Version: coverageVersion, Commit: r.s.Checkout.Commit, Files: map[string][]coverBlock{}}
	for i := 1; i <= n; i++ {
		b, err := readSource(c.Path(fmt.Sprintf("%s/profile-%d", profDir, i)))
		if err != nil {
			return nil, err
		}
		cv.add(b, mods)
	}
	return cv, nil
}

// parseCoverProfile reads go's profile ("mode: set", then "path/file.go:L.C,L.C stmts
// count" lines), keeping the files of mods (by path from the top) and their ran blocks.
func parseCoverProfile(b []byte, mods []env.Module, commit string) *coverage {
	cv := &coverage{Version: coverageVersion, Commit: commit, Files: map[string][]coverBlock{}}
	cv.add(b, mods)
	return cv
}

// add merges a profile into cv: a block ran when it ran in some module's tests. A file
// belongs to the module whose path is its longest prefix (a nested module's path may lie
// under its parent's).
func (cv *coverage) add(b []byte, mods []env.Module) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		colon := strings.LastIndex(line, ":")
		if colon < 0 || strings.HasPrefix(line, "mode:") {
			continue
		}
		file, rest := line[:colon], line[colon+1:]
		rel, ok := "", false
		best := -1
		for _, m := range mods {
			if r, found := strings.CutPrefix(file, m.Path+"/"); found && len(m.Path) > best {
				rel, ok, best = path.Join(m.Dir, r), true, len(m.Path)
			}
		}
		if !ok {
			continue
		}
		var blk coverBlock
		var stmts, count int
		if _, err := fmt.Sscanf(rest, "%d.%d,%d.%d %d %d", &blk.StartLine, &blk.StartCol, &blk.EndLine, &blk.EndCol, &stmts, &count); err != nil {
			continue
		}
		if _, seen := cv.Files[rel]; !seen {
			cv.Files[rel] = nil
		}
		if count > 0 {
			cv.Files[rel] = append(cv.Files[rel], blk)
		}
	}
}

// covers is whether some ran block overlaps m's change in src. A file the profile does not
// name (not instrumented) counts as covered: nothing is known against it.
func (cv *coverage) covers(m Mutant, src []byte) bool {
	if cv == nil {
		return true
	}
	blocks, ok := cv.Files[m.File]
	if !ok {
		return true
	}
	sl, sc := lineCol(src, m.Start)
	el, ec := lineCol(src, max(m.End, m.Start+1)-1)
	for _, b := range blocks {
		// The block [start, end) and the change [(sl, sc), (el, ec+1)) overlap unless one
		// ends before the other starts.
		if before(b.EndLine, b.EndCol, sl, sc) || before(el, ec+1, b.StartLine, b.StartCol) {
			continue
		}
		return true
	}
	return false
}

// before is whether (l1, c1) <= (l2, c2).
func before(l1, c1, l2, c2 int) bool { return l1 < l2 || l1 == l2 && c1 <= c2 }

// lineCol is the 1-based line and byte column of offset off in src.
func lineCol(src []byte, off int) (int, int) {
	off = min(off, len(src))
	line := 1 + bytes.Count(src[:off], []byte{'\n'})
	return line, off - (bytes.LastIndexByte(src[:off], '\n') + 1) + 1
}
