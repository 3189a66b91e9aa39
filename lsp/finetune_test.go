package lsp

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/frognano/frognano/finetune/daemon"
	"github.com/frognano/frognano/finetune/loop"
	"github.com/frognano/frognano/finetune/report"
	"github.com/frognano/frognano/internal/frognanotest"
	"github.com/frognano/frognano/ollama"
)

// command runs a server command with no arguments and decodes its result into out.
func (e *editor) command(name string, out any) error {
	e.t.Helper()
	res, err := e.server.ExecuteCommand(context.Background(), &protocol.ExecuteCommandParams{Command: name})
	if err == nil && out != nil {
		if err := json.Unmarshal(res, out); err != nil {
			e.t.Fatalf("%s: result %s: %v", name, res, err)
		}
	}
	return err
}

// writeStatus writes repo's daemon status file with the daemon's own type (its writer is
// unexported), and checks that the daemon package reads it back.
func writeStatus(t *testing.T, repo string, st daemon.Status) {
	t.Helper()
	dir := daemon.Dir(repo)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	st.Version = 1
	b, _ := json.Marshal(st)
	if err := os.WriteFile(filepath.Join(dir, "status.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := daemon.ReadStatus(dir); err != nil || got.Phase != st.Phase {
		t.Fatalf("the daemon does not read the fixture: %+v %v", got, err)
	}
}

// TestFineTuningStatusPart: frognano/status's fineTuning part says "off" for a repository
// never fine-tuned, and reads a daemon's status file as the daemon package reads it: a
// stopped daemon's progress, last error and why it ended; what it waited for is not shown
// once it is gone.
func TestFineTuningStatusPart(t *testing.T) {
	e := newEditor(t, sampleWorkspace, ollama.Config{Host: "127.0.0.1:1", Model: "m"}, capsFull(), nil)
	t.Setenv("FROGNANO_CACHE", e.registryCache)
	repo, _ := filepath.EvalSymlinks(e.root)

	ft := e.status().FineTuning
	if ft == nil || ft.State != FineTuningOff || ft.Repo != repo || ft.Phase != "" || len(ft.Problems) != 0 {
		t.Fatalf("never started: %+v", ft)
	}

	writeStatus(t, repo, daemon.Status{PID: 999999, Iteration: 3, Phase: loop.Phase("train"), Fraction: 0.4, Detail: "step 2 of 5",
		Waiting: "the GPU lock", LastError: "rollouts: Ollama is not running", ErrorAt: time.Now(), Ended: "stopped by SIGTERM", Outcome: "accepted"})
	ft = e.status().FineTuning
	want := FineTuning{State: FineTuningStopped, Repo: repo, Iteration: 3, Phase: "train", Fraction: 0.4, Detail: "step 2 of 5",
		LastError: "rollouts: Ollama is not running", Ended: "stopped by SIGTERM", Outcome: "accepted"}
	if ft == nil || ft.State != want.State || ft.Iteration != want.Iteration || ft.Phase != want.Phase || ft.Fraction != want.Fraction ||
		ft.Detail != want.Detail || ft.LastError != want.LastError || ft.Ended != want.Ended || ft.Outcome != want.Outcome || ft.Waiting != "" || ft.PID != 0 {
		t.Fatalf("stopped daemon: %+v, want %+v", ft, want)
	}

	// A torn status file is a problem the status names, not a failed request.
	os.WriteFile(filepath.Join(daemon.Dir(repo), "status.json"), []byte(`{"version":1,"phase":`), 0o644)
	if ft := e.status().FineTuning; ft == nil || ft.State != FineTuningOff || len(ft.Problems) != 1 || !strings.Contains(ft.Problems[0], "status.json") {
		t.Fatalf("torn status file: %+v", ft)
	}
}

// TestFineTuneStartNeedsWeights: Start without the weights setting fails with a message
// that names the setting, shown to the user; a weights path that does not exist, or a
// schedule that cannot be parsed, names its setting too; nothing is started or saved.
func TestFineTuneStartNeedsWeights(t *testing.T) {
	e := newEditor(t, sampleWorkspace, ollama.Config{Host: "127.0.0.1:1", Model: "m"}, capsFull(), nil)
	t.Setenv("FROGNANO_CACHE", e.registryCache)
	repo, _ := filepath.EvalSymlinks(e.root)

	err := e.command(CommandFineTuneStart, nil)
	if err == nil || !strings.Contains(err.Error(), `set "frognano.finetune.weights"`) {
		t.Fatalf("start without weights: %v", err)
	}
	e.waitMessage(`FrogNano: Start fine-tuning: set "frognano.finetune.weights" to the weights of m for fine-tuning's trainer (a safetensors folder or a .gguf file)`)

	e.server.DidChangeConfiguration(context.Background(), &protocol.DidChangeConfigurationParams{
		Settings: protocol.LSPAny(`{"frognano": {"finetune.weights": "/nonexistent/base.gguf"}}`)})
	e.waitFor(10*time.Second, "the setting", func() bool {
		err = e.command(CommandFineTuneStart, nil)
		return err != nil && strings.Contains(err.Error(), "/nonexistent/base.gguf")
	})
	if !strings.Contains(err.Error(), `set "frognano.finetune.weights" to weights that can be read: /nonexistent/base.gguf: no such file or directory`) {
		t.Fatalf("start with missing weights: %v", err)
	}

	// A schedule that cannot be parsed names its setting too.
	e.server.DidChangeConfiguration(context.Background(), &protocol.DidChangeConfigurationParams{
		Settings: protocol.LSPAny(`{"frognano": {"finetune.weights": "` + e.root + `", "finetune.hours": "9"}}`)})
	e.waitFor(10*time.Second, "the setting", func() bool {
		err := e.command(CommandFineTuneStart, nil)
		return err != nil && strings.Contains(err.Error(), `set "frognano.finetune.hours" to FROM-TO or nothing: hours "9"`)
	})

	if _, err := os.Stat(daemon.Dir(repo)); !os.IsNotExist(err) {
		t.Errorf("a failed start left the daemon's folder: %v", err)
	}
	if ft := e.status().FineTuning; ft.State != FineTuningOff {
		t.Errorf("after failed starts: %+v", ft)
	}
}

// TestFineTuneDaemonFromEditor: Start runs the real daemon (frognano's `finetune
// daemon-run`, detached as `frognano finetune start` does) with the editor's settings; a
// schedule outside the current hour keeps it waiting, so it runs but trains nothing. The
// status shows it running and what it waits for; a second Start says it runs already;
// Stop ends the process; Show report writes the page and asks the editor to open it in
// the browser.
func TestFineTuneDaemonFromEditor(t *testing.T) {
	bin := frognanoBinary(t)
	weights := filepath.Join(t.TempDir(), "base.gguf")
	os.WriteFile(weights, []byte("GGUF"), 0o644)
	h := time.Now().Hour()
	hours := strconv.Itoa((h+2)%24) + "-" + strconv.Itoa((h+3)%24)
	e := newEditorWith(t, sampleWorkspace, ollama.Config{Host: "127.0.0.1:1", Model: "m"}, capsFull(),
		map[string]any{"finetune.weights": weights, "finetune.hours": hours}, func(o *Options) { o.Frognano = bin })
	t.Setenv("FROGNANO_CACHE", e.registryCache)
	repo, _ := filepath.EvalSymlinks(e.root)

	var started struct {
		Repo    string
		PID     int
		Already bool
	}
	if err := e.command(CommandFineTuneStart, &started); err != nil {
		t.Fatalf("start: %v (messages %q)", err, e.shownMessages())
	}
	t.Cleanup(func() { daemon.Stop(context.Background(), daemon.Dir(repo), time.Second) })
	if started.Repo != repo || started.PID <= 0 || started.Already {
		t.Fatalf("start: %+v", started)
	}
	e.waitMessage("fine-tuning of " + repo + " started in the background (pid " + strconv.Itoa(started.PID) + ")")
	c, err := daemon.LoadConfig(daemon.Dir(repo))
	if err != nil || c.Flags["weights"] != weights || c.Flags["hours"] != hours || c.Flags["model"] != "m" || c.Flags["repo"] != repo {
		t.Fatalf("saved config: %+v %v", c, err)
	}
	e.waitFor(30*time.Second, "the daemon waiting for its hours", func() bool {
		ft := e.status().FineTuning
		return ft.State == FineTuningRunning && ft.PID == started.PID && strings.Contains(ft.Waiting, "hours")
	})

	if err := e.command(CommandFineTuneStart, &started); err != nil || !started.Already {
		t.Fatalf("second start: %+v %v", started, err)
	}

	var stopped struct {
		PID    int
		Killed bool
	}
	if err := e.command(CommandFineTuneStop, &stopped); err != nil || stopped.PID != started.PID || stopped.Killed {
		t.Fatalf("stop: %+v %v", stopped, err)
	}
	// Stop returns once the daemon's lock is free, which is at its exit; this test process
	// is its parent, and Start's goroutine reaps it a moment later (until then a signal 0
	// reaches the zombie, as it once did here).
	if frognanotest.Alive(started.PID) {
		t.Errorf("the daemon's process %d is still there after stop", started.PID)
	}
	if ft := e.status().FineTuning; ft.State != FineTuningStopped || ft.PID != 0 || ft.Waiting != "" || ft.Ended == "" {
		t.Fatalf("status after stop: %+v", ft)
	}
	if err := e.command(CommandFineTuneStop, &stopped); err != nil || stopped.PID != 0 {
		t.Fatalf("stop when stopped: %+v %v", stopped, err)
	}
	e.waitMessage("fine-tuning of " + repo + " is not running")

	var rep struct {
		Path  string
		Shown bool
	}
	if err := e.command(CommandFineTuneReport, &rep); err != nil || !rep.Shown || filepath.Base(rep.Path) != "index.html" {
		t.Fatalf("report: %+v %v", rep, err)
	}
	page, err := os.ReadFile(rep.Path)
	if err != nil || !strings.Contains(string(page), "<html") {
		t.Fatalf("report page %s: %v", rep.Path, err)
	}
	e.mu.Lock()
	external := e.external
	e.mu.Unlock()
	if len(external) != 1 || uri.URI(external[0]).FsPath() != rep.Path {
		t.Errorf("documents shown externally: %q, want the report %s", external, rep.Path)
	}
}

// TestFineTuneReportWithoutShowDocument: a client that cannot show documents gets the
// page's path to open itself.
func TestFineTuneReportWithoutShowDocument(t *testing.T) {
	e := newEditor(t, sampleWorkspace, ollama.Config{Host: "127.0.0.1:1", Model: "m"}, protocol.ClientCapabilities{}, nil)
	t.Setenv("FROGNANO_CACHE", e.registryCache)
	var rep struct {
		Path  string
		Shown bool
	}
	if err := e.command(CommandFineTuneReport, &rep); err != nil || rep.Shown {
		t.Fatalf("report: %+v %v", rep, err)
	}
	if _, err := os.Stat(rep.Path); err != nil {
		t.Fatal(err)
	}
	e.waitMessage("fine-tuning has not run on")
	if err := e.command("frognano.nope", nil); err == nil || err.(*jsonrpc2.Error).Code != jsonrpc2.MethodNotFound {
		t.Errorf("unknown command: %v", err)
	}
}

// TestFineTuningOfSummary: the headline numbers come from the report's Summary as
// `frognano finetune status` shows them; a Summary without a gate has no pass rates.
func TestFineTuningOfSummary(t *testing.T) {
	sum := &report.Summary{Started: true, HeldOutNow: &report.PassRate{Rate: 0.55}, HeldOutStart: &report.PassRate{Rate: 0.4},
		Tasks: report.Tasks{Training: 9, InBand: 4}, Iterations: report.Counts{Done: 3, Accepted: 2}}
	ft := fineTuningOf(&daemon.Overview{Repo: "/r", Running: true, PID: 7, Status: &daemon.Status{Phase: loop.Phase("rollouts"), Fraction: 0.5}, Summary: sum})
	if ft.State != FineTuningRunning || ft.PID != 7 || ft.Phase != "rollouts" || ft.HeldOutNow == nil || *ft.HeldOutNow != 0.55 ||
		ft.HeldOutStart == nil || *ft.HeldOutStart != 0.4 || ft.InBand != 4 || ft.Tasks != 9 || ft.Iterations != 3 || ft.Accepted != 2 {
		t.Errorf("with a summary: %+v", ft)
	}
	ft = fineTuningOf(&daemon.Overview{Repo: "/r", Summary: &report.Summary{Started: true}})
	if ft.State != FineTuningOff || ft.HeldOutNow != nil || ft.HeldOutStart != nil {
		t.Errorf("before any gate: %+v", ft)
	}
}
