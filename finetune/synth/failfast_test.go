package synth

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/frognano/frognano/finetune/env"
	"github.com/frognano/frognano/finetune/internal/fixture"
	"github.com/frognano/frognano/finetune/task"
)

// fastSrc has mutants that two tests catch (Pos), two that fail a test and then hang
// another (Count: n < 0 → n >= 0, or the early return's condition inverted, fail
// TestCountZero, then loop forever in TestCountNeg), and some that hang in the first test
// they reach (Count without n--, or with n++).
const fastSrc = `package ff

// Pos reports whether n is positive.
func Pos(n int) bool {
	return n > 0
}

// Count is how many steps take n down to 0, and -1 for a negative n.
func Count(n int) int {
	if n < 0 {
		return -1
	}
	steps := 0
	for n != 0 {
		n--
		steps++
	}
	return steps
}
`

const fastTest = `package ff

import "testing"

func TestA(t *testing.T) {
	if Pos(0) || !Pos(1) || Pos(-1) {
		t.Fatal("A")
	}
}

func TestB(t *testing.T) {
	if Pos(0) || !Pos(1) || Pos(-1) {
		t.Fatal("B")
	}
}

func TestCountZero(t *testing.T) {
	if Count(0) != 0 || Count(2) != 2 {
		t.Fatal(Count(0))
	}
}

func TestCountNeg(t *testing.T) {
	if Count(-2) != -1 {
		t.Fatal(Count(-2))
	}
}
`

