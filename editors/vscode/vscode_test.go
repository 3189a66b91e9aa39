// Package vscode runs the VS Code extension's end-to-end test (test/e2e.mjs) in real VS Code
// (code-server + headless Chromium) against the real `frognano lsp` and a real Ollama
// serving a scripted model. Everything it needs is installed by test/run-e2e.sh.
//
// The folder is opened untrusted (Restricted Mode) and its own .vscode/settings.json names
// another binary and another Ollama: the test fails if either is used (issue 9, finding 4).
package vscode

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/frognano/frognano/demo"
	"github.com/frognano/frognano/finetune/registry/registrytest"
	"github.com/frognano/frognano/internal/frognanotest"
	"github.com/frognano/frognano/ollama"
	"github.com/frognano/frognano/ollama/modelgen"
	"github.com/frognano/frognano/ollama/ollamatest"
)

// ready says whether this machine has what the e2e needs: under CI it must (setup.sh
// installs it); elsewhere the test runs only once code-server is in the cache.
func ready(t *testing.T) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		return
	}
	if _, err := os.Stat(filepath.Join(ollama.CacheDir(), "code-server")); err != nil {
		t.Skip("skipping: code-server is not installed; run editors/vscode/test/install-code-server.sh (CI does)")
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("skipping: npm not installed")
	}
}

func TestVSCodeFixFailingTest(t *testing.T) {
	ready(t)
	srv := ollamatest.Start(t)
	srv.Scripted("fixer", modelgen.Qwen3, demo.Script())
	bin := frognanotest.Build(t)
	project := t.TempDir()
	if err := demo.WriteSample(context.Background(), project); err != nil {
		t.Fatal(err)
	}
	out := os.Getenv("FROGNANO_E2E_OUT")
	if out == "" {
		out = t.TempDir()
	}
	// Fine-tuning has a model in use for the folder the e2e opens (the demo's episode again,
	// so the fix still works): the status bar and Show status must name it.
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	work, lspCache := filepath.Join(tmp, "work"), t.TempDir()
	fineTuned := registrytest.AcceptScripted(t, srv, filepath.Join(work, "project"), lspCache, "fixer", demo.Script())
	// A real fine-tuning daemon for the project, waiting for its hours: e2e.mjs shows, stops it.
	if err := os.CopyFS(filepath.Join(work, "project"), os.DirFS(project)); err != nil {
		t.Fatal(err)
	}
	daemonPID := frognanotest.StartDaemon(t, bin, filepath.Join(work, "project"), lspCache)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "test/run-e2e.sh")
	cmd.Env = append(os.Environ(),
		"FROGNANO_E2E_WORK="+work,
		"FROGNANO_E2E_LSP_CACHE="+lspCache,
		"FROGNANO_E2E_FINETUNED="+fineTuned,
		"FROGNANO_E2E_DAEMON_PID="+strconv.Itoa(daemonPID),
		"FROGNANO_BIN="+bin,
		"OLLAMA_HOST="+srv.Host,
		"FROGNANO_MODEL=fixer",
		"FROGNANO_NUM_CTX=16384",
		"FROGNANO_E2E_PROJECT="+project,
		"FROGNANO_E2E_OUT="+out,
	)
	combined, err := cmd.CombinedOutput()
	t.Logf("e2e output:\n%s", combined)
	if err != nil {
		t.Fatalf("the VS Code e2e failed: %v (screenshots and logs in %s)", err, out)
	}
	if !strings.Contains(string(combined), "1 passed, 0 failed") {
		t.Fatalf("the e2e did not report a pass")
	}
	if frognanotest.Alive(daemonPID) {
		t.Errorf("the fine-tuning daemon (pid %d) still runs after \"FrogNano: Stop fine-tuning\"", daemonPID)
	}
	_, report, _ := strings.Cut(string(combined), "] report: ")
	report, _, _ = strings.Cut(report, "\n")
	if b, err := os.ReadFile(report); err != nil || !strings.Contains(string(b), "<html") {
		t.Errorf("the fine-tuning report %q: %v", report, err)
	}
	for _, shot := range []string{"menu.png", "result.png"} {
		if st, err := os.Stat(filepath.Join(out, shot)); err != nil || st.Size() == 0 {
			t.Errorf("screenshot %s missing: %v", shot, err)
		}
	}
}
