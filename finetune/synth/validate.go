package synth

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/frognano/frognano/finetune/env"
	"github.com/frognano/frognano/finetune/task"
	"github.com/frognano/frognano/internal/atomicfile"
)

// Reasons a candidate is rejected.
const (
	RejectCompile   = "does not compile"
	RejectSurvived  = "no test fails"
	RejectTimeout   = "tests hang"
	RejectBuild     = "plain patch does not build"
	RejectUnconfirm = "not confirmed by the plain patch"
	RejectPatch     = "patch does not apply both ways"
	RejectDuplicate = "duplicate"
)

// verdict is what validation decided about one mutant.
type verdict struct {
	m          Mutant
	reason     string // empty: accepted
	failToPass []string
	passToPass []string
	output     map[string]string // failing tests' output
	distance   int
	patch      string
	seconds    float64 // the validation time charged to this candidate
	// screenedOnly: accepted by the switch and left unconfirmed (Options.LazyConfirm).
	screenedOnly bool
	// confirmSeconds is the part of seconds spent confirming a survivor of the screen as a
	// plain patch (0 for a mutant the screen rejected or could not screen).
	confirmSeconds float64
}

// screen runs every mutant of one package through one switched test binary on c. What it
// returns for a mutant is a filter only: survivors are confirmed as plain patches. A
// mutant missing from the result could not be screened (the switch build failed in a way
// no mutant explains) and must be checked as a plain patch.
func (r *runner) screen(ctx context.Context, c *env.Copy, pkg string, ms []Mutant) map[int]*verdict {
	start := time.Now()
	out := map[int]*verdict{}
	info := r.s.Env.Packages[pkg]
	live := append([]Mutant(nil), ms...)
	r.round++
	dir := fmt.Sprintf(".frognano-switch/%d", r.round)
	// Written by the sandbox's user, who cannot write where frognano laid the overlay.
	bin := fmt.Sprintf(".frognano-bin/%d.test", r.round)
	var built bool
	var overlay string
	for attempt := 0; attempt < 4 && len(live) > 0; attempt++ {
		ov, lines, err := r.writeOverlay(c, dir, info, live)
		overlay = ov
		if err != nil {
			return out
		}
		res, err := c.Run(ctx, fmt.Sprintf("mkdir -p .frognano-bin && go test -c -vet=off -gcflags=-e -o %s -overlay %s %s",
			bin, env.ShellQuote(overlay), env.ShellQuote(pkg)), 10*time.Minute)
		if err != nil {
			return out
		}
		if res.ExitCode == 0 {
			built = true
			break
		}
		bad := blame(res.Stdout+res.Stderr, lines)
		if len(bad) == 0 {
			return out // not the mutants' fault: leave them to the plain check
		}
		var keep []Mutant
		for _, m := range live {
			if bad[m.ID] {
				out[m.ID] = &verdict{m: m, reason: RejectCompile}
			} else {
				keep = append(keep, m)
			}
		}
		live = keep
	}
	if !built {
		return out
	}
	selected := r.selected(pkg)
	ids := []int{0}
	for _, m := range live {
		ids = append(ids, m.ID)
	}
	t0 := time.Now()
	results, ok := r.runMutants(ctx, c, fmt.Sprintf("%d", r.round), pkg, c.Path(bin), ids)
	if !ok {
		return out
	}
	runShare := time.Since(t0).Seconds() / float64(len(ids))
	share := (time.Since(start).Seconds() - runShare*float64(len(ids)-1)) / float64(len(ms))
	var survivors []int
	for _, m := range live {
		res, ran := results[m.ID]
		if !ran {
			continue // not run: the plain check decides
		}
		v := &verdict{m: m, seconds: share + runShare}
		switch f := failing(res.Results, selected); {
		case res.timedOut || hung(res.Results):
			v.reason = RejectTimeout
		case len(f) == 0:
			v.reason = RejectSurvived
			survivors = append(survivors, m.ID)
		default:
			v.failToPass = f
		}
		out[m.ID] = v
	}
	// The switch ran this package's tests only: a survivor may still break a package whose
	// tests build it. Those packages' test binaries are built once with the same overlay and
	// run with each survivor; where that cannot be done, the plain check decides.
	var deps []string
	for _, p := range r.s.Env.Affected(pkg)[1:] {
		if len(r.selected(p)) > 0 {
			deps = append(deps, p)
		}
	}
	if len(deps) == 0 || len(survivors) == 0 {
		return out
	}
	t1 := time.Now()
	unscreen := func() map[int]*verdict {
		for _, id := range survivors {
			delete(out, id)
		}
		return out
	}
	for i, dep := range deps {
		dbin := fmt.Sprintf(".frognano-bin/%d.dep%d.test", r.round, i)
		res, err := c.Run(ctx, fmt.Sprintf("go test -c -vet=off -o %s -overlay %s %s", dbin, env.ShellQuote(overlay), env.ShellQuote(dep)), 10*time.Minute)
		if err != nil || res.ExitCode != 0 {
			return unscreen()
		}
		dres, ok := r.runMutants(ctx, c, fmt.Sprintf("%d.dep%d", r.round, i), dep, c.Path(dbin), append([]int{0}, survivors...))
		if !ok {
			return unscreen()
		}
		for _, id := range survivors {
			res, ran := dres[id]
			if !ran {
				return unscreen()
			}
			v := out[id]
			switch f := failing(res.Results, r.selected(dep)); {
			case res.timedOut || hung(res.Results):
				v.reason = RejectTimeout
			case len(f) > 0 && v.reason == RejectSurvived:
				v.reason, v.failToPass = "", f
			case len(f) > 0:
				v.failToPass = append(v.failToPass, f...)
			}
		}
	}
	extra := time.Since(t1).Seconds() / float64(len(survivors))
	for _, id := range survivors {
		out[id].seconds += extra
	}
	for id, v := range out {
		if v.seconds == 0 {
			out[id].seconds = share
		}
	}
	return out
}