// TestScreenFailFast: a mutant's switched run stops at its first failing test, so a
// screened candidate's FAIL_TO_PASS is that test alone, and the plain confirmation sets the
// exact set (TestA and TestB for every mutant of Pos), eager or lazy. A mutant that fails a
// test and then hangs another passes the screen but never becomes a task: its plain
// confirmation rejects it as hanging, as the naive way does.
func TestScreenFailFast(t *testing.T) {
	t.Parallel()
	repo := fixture.Repo(t, map[string]string{
		"go.mod":        fixture.GoMod("example.com/ff"),
		"ff/ff.go":      fastSrc,
		"ff/ff_test.go": fastTest,
	})
	ctx := context.Background()
	const pkg = "example.com/ff/ff"
	both := []string{pkg + " TestA", pkg + " TestB"}
	isFailHang := func(o task.Origin) bool {
		return o.Function == "Count" && (strings.Contains(o.Description, "< became >=") || strings.Contains(o.Description, "inverted the condition"))
	}

	// Lazy: the screen's sets, then the confirmation's.
	opts := testOptions(t)
	opts.LazyConfirm = true
	sum, err := Run(ctx, repo, opts)
	if err != nil {
		t.Fatal(err)
	}
	store, _ := task.Open(opts.StoreDir)
	screened, _ := store.ListScreened()
	t.Logf("lazy: screened %d, rejected %v", sum.Screened, sum.Rejected)
	failHang := 0
	for _, sc := range screened {
		t.Logf("screened %s %s: %v", sc.Origin.Function, sc.Origin.Description, sc.FailToPass)
		if len(sc.FailToPass) != 1 {
			t.Errorf("screened %s %s: FAIL_TO_PASS %v, want the first failing test alone", sc.Origin.Function, sc.Origin.Description, sc.FailToPass)
		}
		if isFailHang(sc.Origin) {
			failHang++
		}
	}
	if failHang != 2 {
		t.Errorf("%d of the 2 mutants that fail TestCountZero and then hang screened: a run did not stop at its first failure", failHang)
	}
	if sum.Rejected[RejectTimeout] == 0 {
		t.Errorf("no mutant rejected as hanging by the screen: %v", sum.Rejected)
	}
	csum, err := Confirm(ctx, repo, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	if csum.Rejected[RejectTimeout] != 2 || csum.Valid != len(screened)-2 {
		t.Errorf("confirmation: %d valid of %d, rejected %v; want all but the 2 that hang after a failure", csum.Valid, len(screened), csum.Rejected)
	}
	checkSets := func(how string, tasks []*task.Task) {
		pos := 0
		for _, tk := range tasks {
			if isFailHang(tk.Origin) {
				t.Errorf("%s: a task of the mutant that hangs: %+v", how, tk.Origin)
			}
			if tk.Origin.Function == "Pos" {
				pos++
				if !slices.Equal(tk.FailToPass, both) {
					t.Errorf("%s: task %s %s: FAIL_TO_PASS %v, want %v", how, tk.Origin.Function, tk.Origin.Description, tk.FailToPass, both)
				}
			}
			if len(tk.PassToPass) == 0 {
				t.Errorf("%s: task %s: no PASS_TO_PASS", how, tk.ID)
			}
		}
		if pos == 0 {
			t.Errorf("%s: no task of Pos", how)
		}
	}
	lazyTasks, _ := store.List()
	checkSets("lazy", lazyTasks)

	// Eager, against the naive way.
	eopts := opts
	eopts.LazyConfirm, eopts.CompareNaive, eopts.StoreDir = false, true, t.TempDir()
	esum, err := Run(ctx, repo, eopts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("eager: valid %d, rejected %v, naive %+v", esum.Valid, esum.Rejected, *esum.Naive)
	if !esum.Naive.Agree {
		t.Errorf("the switch and the naive way disagree: %v", esum.Naive.Disagree)
	}
	if esum.Valid != csum.Valid {
		t.Errorf("eager made %d tasks, lazy and confirmed %d", esum.Valid, csum.Valid)
	}
	estore, _ := task.Open(eopts.StoreDir)
	eagerTasks, _ := estore.List()
	checkSets("eager", eagerTasks)
}

// TestHangLimit: a mutant that loops forever is stopped at a small multiple of its
// package's clean run (measured in the same command) plus a floor, not at 20 times the
// environment's clean run: here TestSpin sleeps half a second, so the old limit was 13 s
// at least; the whole screen of the mutant (its build, the clean run, the mutant's run)
// now takes less.
func TestHangLimit(t *testing.T) {
	t.Parallel()
	repo := fixture.Repo(t, map[string]string{
		"go.mod":        fixture.GoMod("example.com/hang"),
		"ff/ff.go":      fastSrc,
		"ff/ff_test.go": "package ff\n\nimport (\n\t\"testing\"\n\t\"time\"\n)\n\nfunc TestSpin(t *testing.T) {\n\ttime.Sleep(500 * time.Millisecond)\n\tif Count(2) != 2 {\n\t\tt.Fatal(Count(2))\n\t}\n}\n",
	})
	ctx := context.Background()
	opts := testOptions(t)
	opts.Env.PackageTimeout = time.Minute
	s, err := env.Open(ctx, repo, opts.Env)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := newRunner(s, opts)
	src := mustRead(t, s, "ff/ff.go")
	r.sources["ff/ff.go"] = src
	ms, err := GoMutants("example.com/hang/ff", "ff/ff.go", src)
	if err != nil {
		t.Fatal(err)
	}
	var hang []Mutant
	for _, m := range ms {
		if m.Desc == "removed `n--`" {
			m.ID = 1
			hang = append(hang, m)
		}
	}
	if len(hang) != 1 {
		t.Fatalf("%d mutants removing n--", len(hang))
	}
	c, err := s.Copy(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	old := r.testTimeout("example.com/hang/ff")
	start := time.Now()
	out := r.screen(ctx, c, hang)
	took := time.Since(start)
	t.Logf("clean run %.2f s in the environment, old limit %s, screen %s", s.Env.Packages["example.com/hang/ff"].Seconds, old, took)
	if v := out[1]; v == nil || v.reason != RejectTimeout {
		t.Fatalf("verdict %+v, want %q", v, RejectTimeout)
	}
	if old < 10*time.Second {
		t.Fatalf("the old limit is %s: the fixture does not tell the limits apart", old)
	}
	if took >= old {
		t.Errorf("the screen took %s: the hanging mutant ran to the old limit (%s)", took, old)
	}
}

// TestScreenStopsAtFirstFailure: -test.failfast starts no test after a failure, but the
// parallel subtests of a table test have all started by then; the screen ends a mutant's
// run at the first failing subtest of a selected test itself. Here every mutant of Pos
// fails TestTable/fast at once while TestTable/slow sleeps 4 s (and never calls Pos): each
// mutant's run waited for it before, so the screen took 4 s per mutant beyond the build and
// the clean run; now it takes about those two. Each verdict names the test that failed.
func TestScreenStopsAtFirstFailure(t *testing.T) {
	const slow = 4 * time.Second
	repo := fixture.Repo(t, map[string]string{
		"go.mod":   fixture.GoMod("example.com/stop"),
		"ps/ps.go": "package ps\n\n// Pos reports whether n is positive.\nfunc Pos(n int) bool {\n\treturn n > 0\n}\n",
		"ps/ps_test.go": `package ps

import (
	"testing"
	"time"
)

func TestTable(t *testing.T) {
	for _, name := range []string{"fast", "slow"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if name == "slow" {
				time.Sleep(4 * time.Second)
				return
			}
			if Pos(0) || !Pos(1) || Pos(-1) {
				t.Fatal("Pos")
			}
		})
	}
}
`,
	})
	ctx := context.Background()
	opts := testOptions(t)
	opts.Env.PackageTimeout = time.Minute
	s, err := env.Open(ctx, repo, opts.Env)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := newRunner(s, opts)
	src := mustRead(t, s, "ps/ps.go")
	r.sources["ps/ps.go"] = src
	ms, err := GoMutants("example.com/stop/ps", "ps/ps.go", src)
	if err != nil {
		t.Fatal(err)
	}
	var caught []Mutant
	for _, m := range ms {
		if m.Synthesizer == SynthMutation && compiles(m.File, m.Apply(src)) {
			m.ID = len(caught) + 1
			caught = append(caught, m)
		}
	}
	if len(caught) < 3 {
		t.Fatalf("%d mutants of Pos", len(caught))
	}
	c, err := s.Copy(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	out := r.screen(ctx, c, caught)
	took := time.Since(start)
	t.Logf("%d mutants screened in %s", len(caught), took)
	for _, m := range caught {
		v := out[m.ID]
		if v == nil || v.reason != "" || !slices.Equal(v.failToPass, []string{"example.com/stop/ps TestTable"}) {
			t.Errorf("mutant %s: verdict %+v, want accepted by TestTable", m.Desc, v)
		}
	}
	// The build, the clean run (slow) and the mutants' runs: runs that waited for the slow
	// subtest would take slow each.
	if took >= time.Duration(len(caught))*slow {
		t.Errorf("the screen of %d mutants took %s: the runs waited for the slow subtest", len(caught), took)
	}
}

// TestDepsReuseCleanRun: the second command of a screen (the survivors against the tests
// of the packages importing them) does not run again the clean run of a binary that the
// first command ran clean moments before: it takes that run and the hang limit it set.
func TestDepsReuseCleanRun(t *testing.T) {
	t.Parallel()
	repo := fixture.Repo(t, map[string]string{
		"go.mod":        fixture.GoMod("example.com/reuse"),
		"ff/ff.go":      fastSrc,
		"ff/ff_test.go": fastTest,
	})
	ctx := context.Background()
	opts := testOptions(t)
	s, err := env.Open(ctx, repo, opts.Env)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := newRunner(s, opts)
	src := mustRead(t, s, "ff/ff.go")
	r.sources["ff/ff.go"] = src
	const pkg = "example.com/reuse/ff"
	ms, err := GoMutants(pkg, "ff/ff.go", src)
	if err != nil {
		t.Fatal(err)
	}
	var pos []Mutant
	for _, m := range ms {
		if m.Func == "Pos" && m.Synthesizer == SynthMutation && len(pos) < 2 {
			m.ID = len(pos) + 1
			pos = append(pos, m)
		}
	}
	c, err := s.Copy(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	overlay, _, err := r.writeOverlay(c, ".frognano-switch/1", pos)
	if err != nil {
		t.Fatal(err)
	}
	script, bins := r.buildScript(".frognano-bin/1", overlay, []string{pkg})
	if res, err := c.Run(ctx, script, time.Minute); err != nil || res.ExitCode != 0 {
		t.Fatalf("build: %v %+v", err, res)
	}
	first := r.runJobs(ctx, c, ".frognano-bin/1/own", []runJob{{pkg: pkg, bin: bins[pkg], ids: []int{1}}}, nil)
	clean, ok := first[pkg][0]
	if !ok || clean.hang <= 0 {
		t.Fatalf("first command: %+v", first)
	}
	clean.hang = 4321 * time.Millisecond // a limit no clock would measure
	clean.Seconds = map[string]float64{pkg: 99}
	second := r.runJobs(ctx, c, ".frognano-bin/1/deps", []runJob{{pkg: pkg, bin: bins[pkg], ids: []int{2}}}, map[string]map[int]mutantRun{pkg: {0: clean}})
	runs, ok := second[pkg]
	if !ok {
		t.Fatalf("second command: no result")
	}
	if runs[0].Seconds[pkg] != 99 {
		t.Errorf("the second command ran the binary clean again: %+v", runs[0])
	}
	if m := runs[2]; m.limit != 4321*time.Millisecond || len(failing(m.Results, r.selected(pkg))) == 0 {
		t.Errorf("mutant 2: limit %s, failing %v; want the first command's limit and a failure", m.limit, failing(m.Results, r.selected(pkg)))
	}
}
