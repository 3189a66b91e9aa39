package rollout_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frognano/frognano/agent"
	"github.com/frognano/frognano/agent/workspace"
	"github.com/frognano/frognano/finetune/env"
	"github.com/frognano/frognano/finetune/reward"
	"github.com/frognano/frognano/finetune/rollout"
	"github.com/frognano/frognano/finetune/task"
	"github.com/frognano/frognano/internal/gitcmd"
	"github.com/frognano/frognano/ollama/modelgen"
	"github.com/frognano/frognano/ollama/ollamatest"
)

const (
	goodCalc = "package calc\n\n// Add is a plus b.\nfunc Add(a, b int) int { return a + b }\n"
	badCalc  = "package calc\n\n// Add is a plus b.\nfunc Add(a, b int) int { return a - b }\n"
	calcTest = "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif got := Add(2, 3); got != 5 {\n\t\tt.Fatalf(\"Add(2, 3) = %d\", got)\n\t}\n}\n"
)

// calcTask is a real repository with one commit and a task whose patch breaks Add.
func calcTask(t *testing.T) *task.Task {
	t.Helper()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "repo")
	g := gitcmd.Repo{Dir: dir, Trust: gitcmd.User, Env: []string{
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid"}}
	os.MkdirAll(dir, 0o755)
	for name, content := range map[string]string{"go.mod": "module example.com/calc\n\ngo 1.22\n", "calc.go": goodCalc, "calc_test.go": calcTest} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "calc"}} {
		if out, err := g.Run(ctx, nil, args...); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	head, err := env.Head(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	patch, err := task.MakePatch(ctx, []task.Change{{Path: "calc.go", Old: []byte(goodCalc), New: []byte(badCalc)}})
	if err != nil {
		t.Fatal(err)
	}
	return &task.Task{Version: task.Version, ID: task.MakeID(head, patch), Repo: dir, BaseCommit: head, Patch: patch,
		FailToPass: []string{"example.com/calc TestAdd"},
		Test:       task.TestSpec{Kind: "go", Command: "go test -count=1 -vet=off -run {run} {packages}"},
		Issue:      task.Issue{Level: 1, Text: "Add(2, 3) returns -1; it should return 5."}}
}

// hiddenTests is the tests' scorer until finetune/reward's: the task's FAIL_TO_PASS and
// PASS_TO_PASS run plainly (go test, outside the sandbox: the repository is the test's own)
// on a new export of the base commit with the patch and the episode's changes applied;
// 1 when they pass. calls counts its calls.
func hiddenTests(tb testing.TB, calls *int, mu *sync.Mutex) rollout.Scorer {
	return func(ctx context.Context, t *task.Task, ch *workspace.Changes) (rollout.Score, error) {
		mu.Lock()
		*calls++
		mu.Unlock()
		dir := filepath.Join(tb.TempDir(), "score")
		if _, err := env.ExportCommit(ctx, t.Repo, t.BaseCommit, dir); err != nil {
			return rollout.Score{}, err
		}
		if err := task.Apply(ctx, dir, t.Patch); err != nil {
			return rollout.Score{}, err
		}
		if err := workspace.Apply(dir, ch); err != nil {
			return rollout.Score{}, err
		}
		var names []string
		for _, id := range append(append([]string{}, t.FailToPass...), t.PassToPass...) {
			_, name := env.SplitID(id)
			names = append(names, name)
		}
		cmd := exec.CommandContext(ctx, "go", "test", "-count=1", "-vet=off", "-run", env.RunRegexp(names), "./...")
		cmd.Dir = dir
		// The user's own Go cache, not the sandbox's shared one: run as root, go would make
		// folders there that the sandbox's user (nobody) then cannot write to.
		cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod")
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		switch {
		case err == nil:
			return rollout.Score{Reward: 1, Reason: "the hidden tests pass"}, nil
		case errors.As(err, &exit) && ctx.Err() == nil:
			return rollout.Score{Reward: 0, Reason: "the hidden tests fail: " + lastLine(string(out))}, nil
		}
		return rollout.Score{}, fmt.Errorf("go test: %v: %s", err, out)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func toolTurn(name string, args map[string]any) modelgen.Turn {
	return modelgen.Turn{ToolCalls: []modelgen.ToolCall{{Name: name, Arguments: args}}}
}

var (
	fixTurn  = toolTurn("Edit", map[string]any{"file_path": "calc.go", "old_string": "a - b", "new_string": "a + b"})
	solver   = modelgen.Script{Turns: []modelgen.Turn{fixTurn, {Content: "Fixed: Add adds."}}}
	looker   = modelgen.Script{Turns: []modelgen.Turn{toolTurn("Read", map[string]any{"file_path": "calc.go"}), {Content: "It looks right to me."}}}
	agentOpt = agent.Options{NumCtx: 8192, MaxSteps: 6, MaxTokensPerTurn: 256}
)

// records reads the task's G records, failing the test on any missing.
func records(t *testing.T, out, id string, g int) []*rollout.Record {
	t.Helper()
	var rs []*rollout.Record
	for i := range g {
		r, err := rollout.ReadRecord(out, id, i)
		if err != nil {
			t.Fatalf("episode %d: %v", i, err)
		}
		rs = append(rs, r)
	}
	return rs
}

// TestGroupRewardsFollowTheWork: a group of 4 runs on two real Ollama servers, two
// episodes at once on each; the model of the same name solves the task on one server and
// not on the other, so the rewards are 1 exactly where the episode ran on the first
// ([1,1,0,0] in some order); the scorer sees two episodes at once; every record has a
// trajectory with logprobs that rollout.Read reads back; the group summary says the
// rewards vary.
func TestGroupRewardsFollowTheWork(t *testing.T) {
	t.Parallel()
	a, b := ollamatest.Shared(t), ollamatest.Start(t)
	a.Scripted("policy-group:1", modelgen.Qwen3, solver)
	b.Scripted("policy-group:1", modelgen.Qwen3, looker)
	tk := calcTask(t)
	out := t.TempDir()

	var mu sync.Mutex
	calls, inside, most := 0, 0, 0
	score := hiddenTests(t, &calls, &mu)
	together := make(chan struct{})
	var once sync.Once
	scorer := func(ctx context.Context, tk *task.Task, ch *workspace.Changes) (rollout.Score, error) {
		mu.Lock()
		inside++
		most = max(most, inside)
		if inside == 2 {
			once.Do(func() { close(together) })
		}
		mu.Unlock()
		// Wait (a while) for a second episode to reach its score: only parallel workers
		// bring one.
		select {
		case <-together:
		case <-time.After(90 * time.Second):
		}
		defer func() { mu.Lock(); inside--; mu.Unlock() }()
		return score(ctx, tk, ch)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sums, err := rollout.Run(ctx, []*task.Task{tk}, rollout.Options{
		Model: "policy-group:1", Out: out, Score: scorer, Group: 4, Agent: agentOpt, SharedGoCache: true,
		Hosts:   []rollout.Host{{Name: "a", Model: a.Client, Workers: 2}, {Name: "b", Model: b.Client, Workers: 2}},
		WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	rs := records(t, out, tk.ID, 4)
	perHost := map[string]int{}
	var rewards []float64
	for _, r := range rs {
		if !r.Trainable() {
			t.Fatalf("episode %d failed: %s", r.Episode, r.Error)
		}
		perHost[r.Host]++
		rewards = append(rewards, *r.Reward)
		if want := map[string]float64{"a": 1, "b": 0}[r.Host]; *r.Reward != want {
			t.Errorf("episode %d on %s: reward %v (%s), want %v", r.Episode, r.Host, *r.Reward, r.Reason, want)
		}
		ep, err := rollout.Read(filepath.Join(out, r.Trajectory))
		if err != nil {
			t.Fatal(err)
		}
		if ep.Exit != string(agent.ExitDone) || len(ep.Turns) != 2 || ep.Turns[0].Pieces == nil {
			t.Errorf("episode %d: trajectory exit %q, %d turns, logprob pieces %q", r.Episode, ep.Exit, len(ep.Turns), ep.Turns[0].Pieces)
		}
		if r.Withheld == nil || !slices.Equal(r.Withheld.Withheld, tk.FailToPass) || r.Withheld.Kept != nil {
			t.Errorf("episode %d: withheld %+v, want the failing test and nothing kept", r.Episode, r.Withheld)
		}
		if r.Tokens.Output == 0 || r.Timings.Agent <= 0 || r.Exit != agent.ExitDone {
			t.Errorf("episode %d: record %+v", r.Episode, r)
		}
	}
	t.Logf("rewards by episode %v, episodes per host %v, scorers at once: %d", rewards, perHost, most)
	if perHost["a"] == 0 || perHost["b"] == 0 {
		t.Errorf("episodes per host %v: a host was left idle", perHost)
	}
	if most < 2 {
		t.Errorf("at most %d episodes were scored at once: the workers did not run in parallel", most)
	}
	if len(sums) != 1 || !sums[0].Varied || sums[0].Errors != 0 || sums[0].Mean != float64(perHost["a"])/4 {
		t.Fatalf("summaries %+v", sums)
	}
	if s, err := rollout.ReadSummary(out, tk.ID); err != nil || s.Mean != sums[0].Mean {
		t.Errorf("group.json: %+v, %v", s, err)
	}
}

// TestCancelThenResume: cancelled while every running episode sits in a long command,
// Run returns at once and leaves no record, no trajectory and no copy; a rerun into the
// same folder runs the whole group (the command now cut short by the agent's Bash timeout)
// and rewards it; a third run finds nothing to do; a missing record and a failed one are
// redone, and only they.
func TestCancelThenResume(t *testing.T) {
	t.Parallel()
	srv := ollamatest.Shared(t)
	srv.Scripted("policy-resume:1", modelgen.Qwen3, modelgen.Script{Turns: []modelgen.Turn{
		fixTurn, toolTurn("Bash", map[string]any{"command": "sleep 60"}), {Content: "Fixed."}}})
	tk := calcTask(t)
	out, work := t.TempDir(), t.TempDir()
	var mu sync.Mutex
	calls := 0
	opts := rollout.Options{Model: "policy-resume:1", Out: out, Score: hiddenTests(t, &calls, &mu), Group: 3,
		Agent: agentOpt, SharedGoCache: true, Hosts: []rollout.Host{{Name: "shared", Model: srv.Client}}, Workers: 2, WorkDir: work}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sleeping := 0
	var cancelled time.Time
	first := opts
	first.OnEvent = func(_ string, _ int, ev agent.Event) {
		mu.Lock()
		defer mu.Unlock()
		if ev.Kind == agent.EventToolStart && ev.Tool == "Bash" {
			if sleeping++; sleeping == 2 {
				cancelled = time.Now()
				cancel()
			}
		}
	}
	if _, err := rollout.Run(ctx, []*task.Task{tk}, first); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled run: %v", err)
	}
	took := time.Since(cancelled)
	t.Logf("Run returned %v after the cancel", took.Round(time.Millisecond))
	left, _ := filepath.Glob(filepath.Join(out, tk.ID, "*"))
	copies, _ := os.ReadDir(work)
	if len(left) > 0 || len(copies) > 0 {
		t.Fatalf("the cancelled run left %v in the output and %d entries in the work folder", left, len(copies))
	}
	if took > 30*time.Second { // the commands sleep 60 s
		t.Errorf("Run returned %v after two episodes' commands began: the agents were not stopped", took)
	}

	second := opts
	second.Agent.BashTimeout = time.Second
	var redone []int
	second.OnRecord = func(r *rollout.Record) { mu.Lock(); redone = append(redone, r.Episode); mu.Unlock() }
	run := func(o rollout.Options) []int {
		t.Helper()
		redone = nil
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		sums, err := rollout.Run(ctx, []*task.Task{tk}, o)
		if err != nil {
			t.Fatal(err)
		}
		if len(sums) != 1 || sums[0].Mean != 1 || sums[0].Errors != 0 {
			t.Fatalf("summaries %+v", sums)
		}
		return redone
	}
	if got := run(second); len(got) != 3 {
		t.Fatalf("the resumed run wrote records for episodes %v, want all 3", got)
	}
	kept := records(t, out, tk.ID, 3)
	if got := run(second); len(got) != 0 {
		t.Fatalf("a run over a finished group redid episodes %v", got)
	}
	os.Remove(filepath.Join(out, tk.ID, "1.json"))
	failed := *kept[2]
	failed.Reward, failed.Error = nil, "the episode failed (llm_error): Ollama went away"
	b, _ := json.Marshal(failed)
	if err := os.WriteFile(filepath.Join(out, tk.ID, "2.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := run(second); !slices.Equal(slices.Sorted(slices.Values(got)), []int{1, 2}) {
		t.Fatalf("redone %v, want the missing and the failed episode [1 2]", got)
	}
	if r := records(t, out, tk.ID, 3)[0]; !r.Started.Equal(kept[0].Started) {
		t.Errorf("the finished episode 0 was run again")
	}
	copies, _ = os.ReadDir(work)
	if len(copies) > 0 {
		t.Errorf("%d entries left in the work folder", len(copies))
	}
}

// TestOllamaDiesIsAnError: when a server dies in the middle of a group, the episode it cut
// short is recorded as an error with no reward, never as a reward of 0, and nothing is
// scored; the dead server takes no more episodes: with a live one beside it, the live one
// runs the rest of the group; alone, Run stops with an error and leaves the rest unrun, to
// be redone.
func TestOllamaDiesIsAnError(t *testing.T) {
	t.Parallel()
	for _, withLive := range []bool{false, true} {
		t.Run(fmt.Sprintf("live host beside it %v", withLive), func(t *testing.T) {
			t.Parallel()
			dies := ollamatest.Start(t) // its own: the test stops it
			name := fmt.Sprintf("policy-dies-%v:1", withLive)
			dies.Scripted(name, modelgen.Qwen3, solver)
			hosts := []rollout.Host{{Name: "dies", Model: dies.Client, Workers: 1}}
			if withLive {
				live := ollamatest.Shared(t)
				live.Scripted(name, modelgen.Qwen3, solver)
				hosts = append(hosts, rollout.Host{Name: "live", Model: live.Client, Workers: 1})
			}
			tk := calcTask(t)
			out := t.TempDir()
			var mu sync.Mutex
			calls := 0
			var stop sync.Once
			sums, err := rollout.Run(context.Background(), []*task.Task{tk}, rollout.Options{
				Model: name, Out: out, Score: hiddenTests(t, &calls, &mu), Group: 3, Agent: agentOpt, SharedGoCache: true,
				Hosts: hosts, WorkDir: t.TempDir(),
				OnEvent: func(_ string, _ int, ev agent.Event) {
					if ev.Kind == agent.EventToolStart {
						stop.Do(dies.Stop)
					}
				}})
			byHost := map[string][]string{}
			for i := range 3 {
				r, rerr := rollout.ReadRecord(out, tk.ID, i)
				switch {
				case errors.Is(rerr, os.ErrNotExist):
					byHost["none"] = append(byHost["none"], "unrun")
					continue
				case rerr != nil:
					t.Fatal(rerr)
				}
				if r.Host == "dies" && (r.Trainable() || r.Reward != nil || r.Error == "") {
					t.Errorf("episode %d on the dead host: reward %v, error %q: a dead server must give an error, not a reward", i, r.Reward, r.Error)
				}
				what := r.Error
				if r.Trainable() {
					what = fmt.Sprint(*r.Reward)
				}
				byHost[r.Host] = append(byHost[r.Host], what)
			}
			t.Logf("records by host %q; Run: %v", byHost, err)
			if len(byHost["dies"]) != 1 {
				t.Errorf("the dead host has %d records, want 1: it took episodes after it died", len(byHost["dies"]))
			}
			if !withLive {
				if err == nil || !strings.Contains(err.Error(), "no Ollama host answers") || len(byHost["none"]) != 2 || calls != 0 {
					t.Fatalf("alone: Run %v, %d unrun, %d scored", err, len(byHost["none"]), calls)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(byHost["live"]) != 2 || byHost["live"][0] != "1" || byHost["live"][1] != "1" || calls != 2 {
				t.Errorf("the live host's episodes: %q, %d scored", byHost["live"], calls)
			}
			if len(sums) != 1 || sums[0].Errors != 1 || sums[0].Mean != 1 || sums[0].Varied {
				t.Fatalf("summaries %+v", sums)
			}
		})
	}
}

// TestGoTaskBuildsOnTheTrustedCache: a Go task's episode builds with a new scratch layer
// over the trusted layer of the task's base tree, which the runner built once in
// GoCacheDir (read-only, sealed); the model's `go test` runs there and passes after its fix;
// the default scorer, finetune/reward.Score on the same layer, rewards it 1 and its result
// (the hidden test passed) is in the record.
func TestGoTaskBuildsOnTheTrustedCache(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("no bubblewrap under CI: the trusted Go build cache needs it")
		}
		t.Skip("no bubblewrap: the trusted Go build cache needs it")
	}
	t.Parallel()
	srv := ollamatest.Shared(t)
	srv.Scripted("policy-gocache:1", modelgen.Qwen3, modelgen.Script{Turns: []modelgen.Turn{
		fixTurn, toolTurn("Bash", map[string]any{"command": "cat calc_test.go; go env GOCACHEPROG; go test ./..."}), {Content: "Fixed."}}})
	tk := calcTask(t)
	out, layers := t.TempDir(), t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	if _, err := rollout.Run(ctx, []*task.Task{tk}, rollout.Options{Model: "policy-gocache:1", Out: out,
		Group: 1, Agent: agentOpt, GoCacheDir: layers,
		Hosts: []rollout.Host{{Name: "shared", Model: srv.Client}}, WorkDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	r := records(t, out, tk.ID, 1)[0]
	if !r.Trainable() || *r.Reward != 1 {
		t.Fatalf("reward %v (%s), error %q, scoring %s", r.Reward, r.Reason, r.Error, r.Scoring)
	}
	var scoring reward.Result
	if err := json.Unmarshal(r.Scoring, &scoring); err != nil || !slices.Equal(scoring.Passed, tk.FailToPass) {
		t.Errorf("the record's scoring %s (%v): want the hidden test passed", r.Scoring, err)
	}
	b, err := os.ReadFile(filepath.Join(out, r.Trajectory))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "__gocacheprog") || !strings.Contains(string(b), "ok  \\texample.com/calc") {
		t.Errorf("the episode's go test did not run through the layers and pass:\n%s", b)
	}
	// The failing test was not in the agent's copy (what it asserts is the answer), yet
	// the reward ran it (scoring.Passed above).
	if strings.Contains(string(b), "func TestAdd") || !strings.Contains(string(b), "not in this copy") || r.Withheld == nil || !slices.Equal(r.Withheld.Withheld, tk.FailToPass) {
		t.Errorf("the failing test was in the agent's copy (withheld %+v):\n%s", r.Withheld, b)
	}
	ents, _ := os.ReadDir(layers)
	if len(ents) != 1 {
		t.Fatalf("%d trusted layers built, want 1 (the base tree's)", len(ents))
	}
	t.Logf("trusted layer %s built; episode %.1f s (setup %.1f s, agent %.1f s, reward %.1f s)", ents[0].Name(), r.Timings.Total, r.Timings.Setup, r.Timings.Agent, r.Timings.Score)
}
