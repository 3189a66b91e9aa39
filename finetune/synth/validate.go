package synth

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/frognano/frognano/finetune/env"
	"github.com/frognano/frognano/finetune/task"
	"github.com/frognano/frognano/internal/atomicfile"
	"github.com/frognano/frognano/internal/lazyregexp"
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

// runOutcome is what a candidate's runs decided: shared by the mutants' verdicts and the
// plain patches' (history, model, combined).
type runOutcome struct {
	reason     string // empty: accepted
	failToPass []string
	passToPass []string
	output     map[string]string // failing tests' output
}

// verdict is what validation decided about one mutant.
type verdict struct {
	m Mutant
	runOutcome
	distance int
	patch    string
	seconds  float64 // the validation time charged to this candidate
	// screenedOnly: accepted by the switch and left unconfirmed (Options.LazyConfirm).
	screenedOnly bool
	// confirmSeconds is the part of seconds spent confirming a survivor of the screen as a
	// plain patch (0 for a mutant the screen rejected or could not screen).
	confirmSeconds float64
	// screenedRun: a script suite's screen ran this mutant (its failToPass say which test
	// files the confirmation must run besides the importing ones).
	screenedRun bool
}

// screen runs every mutant of a batch through switched test binaries on c. One overlay
// holds them all (each mutated file once, with every mutant of it behind the switch, and a
// switch variable per package); one sandbox command builds the test binaries of every
// package concerned, in as few go invocations as the binaries' names allow, so a package
// is compiled once for the whole batch whichever test binaries it goes into. Then two
// sandbox commands run them: every mutant against its own package's tests, then the
// mutants those missed, and those of packages without tests of their own, against the
// tests of the packages that import them. What screen returns for a mutant is a filter
// only: survivors are confirmed as plain patches. A mutant missing from the result could
// not be screened (a build failure no mutant explains, a clean run that failed) and must
// be checked as a plain patch.
func (r *runner) screen(ctx context.Context, c *env.Copy, ms []Mutant) map[int]*verdict {
	out := map[int]*verdict{}
	live := append([]Mutant(nil), ms...)
	r.round++
	dir := fmt.Sprintf(".frognano-switch/%d", r.round)
	// Written by the sandbox's user, who cannot write where frognano laid the overlay.
	binDir := fmt.Sprintf(".frognano-bin/%d", r.round)
	var bins map[string]string
	for attempt := 0; attempt < 4 && len(live) > 0; attempt++ {
		overlay, lines, err := r.writeOverlay(c, dir, live)
		if err != nil {
			return out
		}
		var script string
		script, bins = r.buildScript(binDir, overlay, r.binaryPackages(live))
		res, err := c.Run(ctx, script, 10*time.Minute)
		if err != nil {
			return out
		}
		if res.ExitCode == 0 {
			break
		}
		bins = nil
		bad := blame(res.Stdout+res.Stderr, lines)
		if len(bad) == 0 {
			return out // not the mutants' fault: leave them to the plain check
		}
		var keep []Mutant
		for _, m := range live {
			if bad[m.ID] {
				out[m.ID] = &verdict{m: m, runOutcome: runOutcome{reason: RejectCompile}}
			} else {
				keep = append(keep, m)
			}
		}
		live = keep
	}
	if bins == nil {
		return out
	}
	// First each mutant against its own package's tests.
	var own []runJob
	byPkg := map[string][]int{}
	for _, m := range live {
		byPkg[m.Package] = append(byPkg[m.Package], m.ID)
	}
	for _, pkg := range sortedKeys(byPkg) {
		if bin, ok := bins[pkg]; ok {
			own = append(own, runJob{pkg: pkg, bin: bin, ids: byPkg[pkg]})
		}
	}
	results := r.runJobs(ctx, c, binDir+"/own", own, nil)
	var wider []Mutant // still to run against the importers' tests
	for _, m := range live {
		v := &verdict{m: m, runOutcome: runOutcome{reason: RejectSurvived}}
		if _, ok := bins[m.Package]; ok {
			res, ran := results[m.Package][m.ID]
			if !ran {
				continue // not run: the plain check decides
			}
			switch f := failing(res.Results, r.selected(m.Package)); {
			case res.timedOut || hung(res.Results):
				v.reason = RejectTimeout
			case len(f) > 0:
				v.reason, v.failToPass = "", f
			}
		}
		out[m.ID] = v
		if v.reason == RejectSurvived {
			wider = append(wider, m)
		}
	}
	// The packages whose tests build a survivor's package may still notice it: their test
	// binaries hold the same switched packages.
	byDep := map[string][]int{}
	for _, m := range wider {
		for _, dep := range r.s.Env.Affected(m.Package)[1:] {
			if _, ok := bins[dep]; ok {
				byDep[dep] = append(byDep[dep], m.ID)
			}
		}
	}
	var deps []runJob
	for _, dep := range sortedKeys(byDep) {
		deps = append(deps, runJob{pkg: dep, bin: bins[dep], ids: byDep[dep]})
	}
	// A binary whose clean run the first command made (the same file, moments ago) is not
	// run clean again: its mutants get the hang limit measured then.
	dres := r.runJobs(ctx, c, binDir+"/deps", deps, results)
	for _, m := range wider {
		v := out[m.ID]
		for _, dep := range r.s.Env.Affected(m.Package)[1:] {
			if _, ok := bins[dep]; !ok {
				continue
			}
			res, ran := dres[dep][m.ID]
			if !ran {
				delete(out, m.ID) // not screened: the plain check decides
				break
			}
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
	return out
}

// binaryPackages are the packages whose test binaries screen ms: the mutated packages and
// those whose tests build them, each only if it has tests to run.
func (r *runner) binaryPackages(ms []Mutant) []string {
	set := map[string]bool{}
	for _, m := range ms {
		for _, p := range r.s.Env.Affected(m.Package) {
			if len(r.selected(p)) > 0 {
				set[p] = true
			}
		}
	}
	return sortedKeys(set)
}

// buildScript is the sandbox command that builds the switched test binaries of pkgs under
// binDir, and where each lands. `go test -c -o dir/` names a binary after the last element
// of its import path: the packages whose names are unique (and not a major-version suffix,
// which go drops) share one go invocation per module, the others get one each. Each
// module's binaries are built in its folder (Env.InModules): the overlay names files by
// absolute path, so a mutant of a module another one requires is switched there too.
func (r *runner) buildScript(binDir, overlay string, pkgs []string) (string, map[string]string) {
	count := map[string]int{}
	for _, p := range pkgs {
		count[path.Base(p)]++
	}
	gc := ""
	// Every compiler error of the repository's packages, not the first ten: blame needs them.
	for _, m := range r.s.Env.Modules {
		gc += " -gcflags=" + env.ShellQuote(m.Path+"/...=-e")
	}
	if len(r.s.Env.Modules) == 0 && r.s.Env.Module != "" {
		gc = " -gcflags=" + env.ShellQuote(r.s.Env.Module+"/...=-e")
	}
	build := fmt.Sprintf("go test -c -vet=off%s -overlay %s", gc, env.ShellQuote(overlay))
	bins := map[string]string{}
	var shared, single []string
	for _, p := range pkgs {
		base := path.Base(p)
		if count[base] == 1 && !majorVersion.MatchString(base) && base != "." {
			shared = append(shared, p)
			bins[p] = binDir + "/" + base + ".test"
		} else {
			bins[p] = fmt.Sprintf("%s/single/%d.test", binDir, len(single))
			single = append(single, p)
		}
	}
	var s strings.Builder
	fmt.Fprintf(&s, "top=\"$PWD\"\nmkdir -p %s/single || exit 1\nrc=0\n", env.ShellQuote(binDir))
	if len(shared) > 0 {
		fmt.Fprintf(&s, "(%s) || rc=1\n", r.s.Env.InModules(shared, func(args string) string {
			return fmt.Sprintf("%s -o \"$top\"/%s/ %s", build, env.ShellQuote(binDir), args)
		}))
	}
	for _, p := range single {
		fmt.Fprintf(&s, "(%s) || rc=1\n", r.s.Env.InModules([]string{p}, func(args string) string {
			return fmt.Sprintf("%s -o \"$top\"/%s %s", build, env.ShellQuote(bins[p]), args)
		}))
	}
	s.WriteString("exit $rc\n")
	return s.String(), bins
}

var majorVersion = lazyregexp.New(`^v[0-9]+$`)

// mutantRun is one run of a switched test binary.
type mutantRun struct {
	env.Results
	timedOut bool
	// stopped: ended by frognano at its first failing test (a subtest's failure already
	// fails its test; -test.failfast stops only tests not yet started).
	stopped bool
	// limit is the time the run was allowed (hangLimit of the job's clean run; for the
	// clean run itself, testTimeout).
	limit time.Duration
	// hang, of a clean run: the limit it set for its binary's mutants.
	hang time.Duration
}

// runJob is one switched test binary (of pkg, at bin in the copy) to run once per id.
type runJob struct {
	pkg, bin string
	ids      []int
}

// Hang limit of a mutant's run: hangFactor times its job's clean run, measured in the same
// sandbox command just before (so at the same load), plus hangFloor, and never more than
// testTimeout. A mutant that does not finish within it is rejected as hanging (RejectTimeout)
// without a plain check: one that only slows its package's tests past the limit and then
// fails one is lost, the price of not waiting up to --package-timeout for every mutant that
// loops forever.
const (
	hangFactor = 3
	hangFloor  = 2 * time.Second
)

// runJobs runs each job's binary (its package's selected tests) once clean and once per
// id, all in one sandbox command: a sandbox start, a login shell and the go command's own
// start per mutant would cost more than most runs. Each run has its own time limit (the
// clean run testTimeout, a mutant's the hang limit above) and a cap on the output it may
// write. A mutant's run stops at its first failing test (-test.failfast): one failure
// kills it, so its FAIL_TO_PASS in the result is that test only, and the tests after it
// did not run (the plain confirmation runs them all and sets the task's exact sets). A job
// whose clean run does not pass every selected test is left out of the result (by
// package, then id): there the switch proves nothing. A job whose binary has its clean run
// in clean (an earlier result of runJobs on the same binaries) is not run clean again: it
// reuses that run and its hang limit.
func (r *runner) runJobs(ctx context.Context, c *env.Copy, outDir string, jobs []runJob, clean map[string]map[int]mutantRun) map[string]map[int]mutantRun {
	out := map[string]map[int]mutantRun{}
	if len(jobs) == 0 {
		return out
	}
	var script strings.Builder
	// The go command's cached test2json, run without the go command's start each time.
	fmt.Fprintf(&script, "T2J=(go tool test2json); P=\"$(go tool -n test2json 2>/dev/null)\" && [ -x \"$P\" ] && T2J=(\"$P\")\n")
	// Microseconds, from bash's clock (either decimal separator) or date's.
	script.WriteString("now() { local t=${EPOCHREALTIME//[.,]/}; [ -n \"$t\" ] || t=$(( $(date +%s%N) / 1000 )); echo \"$t\"; }\n")
	// stop ends the run whose pid file is $1 (written just after its start, so almost
	// surely there by the time the run has printed a failure).
	script.WriteString("stop() { local p; p=$(cat \"$1\" 2>/dev/null); [ -n \"$p\" ] || { sleep 0.1; p=$(cat \"$1\" 2>/dev/null); }; [ -n \"$p\" ] && kill -TERM \"$p\" 2>/dev/null; }\n")
	var limit time.Duration
	for j, job := range jobs {
		timeout := r.testTimeout(job.pkg)
		o := fmt.Sprintf("%s/%d", outDir, j)
		// The fail events that end a mutant's run: a selected test's or one of its
		// subtests' (a subtest's failure fails its test). Written by frognano, outside the
		// folders the sandbox's user writes.
		watch := fmt.Sprintf(".frognano-watch/%s/%d", strings.ReplaceAll(outDir, "/", "_"), j)
		if err := atomicfile.Write(c.Path(watch), failEvents(job.pkg, names(r.selected(job.pkg))), 0o644); err != nil {
			return out
		}
		fmt.Fprintf(&script, "mkdir -p %s && cd %s || exit 1\n", env.ShellQuote(c.Path(o)), env.ShellQuote(c.Path(r.s.Env.Packages[job.pkg].Dir)))
		run := env.ShellQuote(env.RunRegexp(names(r.selected(job.pkg))))
		prev, reuse := clean[job.pkg][0]
		for _, id := range append([]int{0}, job.ids...) {
			f := env.ShellQuote(c.Path(fmt.Sprintf("%s/%d", o, id)))
			if id == 0 && reuse {
				fmt.Fprintf(&script, "lim=%d\n", prev.hang.Milliseconds())
			} else if id == 0 {
				fmt.Fprintf(&script, "t0=$(now)\n(ulimit -f 65536; %s=0 timeout -k 2 %d \"${T2J[@]}\" -p %s %s -test.v=test2json -test.count=1 -test.timeout=%s -test.run=%s >%s.json 2>&1); echo $? >%s.rc\n",
					EnvMutant, int((timeout + 10*time.Second).Seconds()), env.ShellQuote(job.pkg), env.ShellQuote(c.Path(job.bin)), timeout, run, f, f)
				// The mutants' limit, in milliseconds (testTimeout's when the clock failed).
				fmt.Fprintf(&script, "t1=$(now); lim=%d; [ -n \"$t0\" ] && [ -n \"$t1\" ] && lim=$(( (t1 - t0) / 1000 * %d + %d )); [ \"$lim\" -le %d ] || lim=%d; echo \"$lim\" >%s\n",
					timeout.Milliseconds(), hangFactor, hangFloor.Milliseconds(), timeout.Milliseconds(), timeout.Milliseconds(), env.ShellQuote(c.Path(o+"/limit")))
			} else {
				// The run in the background (its pid: timeout's, which passes a TERM on to
				// its process group), its events through tee into the file, and grep
				// watching them for the first failure of a selected test.
				fmt.Fprintf(&script, "(ulimit -f 65536; (%s=%d timeout -k 2 $(( lim / 1000 + 10 )) \"${T2J[@]}\" -p %s %s -test.v=test2json -test.count=1 -test.failfast -test.timeout=${lim}ms -test.run=%s 2>&1 & echo $! >%s.pid; wait $!; echo $? >%s.rc) | tee %s.json | { grep -m1 -F -f %s >%s.stop && stop %s.pid; cat >/dev/null; })\n",
					EnvMutant, id, env.ShellQuote(job.pkg), env.ShellQuote(c.Path(job.bin)), run, f, f, f, env.ShellQuote(c.Path(watch)), f, f)
			}
			limit += timeout + 15*time.Second
		}
	}
	if _, err := c.Run(ctx, script.String(), limit+time.Minute); err != nil {
		return out
	}
	for j, job := range jobs {
		runs := map[int]mutantRun{}
		timeout := r.testTimeout(job.pkg)
		hang := timeout
		selected := r.selected(job.pkg)
		prev, reuse := clean[job.pkg][0]
		if reuse {
			hang, runs[0] = prev.hang, prev
		} else if b, err := os.ReadFile(c.Path(fmt.Sprintf("%s/%d/limit", outDir, j))); err == nil {
			if ms, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				hang = time.Duration(ms) * time.Millisecond
			}
		}
		for _, id := range append([]int{0}, job.ids...) {
			if id == 0 && reuse {
				continue
			}
			f := fmt.Sprintf("%s/%d/%d", outDir, j, id)
			rc, err := os.ReadFile(c.Path(f + ".rc"))
			if err != nil {
				continue
			}
			js, _ := os.ReadFile(c.Path(f + ".json"))
			code := strings.TrimSpace(string(rc))
			run := mutantRun{Results: env.ParseGoTestJSON(js), timedOut: code == "124" || code == "137", limit: hang}
			if id == 0 {
				run.limit, run.hang = timeout, hang
			} else if ev, err := os.ReadFile(c.Path(f + ".stop")); err == nil && len(ev) > 0 {
				stopped(&run, job.pkg, ev, selected)
			}
			runs[id] = run
		}
		clean, ok := runs[0]
		if !ok || len(failing(clean.Results, selected)) > 0 || len(passing(clean.Results, selected)) != len(selected) {
			continue
		}
		out[job.pkg] = runs
	}
	return out
}

// failEvents are the lines (for grep -F) that begin test2json's fail event of each of
// tests (names in pkg) or of one of its subtests, as test2json writes them.
func failEvents(pkg string, tests []string) []byte {
	var b strings.Builder
	p, _ := json.Marshal(pkg)
	for _, t := range tests {
		n, _ := json.Marshal(t)
		fmt.Fprintf(&b, "\"Action\":\"fail\",\"Package\":%s,\"Test\":%s,\n", p, n)
		fmt.Fprintf(&b, "\"Action\":\"fail\",\"Package\":%s,\"Test\":%s/\n", p, n[:len(n)-1])
	}
	return []byte(b.String())
}

// stopped makes run what it says once its watcher ended it at ev, the first fail event
// of a selected test (or of one of its subtests): that test failed; the tests still
// running when it was killed, which the stream leaves unfinished (read as failed), did not
// end, so they are neither failing nor passing; and the run did not hang.
func stopped(run *mutantRun, pkg string, ev []byte, selected []string) {
	var e struct{ Test string }
	if json.Unmarshal(ev, &e) != nil || e.Test == "" {
		return
	}
	first := env.TestID(pkg, strings.SplitN(e.Test, "/", 2)[0])
	if !slices.Contains(selected, first) {
		return
	}
	tests := map[string]env.Result{}
	for id, t := range run.Tests {
		if id == first || t.Status == env.Pass || t.Status == env.Skip || !slices.Contains(selected, id) {
			tests[id] = t
		}
	}
	tests[first] = env.Result{Status: env.Fail}
	run.Tests, run.timedOut, run.stopped = tests, false, true
}

// writeOverlay lays the switched files of ms and each package's switch variable into the
// copy (out of the packages' folders, so go never reads them as sources) and returns the
// overlay file and where each mutant's copy lies, by the overlay file's name.
func (r *runner) writeOverlay(c *env.Copy, dir string, ms []Mutant) (string, map[string]map[int]lineRange, error) {
	byFile := map[string][]Mutant{}
	pkgOf := map[string]string{}
	for _, m := range ms {
		byFile[m.File] = append(byFile[m.File], m)
		pkgOf[m.File] = m.Package
	}
	replace := map[string]string{}
	lines := map[string]map[int]lineRange{}
	pkgName := map[string]string{} // import path → package name
	for _, file := range sortedKeys(byFile) {
		src := r.sources[file]
		out, where, err := switchFile(file, src, byFile[file])
		if err != nil {
			return "", nil, err
		}
		if _, ok := pkgName[pkgOf[file]]; !ok {
			pkgName[pkgOf[file]] = packageName(src)
		}
		name := strings.ReplaceAll(file, "/", "__")
		dst := c.Path(dir + "/" + name)
		if err := atomicfile.Write(dst, out, 0o644); err != nil {
			return "", nil, err
		}
		replace[c.Path(file)] = dst
		lines[name] = where // the compiler names the overlay's file
	}
	for i, pkg := range sortedKeys(pkgName) {
		sw := c.Path(fmt.Sprintf("%s/frognano_switch_%d.go", dir, i))
		if err := atomicfile.Write(sw, []byte(switchDecl(pkgName[pkg])), 0o644); err != nil {
			return "", nil, err
		}
		replace[c.Path(path.Join(r.s.Env.Packages[pkg].Dir, "frognano_mutant_switch.go"))] = sw
	}
	b, _ := json.Marshal(map[string]any{"Replace": replace})
	ov := c.Path(dir + "/overlay.json")
	return ov, lines, atomicfile.Write(ov, b, 0o644)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

var errLine = lazyregexp.New(`(?m)^\S*?([^/\s]+\.go):(\d+):\d+: `)

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

// testTimeout is how long a package's switched tests may run: the clean run's limit, and
// the most a mutant's hang limit (runJobs) may be: generously more than on the clean
// commit when the environment was made, at most the package limit.
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

// outcome fills v from a plain run's results over the selected tests ids: a run that timed
// out or hung is rejected, and so is one where none of ids failed (for ifNone); true when v
// has its FAIL_TO_PASS and PASS_TO_PASS tests and their output.
func (v *runOutcome) outcome(results env.Results, ids []string, timedOut bool, ifNone string) bool {
	if timedOut || hung(results) {
		v.reason = RejectTimeout
		return false
	}
	v.failToPass, v.passToPass = failing(results, ids), passing(results, ids)
	if len(v.failToPass) == 0 {
		v.reason = ifNone
		return false
	}
	v.output = results.Output
	return true
}

func hung(res env.Results) bool {
	for _, t := range res.Tests {
		if t.Status == env.Hung {
			return true
		}
	}
	return false
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

// plainCommand runs the tests of pkgs (all when the repository names its own command),
// each in its module's folder, without the tests that are flaky, failing or hang on the
// clean commit.
func (r *runner) plainCommand(pkgs []string) string {
	if r.s.Env.Kind == env.KindCommand {
		return r.s.Env.Command
	}
	skip := ""
	if len(r.excluded) > 0 {
		skip = "-skip=" + env.ShellQuote(env.RunRegexp(r.excluded))
	}
	if pkgs == nil {
		pkgs = []string{} // the named packages, never ./...
	}
	return r.s.Env.InModules(pkgs, func(args string) string {
		return fmt.Sprintf("go test -json -count=1 -vet=off -timeout=%s %s %s", r.packageTimeout(), skip, args)
	})
}

// naive validates m the way SWE-smith and go-mutesting's drivers do: the whole suite on a
// fresh copy with the patch, for the benchmark.
func (r *runner) naive(ctx context.Context, m Mutant) (accepted bool, err error) {
	if r.s.Detection.Script() {
		return r.naiveScript(ctx, m)
	}
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