// mutantRun is one run of a switched test binary.
type mutantRun struct {
	env.Results
	timedOut bool
}

// runMutants runs the switched test binary bin of pkg (its selected tests) once per id, all
// in one sandbox command: a sandbox start, a login shell and the go command's own start per
// mutant would cost more than most runs. Each run has its own time limit and a cap on the
// output it may write. It is false when the clean switch (id 0, which must come first)
// does not pass every selected test: then the switch proves nothing.
func (r *runner) runMutants(ctx context.Context, c *env.Copy, name, pkg, bin string, ids []int) (map[int]mutantRun, bool) {
	selected := r.selected(pkg)
	timeout := r.testTimeout(pkg)
	outDir := ".frognano-bin/" + name + ".out"
	var script strings.Builder
	// The go command's cached test2json, run without the go command's start each time.
	fmt.Fprintf(&script, "mkdir -p %s && cd %s || exit 1\nT2J=(go tool test2json); P=\"$(go tool -n test2json 2>/dev/null)\" && [ -x \"$P\" ] && T2J=(\"$P\")\n",
		env.ShellQuote(outDir), env.ShellQuote(r.s.Env.Packages[pkg].Dir))
	for _, id := range ids {
		o := env.ShellQuote(c.Path(fmt.Sprintf("%s/%d", outDir, id)))
		fmt.Fprintf(&script, "(ulimit -f 65536; %s=%d timeout -k 2 %d \"${T2J[@]}\" -p %s %s -test.v=test2json -test.count=1 -test.timeout=%s -test.run=%s >%s.json 2>&1); echo $? >%s.rc\n",
			EnvMutant, id, int((timeout + 10*time.Second).Seconds()), env.ShellQuote(pkg), env.ShellQuote(bin), timeout,
			env.ShellQuote(env.RunRegexp(names(selected))), o, o)
	}
	if _, err := c.Run(ctx, script.String(), time.Duration(len(ids))*(timeout+15*time.Second)+time.Minute); err != nil {
		return nil, false
	}
	out := map[int]mutantRun{}
	for _, id := range ids {
		rc, err := os.ReadFile(c.Path(fmt.Sprintf("%s/%d.rc", outDir, id)))
		if err != nil {
			continue
		}
		js, _ := os.ReadFile(c.Path(fmt.Sprintf("%s/%d.json", outDir, id)))
		code := strings.TrimSpace(string(rc))
		out[id] = mutantRun{env.ParseGoTestJSON(js), code == "124" || code == "137"}
	}
	clean, ok := out[0]
	if !ok || len(failing(clean.Results, selected)) > 0 || len(passing(clean.Results, selected)) != len(selected) {
		return nil, false
	}
	return out, true
}

