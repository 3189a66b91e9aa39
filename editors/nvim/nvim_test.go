// Package nvim tests the Neovim plugin inside real, headless Neovim against the real
// `frognano lsp` and a real Ollama serving a scripted model.
package nvim

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frognano/frognano/demo"
	"github.com/frognano/frognano/internal/frognanotest"
	"github.com/frognano/frognano/ollama/modelgen"
	"github.com/frognano/frognano/ollama/ollamatest"
)

func nvim(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("nvim")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("Neovim is required under CI: apt-get install neovim (scripts/setup.sh does)")
		}
		t.Skip("skipping: nvim not installed")
	}
	return p
}

func TestNeovimFixFailingTest(t *testing.T) {
	nv := nvim(t)
	srv := ollamatest.Start(t)
	srv.Scripted("fixer", modelgen.Qwen3, demo.Script())
	bin := frognanotest.Build(t)
	project := t.TempDir()
	if err := demo.WriteSample(context.Background(), project); err != nil {
		t.Fatal(err)
	}
	plugin, _ := filepath.Abs(".")
	home := t.TempDir()
	out := filepath.Join(t.TempDir(), "out.txt")
	html := filepath.Join(t.TempDir(), "preview.html")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nv, "--headless", "-u", "NONE", "-c", "luafile test/fix_test.lua")
	cmd.Env = append(os.Environ(),
		"HOME="+home,
		"XDG_CONFIG_HOME="+filepath.Join(home, "config"),
		"XDG_DATA_HOME="+filepath.Join(home, "data"),
		"XDG_STATE_HOME="+filepath.Join(home, "state"),
		"XDG_CACHE_HOME="+filepath.Join(home, "cache"),
		"FROGNANO_CACHE="+filepath.Join(home, "frognano"),
		"OLLAMA_HOST="+srv.Host,
		"FROGNANO_MODEL=fixer",
		"FROGNANO_NUM_CTX=16384",
		"FROGNANO_BIN="+bin,
		"FROGNANO_PLUGIN="+plugin,
		"FROGNANO_PROJECT="+project,
		"FROGNANO_TEST_OUT="+out,
		"FROGNANO_TEST_HTML="+html,
		"PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"),
	)
	combined, err := cmd.CombinedOutput()
	report, _ := os.ReadFile(out)
	t.Logf("neovim said:\n%s", report)
	if err != nil {
		t.Fatalf("nvim: %v\n%s", err, combined)
	}
	for _, want := range []string{"actions: Fix failing test TestAdd", "calc.go: ", "return a + b", "health: "} {
		if !strings.Contains(string(report), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(project, "calc.go")); !strings.Contains(string(b), "return a - b") {
		t.Error("the file on disk changed: the edit belongs in the buffer until the user saves")
	}
	page, err := os.ReadFile(html)
	if err != nil || !strings.Contains(string(page), "return a + b") {
		t.Fatalf("the preview was not rendered: %v", err)
	}
	screenshot(t, html)
}

// screenshot renders the preview page with headless Chromium (when installed) into
// $FROGNANO_SCREENSHOT_DIR/nvim-preview.png, for the README.
func screenshot(t *testing.T, html string) {
	dir := os.Getenv("FROGNANO_SCREENSHOT_DIR")
	if dir == "" {
		return
	}
	png := filepath.Join(dir, "nvim-preview.png")
	cmd := exec.Command("/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--no-first-run", "--hide-scrollbars", "--window-size=800,300", "--screenshot="+png, "file://"+html)
	cmd.Dir = t.TempDir()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("chromium: %v\n%s", err, out)
	}
}
