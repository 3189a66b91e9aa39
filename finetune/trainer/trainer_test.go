package trainer

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frognano/frognano/internal/procgroup"
)

// python returns the trainer's interpreter, or skips the test when the virtual
// environment has not been built, except under CI, where that is a failure.
func python(t *testing.T) string {
	t.Helper()
	p := Python()
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no trainer Python at %s under CI: scripts/setup.sh should have run `frognano finetune setup`", p)
		}
		t.Skipf("no trainer Python at %s: run `go run ./cmd/frognano finetune setup` (or set FROGNANO_TRAINER_PYTHON) to run this test", p)
	}
	return p
}

// rollouts is a batch of two groups of four over the tiny vocabulary (256 tokens): one with
// differing rewards, one all solved (skipped).
func rollouts() Batch {
	var b Batch
	for i := range 8 {
		n := 24
		r := Rollout{Group: "half", Reward: float64(i % 2)}
		if i >= 4 {
			r.Group, r.Reward = "all", 1
		}
		for j := range n {
			r.Tokens = append(r.Tokens, (i*31+j*7)%256)
			r.Mask = append(r.Mask, j >= 8 && (j < 14 || j >= 18)) // prompt, answer, tool result, answer
		}
		b.Rollouts = append(b.Rollouts, r)
	}
	return b
}

func TestTrainerEndToEnd(t *testing.T) {
	py := python(t)
	ctx := context.Background()
	p, hello, err := Start(ctx, Options{Python: py})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	if hello.Protocol != ProtocolVersion || hello.Torch == "" || hello.Device == "" {
		t.Fatalf("hello = %+v", hello)
	}

	// Errors come back typed and leave the trainer usable.
	var te *Error
	if _, err := p.Train(ctx, rollouts()); !errors.As(err, &te) || te.Code != "not_loaded" {
		t.Fatalf("train before load: %v", err)
	}
	if err := p.Call(ctx, "fly", nil, nil); !errors.As(err, &te) || te.Code != "unknown_method" {
		t.Fatalf("unknown method: %v", err)
	}
	if _, err := p.Load(ctx, Load{Random: &RandomModel{Arch: "llama"}, LoRA: &LoRA{Rank: -1}}); !errors.As(err, &te) || te.Code != "invalid_params" || !strings.Contains(te.Message, "load.lora.rank") {
		t.Fatalf("bad rank: %v", err)
	}

	loaded, err := p.Load(ctx, Load{Random: &RandomModel{Arch: "llama", VocabSize: 320}, LR: 1e-3, Device: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Arch != "LlamaForCausalLM" || loaded.Trainable <= 0 || loaded.DType != "float32" {
		t.Fatalf("loaded = %+v", loaded)
	}
	start := time.Now()
	tr, err := p.Train(ctx, rollouts())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("a train step on the tiny Llama: %v (%.3f s inside the trainer)", time.Since(start), tr.StepTime)
	if tr.Steps != 1 || tr.Sequences != 4 || tr.Tokens != 4*12 || tr.Loss == nil || math.IsNaN(*tr.Loss) ||
		tr.GradNorm == nil || *tr.GradNorm <= 0 || len(tr.SkippedGroups) != 1 || tr.SkippedGroups[0] != "all" {
		t.Fatalf("trained = %+v", tr)
	}
	dir := filepath.Join(t.TempDir(), "adapter")
	saved, err := p.Save(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "adapter_model.safetensors")); err != nil {
		t.Fatalf("saved %+v: %v", saved, err)
	}
	ex, err := p.MergeExport(ctx, filepath.Join(t.TempDir(), "merged"), "float32")
	if err != nil || ex.Architecture != "LlamaForCausalLM" || len(ex.Problems) != 0 {
		t.Fatalf("merge_export: %+v, %v", ex, err)
	}
	m, err := p.Metrics(ctx)
	if err != nil || m.Steps != 1 || m.Tokens != 48 || !m.Loaded {
		t.Fatalf("metrics = %+v, %v", m, err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
}

func TestCancelKillsTheTrainer(t *testing.T) {
	py := python(t)
	ctx, cancel := context.WithCancel(context.Background())
	p, _, err := Start(ctx, Options{Python: py})
	if err != nil {
		t.Fatal(err)
	}
	pid := p.cmd.Process.Pid
	cancel()
	<-p.exited
	if err := p.Call(context.Background(), "metrics", nil, nil); err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("a call after cancel: %v", err)
	}
	if m := procgroup.Members(pid); len(m) != 0 {
		t.Fatalf("processes left in the trainer's group: %v", m)
	}
}

// fake writes a shell script standing in for Python, for the failures a real trainer
// rarely shows.
func fake(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "python")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFailuresBecomeErrors(t *testing.T) {
	for _, c := range []struct{ name, script, want string }{
		{"crash", `echo "ImportError: No module named torch" >&2; exit 1`, "No module named torch"},
		{"garbage", `read line; echo "Downloading weights..."; sleep 5`, "not a response"},
		{"hang", `echo "loading..." >&2; sleep 30`, "no answer within 300ms"},
		{"old protocol", `read line; echo '{"id": 1, "result": {"protocol": 0}}'; sleep 5`, "protocol 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			_, _, err := Start(context.Background(), Options{Python: fake(t, c.script), Timeout: 300 * time.Millisecond})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to mention %q", err, c.want)
			}
			if d := time.Since(start); d > 4*time.Second {
				t.Fatalf("took %v", d)
			}
		})
	}
}

