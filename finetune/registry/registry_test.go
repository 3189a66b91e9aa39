package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/frognano/frognano/finetune/gate"
	"github.com/frognano/frognano/internal/procgroup"
	"github.com/frognano/frognano/ollama"
	"github.com/frognano/frognano/ollama/modelgen"
)

// One real Ollama server for the whole package: starting one costs seconds, and every test
// works under names of its own (each test's repository has its own hash).
var (
	shared    *ollama.Server
	sharedErr error
)

func TestMain(m *testing.M) {
	if os.Getenv(crashHelperEnv) != "" {
		crashHelper()
		return
	}
	var dir string
	bin, err := ollama.FindBinary()
	if err == nil {
		dir, err = os.MkdirTemp("", "registry-ollama-")
	}
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		shared, err = ollama.StartServer(ctx, bin, dir)
		cancel()
	}
	sharedErr = err
	code := m.Run()
	if shared != nil {
		shared.Stop()
		if left := procgroup.Members(shared.Pgid()); len(left) > 0 {
			fmt.Fprintf(os.Stderr, "ollama processes %v still alive after Stop\n", left)
			code = 1
		}
	}
	if dir != "" {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

// server is the shared Ollama server; without one the test is skipped, or fails under CI.
func server(t *testing.T) *ollama.Server {
	t.Helper()
	if shared == nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the real Ollama server is required under CI: %v", sharedErr)
		}
		t.Skipf("skipping: no Ollama server: %v", sharedErr)
	}
	return shared
}

// create registers a tiny random model (seed: which one) under name, as an import would.
func create(t *testing.T, srv *ollama.Server, name string, seed uint64) {
	t.Helper()
	m, err := modelgen.Random(filepath.Join(t.TempDir(), "m.gguf"), modelgen.Llama, seed)
	if err != nil {
		t.Fatal(err)
	}
	if err := createFile(srv, name, m); err != nil {
		t.Fatal(err)
	}
}

func createFile(srv *ollama.Server, name string, m *modelgen.Model) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return ollama.Create(ctx, srv.Client, ollama.CreateRequest{Name: name, GGUF: m.Path, Template: m.Template, Parameters: m.Parameters}, nil)
}

// models is Ollama's list: name (with its tag, see key) → digest.
func models(t *testing.T, srv *ollama.Server) map[string]string {
	t.Helper()
	l, err := srv.Client.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range l.Models {
		out[NameKey(m.Name)] = m.Digest
	}
	return out
}

type fixture struct {
	t    *testing.T
	srv  *ollama.Server
	repo string
	dir  string // state folder
	reg  *Registry
}

// newFixture opens a registry for a fresh repository path, with "base-<test>" as the
// user's model fine-tuning starts from.
func newFixture(t *testing.T, keep *int) *fixture {
	t.Helper()
	srv := server(t)
	f := &fixture{t: t, srv: srv, repo: t.TempDir(), dir: t.TempDir()}
	base := "base-" + strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	create(t, srv, base, 1000)
	f.reg = f.open(base, keep)
	return f
}

func (f *fixture) open(base string, keep *int) *Registry {
	f.t.Helper()
	r, err := Open(context.Background(), Options{Repo: f.repo, Client: f.srv.Client, Host: "http://" + f.srv.Host, Base: base, Keep: keep, StateDir: f.dir})
	if err != nil {
		f.t.Fatal(err)
	}
	return r
}