// writeOverlay lays the switched files of ms and the switch variable into the copy (out of
// the package's folder, so go never reads them as sources) and returns the overlay file
// and where each mutant's copy lies, by file.
func (r *runner) writeOverlay(c *env.Copy, dir string, info env.Package, ms []Mutant) (string, map[string]map[int]lineRange, error) {
	byFile := map[string][]Mutant{}
	for _, m := range ms {
		byFile[m.File] = append(byFile[m.File], m)
	}
	replace := map[string]string{}
	lines := map[string]map[int]lineRange{}
	pkgName := ""
	for file, fms := range byFile {
		src := r.sources[file]
		out, where, err := switchFile(file, src, fms)
		if err != nil {
			return "", nil, err
		}
		if pkgName == "" {
			pkgName = packageName(src)
		}
		name := strings.ReplaceAll(file, "/", "__")
		dst := c.Path(dir + "/" + name)
		if err := atomicfile.Write(dst, out, 0o644); err != nil {
			return "", nil, err
		}
		replace[c.Path(file)] = dst
		lines[name] = where // the compiler names the overlay's file
	}
	sw := c.Path(dir + "/frognano_switch.go")
	if err := atomicfile.Write(sw, []byte(switchDecl(pkgName)), 0o644); err != nil {
		return "", nil, err
	}
	replace[c.Path(path.Join(info.Dir, "frognano_mutant_switch.go"))] = sw
	b, _ := json.Marshal(map[string]any{"Replace": replace})
	ov := c.Path(dir + "/overlay.json")
	return ov, lines, atomicfile.Write(ov, b, 0o644)
}

var errLine = regexp.MustCompile(`(?m)^\S*?([^/\s]+\.go):(\d+):\d+: `)

// blame is the mutants whose copies hold the compiler's errors; nil when an error lies
// outside every copy.
func blame(out string, lines map[string]map[int]lineRange) map[int]bool {
	bad := map[int]bool{}
	for _, m := range errLine.FindAllStringSubmatch(out, -1) {
		n, _ := strconv.Atoi(m[2])
		found := false
		for id, r := range lines[m[1]] {
			if n >= r.first && n <= r.last {
				bad[id], found = true, true
			}
		}
		if !found {
			return nil
		}
	}
	return bad
}

func packageName(src []byte) string {
	if m := regexp.MustCompile(`(?m)^package\s+(\w+)`).FindSubmatch(src); m != nil {
		return string(m[1])
	}
	return "main"
}

// selected are the tests of pkg that passed every time on the clean commit.
func (r *runner) selected(pkg string) []string {
	var out []string
	for _, id := range r.passing {
		if p, _ := env.SplitID(id); p == pkg {
			out = append(out, id)
		}
	}
	return out
}

// testTimeout is how long a package's tests may run with a mutant: generously more than
// on the clean commit (an infinite loop is a common mutant), at most the package limit.
func (r *runner) testTimeout(pkg string) time.Duration {
	t := time.Duration(r.s.Env.Packages[pkg].Seconds*20*float64(time.Second)) + 3*time.Second
	if limit := time.Duration(r.s.Env.PackageTimeout * float64(time.Second)); t > limit {
		t = limit
	}
	return t.Round(time.Second)
}

func names(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		_, out[i] = env.SplitID(id)
	}
	sort.Strings(out)
	return out
}

// failing are the ids that did not pass in res (failed, crashed or hung); a test that did
// not run at all (after a crash of its binary) is neither failing nor passing.
func failing(res env.Results, ids []string) []string {
	var out []string
	for _, id := range ids {
		if t, ok := res.Tests[id]; ok && t.Status != env.Pass && t.Status != env.Skip {
			out = append(out, id)
		}
	}
	return out
}

func passing(res env.Results, ids []string) []string {
	var out []string
	for _, id := range ids {
		if res.Tests[id].Status == env.Pass {
			out = append(out, id)
		}
	}
	return out
}