func TestMissingPython(t *testing.T) {
	_, _, err := Start(context.Background(), Options{Python: filepath.Join(t.TempDir(), "none")})
	if err == nil || !strings.Contains(err.Error(), "frognano finetune setup") {
		t.Fatalf("err = %v", err)
	}
}

func TestSourcesAreWrittenOnce(t *testing.T) {
	t.Setenv("FROGNANO_CACHE", t.TempDir())
	a, err := sourceDir()
	if err != nil {
		t.Fatal(err)
	}
	b, err := sourceDir()
	if err != nil || a != b {
		t.Fatalf("%s, %s, %v", a, b, err)
	}
	if _, err := os.Stat(filepath.Join(a, "frognano_trainer", "protocol.py")); err != nil {
		t.Fatal(err)
	}
}

// TestDistributedTrainer runs the trainer as two gloo ranks under torchrun, as a machine
// with two GPUs would (on the CPU here): rank 0 answers, both ranks train, and their
// adapters stay bit-identical. tests/test_distributed.py compares the update with a
// one-process one and fails ranks on purpose.
func TestDistributedTrainer(t *testing.T) {
	py := python(t)
	ctx := context.Background()
	p, hello, err := Start(ctx, Options{Python: py, Procs: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	if hello.Distributed != "ddp" || hello.WorldSize != 2 {
		t.Fatalf("hello = %+v", hello)
	}
	if _, err := p.Load(ctx, Load{Random: &RandomModel{Arch: "qwen3_5"}, LR: 1e-2, Device: "cpu"}); err != nil {
		t.Fatal(err)
	}
	b := rollouts()
	for i := range 4 { // a second group that teaches, so that each rank gets one
		r := b.Rollouts[i]
		r.Group = "half2"
		b.Rollouts = append(b.Rollouts, r)
	}
	tr, err := p.Train(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Steps != 1 || tr.Sequences != 8 || tr.Tokens != 8*12 {
		t.Fatalf("trained = %+v", tr)
	}
	m, err := p.MetricsDigest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m.WorldSize != 2 || len(m.AdapterDigests) != 2 || m.AdapterDigests[0] != m.AdapterDigests[1] {
		t.Fatalf("metrics = %+v", m)
	}
	pid := p.cmd.Process.Pid
	if err := p.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if left := procgroup.Members(pid); len(left) != 0 {
		t.Fatalf("ranks left running: %v", left)
	}
}

func TestDistributedModeIsChecked(t *testing.T) {
	_, _, err := Start(context.Background(), Options{Python: "python3", Procs: 2, Distributed: "zero3"})
	if err == nil || !strings.Contains(err.Error(), "ddp or fsdp") {
		t.Fatalf("err = %v", err)
	}
}