// make imports the model of step (random weights of seed step).
func (f *fixture) make(step int) *Model {
	f.t.Helper()
	m, err := f.reg.Import(context.Background(), step, func(_ context.Context, name string) error {
		create(f.t, f.srv, name, uint64(step))
		return nil
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return m
}

// results are held-out results on 30 tasks with the given successes of 8 each.
func results(successes int) map[string]gate.Result {
	out := map[string]gate.Result{}
	for i := range 30 {
		out["task-"+strconv.Itoa(i)] = gate.Result{Successes: successes, Attempts: 8}
	}
	return out
}

// judge evaluates the candidate as scoring cand against the serving model's serve.
func (f *fixture) judge(name string, serve, cand int) gate.Verdict {
	f.t.Helper()
	serving, _, _, err := f.reg.Serving()
	if err != nil {
		f.t.Fatal(err)
	}
	v, err := f.reg.Judge(context.Background(), name, serving, results(serve), results(cand), gate.DefaultRule())
	if err != nil {
		f.t.Fatal(err)
	}
	return v
}

func (f *fixture) state() *State {
	f.t.Helper()
	st, err := f.reg.State()
	if err != nil {
		f.t.Fatal(err)
	}
	return st
}

func statuses(st *State) string {
	var s []string
	for _, m := range st.Models {
		s = append(s, fmt.Sprintf("%d:%s", m.Step, m.Status))
	}
	return strings.Join(s, " ")
}

// TestAcceptSwitchesRejectKeeps: an accepted candidate becomes the model in use, in the
// file the language server reads (found from a folder inside the repository); a rejected
// one leaves the model in use alone and stays in Ollama for inspection.
func TestAcceptSwitchesRejectKeeps(t *testing.T) {
	f := newFixture(t, nil)
	m1 := f.make(1)
	if m1.Name != Name(f.repo, 1) || m1.Status != Candidate || m1.Digest != models(t, f.srv)[m1.Name] || m1.Digest == "" {
		t.Fatalf("made %+v; Ollama has %v", m1, models(t, f.srv))
	}
	if !strings.HasPrefix(m1.Name, "frognano-ft-"+Key(f.repo)+":step-1") || len(Key(f.repo)) != 12 {
		t.Fatalf("name %s", m1.Name)
	}
	if v := f.judge(m1.Name, 4, 5); !v.Accept {
		t.Fatalf("verdict %+v", v)
	}
	sub := filepath.Join(f.repo, "pkg", "inner")
	os.MkdirAll(sub, 0o755)
	st, path, err := Find(f.dir, sub)
	if err != nil || path != f.reg.Path() {
		t.Fatalf("Find: %v %s", err, path)
	}
	if st.InUse != m1.Name || st.Serving() != m1.Name || len(st.Switches) != 1 || st.Switches[0].From != "" ||
		!strings.HasPrefix(st.Switches[0].Why, "accepted") || len(st.BaseHeldOut) != 30 || len(st.Model(m1.Name).HeldOut) != 30 {
		t.Fatalf("after accepting: %+v", st)
	}

	m2 := f.make(2)
	if v := f.judge(m2.Name, 5, 2); v.Accept || v.Worse != 30 {
		t.Fatalf("verdict %+v", v)
	}
	st = f.state()
	if st.InUse != m1.Name || st.Model(m2.Name).Status != Rejected || st.Model(m2.Name).Verdict == nil {
		t.Fatalf("after rejecting: %s in use; %s", st.InUse, statuses(st))
	}
	if _, ok := models(t, f.srv)[m2.Name]; !ok {
		t.Fatal("the rejected model was not kept for inspection")
	}
	// Judging again (a restart after the verdict was written) returns the verdict.
	if v, err := f.reg.Judge(context.Background(), m2.Name, m1.Name, nil, nil, gate.DefaultRule()); err != nil || v.Accept {
		t.Fatalf("judging again: %+v %v", v, err)
	}
	// A candidate evaluated against a model no longer in use is refused.
	m3 := f.make(3)
	if _, err := f.reg.Judge(context.Background(), m3.Name, "", results(4), results(4), gate.DefaultRule()); !errors.Is(err, ErrServingChanged) {
		t.Fatalf("judging against a stale serving model: %v", err)
	}
}

// TestRollback goes back through the accepted models to the base, skipping rejected and
// rolled-back ones, and says when there is nothing left.
func TestRollback(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	m1, m2 := f.make(1), f.make(2)
	f.judge(m1.Name, 4, 4)
	f.judge(m2.Name, 4, 4)
	m3 := f.make(3)
	f.judge(m3.Name, 6, 1) // rejected
	from, to, err := f.reg.Rollback(ctx)
	if err != nil || from != m2.Name || to != m1.Name {
		t.Fatalf("rollback: %s → %s, %v", from, to, err)
	}
	// The next candidate is judged against m1, and a rollback from it skips m2.
	m4 := f.make(4)
	if v := f.judge(m4.Name, 4, 4); !v.Accept {
		t.Fatalf("verdict %+v", v)
	}
	if from, to, err = f.reg.Rollback(ctx); err != nil || from != m4.Name || to != m1.Name {
		t.Fatalf("second rollback: %s → %s, %v", from, to, err)
	}
	if from, to, err = f.reg.Rollback(ctx); err != nil || from != m1.Name || to != "" {
		t.Fatalf("third rollback: %s → %q, %v", from, to, err)
	}
	if _, _, err = f.reg.Rollback(ctx); !errors.Is(err, ErrNothingToRollBack) || !strings.Contains(err.Error(), "base-") {
		t.Fatalf("rollback from the base: %v", err)
	}
	st := f.state()
	if st.Serving() != st.Base || statuses(st) != "1:rolled-back 2:rolled-back 3:rejected 4:rolled-back" || len(st.Switches) != 6 {
		t.Fatalf("state: serving %s; %s; %d switches", st.Serving(), statuses(st), len(st.Switches))
	}
}

// TestRollbackTo goes back by name past several models; it refuses a rejected model, one
// made after the model in use and a name it does not know, saying which names it takes.
func TestRollbackTo(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	m1, m2, m3 := f.make(1), f.make(2), f.make(3)
	f.judge(m1.Name, 4, 4)
	f.judge(m2.Name, 4, 4)
	f.judge(m3.Name, 6, 1) // rejected
	m4 := f.make(4)
	f.judge(m4.Name, 4, 4)
	for _, tc := range []struct{ to, want string }{
		{m3.Name, "the held-out gate rejected it"},
		{"frognano-ft-000000000000:step-9", "the models " + f.repo + " can go back to are " + f.state().Base + " (the base), " + m1.Name + ", " + m2.Name},
		{m4.Name, "is already in use"},
	} {
		if _, err := f.reg.RollbackTo(ctx, tc.to); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("rollback to %s: %v, want %q", tc.to, err, tc.want)
		}
	}
	from, err := f.reg.RollbackTo(ctx, m1.Name)
	if err != nil || from != m4.Name {
		t.Fatalf("rollback to %s: from %s, %v", m1.Name, from, err)
	}
	st := f.state()
	if st.InUse != m1.Name || statuses(st) != "1:accepted 2:rolled-back 3:rejected 4:rolled-back" {
		t.Fatalf("after rollback to m1: in use %s; %s", st.InUse, statuses(st))
	}
	if _, err := f.reg.RollbackTo(ctx, m2.Name); !errors.Is(err, ErrUnknownModel) {
		t.Errorf("rollback forward to m2: %v", err)
	}
	if from, err = f.reg.RollbackTo(ctx, strings.ToUpper(st.Base)); err != nil || from != m1.Name {
		t.Fatalf("rollback to the base by name: from %s, %v", from, err)
	}
	if _, err = f.reg.RollbackTo(ctx, ""); !errors.Is(err, ErrNothingToRollBack) {
		t.Errorf("rollback from the base: %v", err)
	}
	st = f.state()
	if st.Serving() != st.Base || statuses(st) != "1:rolled-back 2:rolled-back 3:rejected 4:rolled-back" || len(st.Switches) != 5 {
		t.Fatalf("state: serving %s; %s; %d switches", st.Serving(), statuses(st), len(st.Switches))
	}
}

// TestPruneDeletesOnlyItsOwn: beyond the kept ones it deletes its own models, and never the
// user's: not the base, not a look-alike the user made under one of its names before it
// could (it takes another name), not one of its names the user re-created with other weights.
func TestPruneDeletesOnlyItsOwn(t *testing.T) {
	keep := 1
	f := newFixture(t, &keep)
	lookalike := Name(f.repo, 2)
	create(t, f.srv, lookalike, 77)
	userDigest := models(t, f.srv)[lookalike]

	m1 := f.make(1)
	f.judge(m1.Name, 4, 4) // in use
	m2 := f.make(2)
	if m2.Name != lookalike+".2" {
		t.Fatalf("step 2 took %s; the user's model holds %s", m2.Name, lookalike)
	}
	f.judge(m2.Name, 4, 4) // in use; m1 is the rollback target
	var rejected []*Model
	for step := 3; step <= 6; step++ {
		m := f.make(step)
		f.judge(m.Name, 6, 1)
		rejected = append(rejected, m)
		if step == 3 {
			// The user replaces it by a model of their own under the same name.
			if err := f.srv.Client.Delete(context.Background(), &api.DeleteRequest{Model: m.Name}); err != nil {
				t.Fatal(err)
			}
			create(t, f.srv, m.Name, 4242)
		}
	}
	deleted, err := f.reg.Prune(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	have := models(t, f.srv)
	st := f.state()
	// Rejected 4 and 5 went beyond the one kept when 5 and 6 were judged.
	for _, m := range rejected[1:3] {
		if _, ok := have[m.Name]; ok {
			t.Errorf("%s was not deleted", m.Name)
		}
	}
	for _, name := range []string{st.Base, lookalike, rejected[0].Name, m1.Name, m2.Name, rejected[3].Name} {
		if _, ok := have[NameKey(name)]; !ok {
			t.Errorf("%s was deleted", name)
		}
	}
	if have[lookalike] != userDigest {
		t.Errorf("the user's %s changed", lookalike)
	}
	if len(deleted) != 0 || statuses(st) != "1:accepted 2:accepted 6:rejected" || st.InUse != m2.Name {
		t.Errorf("pruned %v; state %s, in use %s", deleted, statuses(st), st.InUse)
	}
	if !slices.ContainsFunc(st.Notes, func(n string) bool { return strings.Contains(n, rejected[0].Name+": it was replaced outside frognano") }) {
		t.Errorf("notes %q", st.Notes)
	}
}

// TestModelInUseRemovedOutside: when the user deletes the model in use from Ollama, the
// next change puts the previous accepted one back and says why.
func TestModelInUseRemovedOutside(t *testing.T) {
	f := newFixture(t, nil)
	m1, m2 := f.make(1), f.make(2)
	f.judge(m1.Name, 4, 4)
	f.judge(m2.Name, 4, 4)
	if err := f.srv.Client.Delete(context.Background(), &api.DeleteRequest{Model: m2.Name}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.reg.Prune(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := f.state()
	last := st.Switches[len(st.Switches)-1]
	if st.InUse != m1.Name || last.From != m2.Name || !strings.Contains(last.Why, "no longer") || st.Model(m2.Name) != nil {
		t.Fatalf("in use %s, last switch %+v, %s", st.InUse, last, statuses(st))
	}
}

const crashHelperEnv = "FROGNANO_REGISTRY_CRASH_HELPER"

// crashHelper runs in a child process: it reserves the name of a step, makes the model when
// asked, and exits without recording it, as a process killed between the two would.
func crashHelper() {
	var repo, dir, host, gguf string
	var step int
	fmt.Sscanf(os.Getenv(crashHelperEnv), "%d", &step)
	repo, dir, host, gguf = os.Getenv("REPO"), os.Getenv("STATE_DIR"), os.Getenv("HOST"), os.Getenv("GGUF")
	srv := &ollama.Server{Host: host, Client: api.NewClient(mustURL(host), http.DefaultClient)}
	ctx := context.Background()
	r, err := Open(ctx, Options{Repo: repo, Client: srv.Client, Host: "http://" + host, StateDir: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	name, made, err := r.Begin(ctx, step)
	if err != nil || made {
		fmt.Fprintln(os.Stderr, "begin:", err, made)
		os.Exit(1)
	}
	if gguf != "" {
		m, _ := modelgen.Random(gguf, modelgen.Llama, uint64(step))
		if err := createFile(srv, name, m); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	os.Exit(0) // no Made: the crash
}

// crash runs crashHelper for step in a child process.
func (f *fixture) crash(step int, makeModel bool) {
	f.t.Helper()
	gguf := ""
	if makeModel {
		gguf = filepath.Join(f.t.TempDir(), "m.gguf")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashHelperEnv+"="+strconv.Itoa(step), "REPO="+f.repo, "STATE_DIR="+f.dir, "HOST="+f.srv.Host, "GGUF="+gguf)
	if out, err := cmd.CombinedOutput(); err != nil {
		f.t.Fatalf("crash helper: %v: %s", err, out)
	}
}

// TestCrashBetweenModelAndState: a process that made a model and died before recording it
// leaves a pending record; the next run adopts the model (Begin says it is made, so it is
// judged, not made twice). One that died before making it leaves a name free again.
func TestCrashBetweenModelAndState(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	f.crash(1, true)
	raw, err := Load(f.reg.Path()) // as the crash left it, before any reconcile
	if err != nil {
		t.Fatal(err)
	}
	if m := raw.Model(Name(f.repo, 1)); m == nil || m.Status != Pending || m.Owner == nil || m.Owner.alive() {
		t.Fatalf("after the crash: %+v", raw.Models)
	}
	name, made, err := f.open("", nil).Begin(ctx, 1)
	if err != nil || !made || name != Name(f.repo, 1) {
		t.Fatalf("Begin after the crash: %s %v %v", name, made, err)
	}
	st := f.state()
	m := st.Model(name)
	if m.Status != Candidate || m.Digest != models(t, f.srv)[name] || m.Owner != nil ||
		!strings.Contains(strings.Join(st.Notes, "\n"), "adopted "+name) {
		t.Fatalf("adopted record %+v; notes %q", m, st.Notes)
	}
	if v := f.judge(name, 4, 4); !v.Accept || f.state().InUse != name {
		t.Fatalf("the adopted model was not judged: %+v", v)
	}

	f.crash(2, false)
	name, made, err = f.reg.Begin(ctx, 2)
	if err != nil || made || name != Name(f.repo, 2) {
		t.Fatalf("Begin after a crash before the model: %s %v %v", name, made, err)
	}
	if !strings.Contains(strings.Join(f.state().Notes, "\n"), "forgot "+name+": its import did not finish") {
		t.Fatalf("notes %q", f.state().Notes)
	}
	// While this process (alive) holds step 2 pending, another registry leaves it alone.
	other := f.open("", nil)
	if _, err := other.Prune(ctx); err != nil {
		t.Fatal(err)
	}
	if m := f.state().Model(name); m == nil || m.Status != Pending {
		t.Fatalf("a live owner's pending record was resolved: %+v", m)
	}
	create(t, f.srv, name, 2)
	if m, err := f.reg.Made(ctx, name); err != nil || m.Status != Candidate {
		t.Fatalf("Made: %+v %v", m, err)
	}
}

// TestErrorsSayWhatToDo: the errors a user meets name the next step.
func TestErrorsSayWhatToDo(t *testing.T) {
	srv := server(t)
	dir, repo := t.TempDir(), t.TempDir()
	_, err := Open(context.Background(), Options{Repo: repo, Client: srv.Client, Host: "http://" + srv.Host, StateDir: dir})
	if !errors.Is(err, ErrNoState) || !strings.Contains(err.Error(), "frognano finetune start --repo "+repo) {
		t.Errorf("no registry: %v", err)
	}
	if _, _, err := Find(dir, repo); !errors.Is(err, ErrNoState) {
		t.Errorf("Find: %v", err)
	}
	f := newFixture(t, nil)
	_, err = Open(context.Background(), Options{Repo: f.repo, Client: srv.Client, Host: "http://127.0.0.1:1", StateDir: f.dir})
	if err == nil || !strings.Contains(err.Error(), "live in Ollama at http://"+srv.Host) {
		t.Errorf("another host: %v", err)
	}
	os.WriteFile(f.reg.Path(), []byte(`{"version": 99}`), 0o644)
	if _, err := f.reg.State(); err == nil || !strings.Contains(err.Error(), "update frognano, or remove the file") {
		t.Errorf("a newer file: %v", err)
	}
}

func mustURL(host string) *url.URL { return &url.URL{Scheme: "http", Host: host} }