func hung(res env.Results) bool {
	for _, t := range res.Tests {
		if t.Status == env.Hung {
			return true
		}
	}
	return false
}

// confirm checks m as a plain patch on a fresh copy: the patch applies both ways, and the
// affected packages' tests (m's own, then every package whose tests build it) are run as
// go test runs them. This, not the switch, decides.
func (r *runner) confirm(ctx context.Context, v *verdict) {
	start := time.Now()
	defer func() { v.seconds += time.Since(start).Seconds() }()
	m := v.m
	if !r.makePatch(ctx, v) {
		return
	}
	c, err := r.s.Copy(ctx, map[string][]byte{m.File: m.Apply(r.sources[m.File])})
	if err != nil {
		v.reason = RejectBuild
		return
	}
	defer c.Close()
	affected := r.s.Env.Affected(m.Package)
	var ids []string
	for _, pkg := range affected {
		ids = append(ids, r.selected(pkg)...)
	}
	cmd := r.plainCommand(affected)
	res, err := c.Run(ctx, cmd, 4*r.packageTimeout()+time.Minute)
	if err != nil {
		v.reason = RejectBuild
		return
	}
	results := env.ParseGoTestJSON([]byte(res.Stdout))
	for _, pkg := range affected {
		if why, ok := results.Broken[pkg]; ok && why == "build failed" {
			v.reason = RejectBuild
			return
		}
	}
	if res.TimedOut || hung(results) {
		v.reason = RejectTimeout
		return
	}
	v.failToPass = failing(results, ids)
	v.passToPass = passing(results, ids)
	if len(v.failToPass) == 0 {
		v.reason = RejectUnconfirm
		return
	}
	v.output = results.Output
	for _, id := range v.failToPass {
		if p, _ := env.SplitID(id); p != m.Package {
			v.distance = 1
		}
	}
	v.reason = ""
}

// makePatch sets v's patch, proven to apply both ways, or rejects v.
func (r *runner) makePatch(ctx context.Context, v *verdict) bool {
	old := r.sources[v.m.File]
	changes := []task.Change{{Path: v.m.File, Old: old, New: v.m.Apply(old)}}
	patch, err := task.MakePatch(ctx, changes)
	if err == nil {
		err = task.CheckPatch(ctx, patch, changes)
	}
	if err != nil {
		v.reason = RejectPatch
		return false
	}
	v.patch = patch
	return true
}

func (r *runner) packageTimeout() time.Duration {
	return time.Duration(r.s.Env.PackageTimeout * float64(time.Second))
}

// plainCommand runs the tests of pkgs (all when the repository names its own command)
// without the tests that are flaky, failing or hang on the clean commit.
func (r *runner) plainCommand(pkgs []string) string {
	if r.s.Env.Kind == env.KindCommand {
		return r.s.Env.Command
	}
	q := make([]string, len(pkgs))
	for i, p := range pkgs {
		q[i] = env.ShellQuote(p)
	}
	skip := ""
	if len(r.excluded) > 0 {
		skip = "-skip=" + env.ShellQuote(env.RunRegexp(r.excluded))
	}
	return fmt.Sprintf("go test -json -count=1 -vet=off -timeout=%s %s %s", r.packageTimeout(), skip, strings.Join(q, " "))
}

// naive validates m the way SWE-smith and go-mutesting's drivers do: the whole suite on a
// fresh copy with the patch, for the benchmark.
func (r *runner) naive(ctx context.Context, m Mutant) (accepted bool, err error) {
	old := r.sources[m.File]
	c, err := r.s.Copy(ctx, map[string][]byte{m.File: m.Apply(old)})
	if err != nil {
		return false, err
	}
	defer c.Close()
	var all []string
	for p := range r.s.Env.Packages {
		all = append(all, p)
	}
	sort.Strings(all)
	res, err := c.Run(ctx, r.plainCommand(all), 4*r.packageTimeout()+time.Minute)
	if err != nil {
		return false, err
	}
	results := env.ParseGoTestJSON([]byte(res.Stdout))
	if res.TimedOut || hung(results) {
		return false, nil
	}
	for _, why := range results.Broken {
		if why == "build failed" {
			return false, nil
		}
	}
	return len(failing(results, r.passing)) > 0, nil
}
