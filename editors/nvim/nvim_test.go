// Package nvim tests the Neovim plugin inside real, headless Neovim against the real
// `frognano lsp` and a real Ollama serving a scripted model, on Debian's Neovim 0.7.2 and on a
// current one (scripts/fetch-nvim.sh).
package nvim

import (
	"bytes"
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
	"github.com/frognano/frognano/ollama/modelgen"
	"github.com/frognano/frognano/ollama/ollamatest"
)

// neovim is one Neovim binary and the version it reports.
type neovim struct{ version, path string }

// neovims are the versions the plugin is tested on: `nvim` on PATH (Debian's 0.7.2) and the
// current one that scripts/fetch-nvim.sh installs ($FROGNANO_NVIM_CURRENT overrides it). Under
// CI both are required.
func neovims(t *testing.T) []neovim {
	t.Helper()
	var paths []string
	if p, err := exec.LookPath("nvim"); err == nil {
		paths = append(paths, p)
	} else if os.Getenv("CI") == "true" {
		t.Fatal("Neovim is required under CI: apt-get install neovim (scripts/setup.sh does)")
	}
	current := os.Getenv("FROGNANO_NVIM_CURRENT")
	if current == "" {
		out, err := exec.Command("../../scripts/fetch-nvim.sh", "--installed").Output()
		if err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatal("a current Neovim is required under CI: scripts/fetch-nvim.sh (scripts/setup.sh runs it)")
			}
			t.Log("a current Neovim is not installed (scripts/fetch-nvim.sh): testing only the one on PATH")
		}
		current = strings.TrimSpace(string(out))
	}
	if current != "" {
		paths = append(paths, current)
	}
	var out []neovim
	seen := map[string]bool{}
	for _, p := range paths {
		v, err := exec.Command(p, "--version").Output()
		if err != nil {
			t.Fatalf("%s --version: %v", p, err)
		}
		version, _, _ := strings.Cut(string(v), "\n")
		version = strings.TrimPrefix(version, "NVIM ")
		if !seen[version] {
			seen[version] = true
			out = append(out, neovim{version, p})
		}
	}
	if len(out) == 0 {
		t.Skip("skipping: nvim not installed")
	}
	return out
}

// run runs a test script in headless Neovim with isolated folders; it returns the script's
// report ($FROGNANO_TEST_OUT) and fails the test if Neovim failed or warned of a deprecation.
func run(t *testing.T, nv neovim, script string, env ...string) string {
	t.Helper()
	plugin, _ := filepath.Abs(".")
	home := t.TempDir()
	out := filepath.Join(t.TempDir(), "out.txt")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nv.path, "--headless", "-u", "NONE", "-c", "luafile "+script)
	cmd.Env = append(os.Environ(),
		"HOME="+home,
		"XDG_CONFIG_HOME="+filepath.Join(home, "config"),
		"XDG_DATA_HOME="+filepath.Join(home, "data"),
		"XDG_STATE_HOME="+filepath.Join(home, "state"),
		"XDG_CACHE_HOME="+filepath.Join(home, "cache"),
		"FROGNANO_CACHE="+filepath.Join(home, "frognano"),
		"FROGNANO_PLUGIN="+plugin,
		"FROGNANO_TEST_OUT="+out,
	)
	cmd.Env = append(cmd.Env, env...)
	combined, err := cmd.CombinedOutput()
	report, _ := os.ReadFile(out)
	t.Logf("neovim %s said:\n%s", nv.version, report)
	if err != nil {
		t.Fatalf("nvim: %v\n%s", err, combined)
	}
	if bytes.Contains(bytes.ToLower(combined), []byte("deprecat")) {
		t.Errorf("Neovim %s warned of a deprecation:\n%s", nv.version, combined)
	}
	return string(report)
}

// project is the demo's sample project in a new folder.
func project(t *testing.T) string {
	dir := t.TempDir()
	if err := demo.WriteSample(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestNeovimPlugin: options are validated, :FrogNano completes every subcommand, actions are
// picked by kind, and on 0.11+ vim.lsp.enable('frognano') starts the server from the shipped
// lsp/frognano.lua and lists by kind. No model is needed.
func TestNeovimPlugin(t *testing.T) {
	nvims := neovims(t)
	bin := frognanotest.Build(t)
	for _, nv := range nvims {
		t.Run(nv.version, func(t *testing.T) {
			report := run(t, nv, "test/plugin_test.lua",
				"OLLAMA_HOST=127.0.0.1:1", // down: listing actions must not need it
				"FROGNANO_BIN="+bin,
				"FROGNANO_PROJECT="+project(t),
			)
			for _, want := range []string{"completion: ", "implement", "fix picks: Repair TestAdd"} {
				if !strings.Contains(report, want) {
					t.Errorf("report lacks %q", want)
				}
			}
			if strings.Contains(nv.version, "v0.7.") {
				return
			}
			if !strings.Contains(report, "only source.frognano: source.frognano.writeTests Write tests for Add | source.frognano.explain Explain Add") {
				t.Error("vim.lsp.enable with lsp/frognano.lua did not list the actions by kind")
			}
		})
	}
}

func TestNeovimFixFailingTest(t *testing.T) {
	nvims := neovims(t)
	srv := ollamatest.Start(t)
	srv.Scripted("fixer", modelgen.Qwen3, demo.Script())
	bin := frognanotest.Build(t)
	for i, nv := range nvims {
		t.Run(nv.version, func(t *testing.T) {
			dir := project(t)
			cache, model := fineTuned(t, srv, dir, "fixer")
			html := filepath.Join(t.TempDir(), "preview.html")
			report := run(t, nv, "test/fix_test.lua",
				"FROGNANO_CACHE="+cache, // after run's own: the last one counts
				"OLLAMA_HOST="+srv.Host,
				"FROGNANO_MODEL=fixer",
				"FROGNANO_NUM_CTX=16384",
				"FROGNANO_BIN="+bin,
				"FROGNANO_PROJECT="+dir,
				"FROGNANO_TEST_HTML="+html,
				"PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"),
			)
			for _, want := range []string{"actions: Fix failing test TestAdd (quickfix.frognano.fixTest)", "calc.go: ", "return a + b", "health: ",
				"status: FrogNano: attached", "; model " + model + " (fine-tuned from fixer, step 1); Ollama ok"} {
				if !strings.Contains(report, want) {
					t.Errorf("report lacks %q", want)
				}
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "calc.go")); !strings.Contains(string(b), "return a - b") {
				t.Error("the file on disk changed: the edit belongs in the buffer until the user saves")
			}
			page, err := os.ReadFile(html)
			if err != nil || !strings.Contains(string(page), "return a + b") {
				t.Fatalf("the preview was not rendered: %v", err)
			}
			if i == 0 {
				screenshot(t, html)
			}
		})
	}
}

// fineTuned does what fine-tuning does for the repository dir, through the real registry:
// the model of step 1 (the demo's scripted episode again, so the fix still works) is
// imported and accepted by the gate, and is then in use in place of base. It returns the
// cache folder holding the registry (FROGNANO_CACHE) and the model's name.
func fineTuned(t *testing.T, srv *ollamatest.Server, dir, base string) (cache, model string) {
	t.Helper()
	cache = t.TempDir()
	repo, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return cache, registrytest.AcceptScripted(t, srv, repo, cache, base, demo.Script())
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

// TestNeovimFineTuning: in real Neovim, :FrogNano finetune start without the weights setting
// says which setting to set; :FrogNano status shows a real daemon running (and what it
// waits for), then stopped once :FrogNano finetune stop has ended its process; :FrogNano
// finetune report writes the page and hands it to the opener (window/showDocument on 0.10+,
// the path in the command's result on 0.7).
func TestNeovimFineTuning(t *testing.T) {
	nvims := neovims(t)
	bin := frognanotest.Build(t)
	for _, nv := range nvims {
		t.Run(nv.version, func(t *testing.T) {
			dir := project(t)
			cache := t.TempDir()
			pid := frognanotest.StartDaemon(t, bin, dir, cache)
			report := run(t, nv, "test/finetune_test.lua",
				"FROGNANO_CACHE="+cache,
				"OLLAMA_HOST=127.0.0.1:1",
				"FROGNANO_MODEL=m",
				"FROGNANO_BIN="+bin,
				"FROGNANO_PROJECT="+dir,
				"FROGNANO_DAEMON_PID="+strconv.Itoa(pid),
			)
			for _, want := range []string{`Start fine-tuning: set "frognano.finetune.weights" to the weights of m for fine-tuning's trainer`,
				"stop: pid " + strconv.Itoa(pid)} {
				if !strings.Contains(report, want) {
					t.Errorf("report lacks %q", want)
				}
			}
			if frognanotest.Alive(pid) {
				t.Errorf("the daemon (pid %d) still runs after :FrogNano finetune stop", pid)
			}
			_, page, _ := strings.Cut(report, "report: ")
			page = strings.TrimSpace(page)
			if b, err := os.ReadFile(page); err != nil || !strings.Contains(string(b), "<html") || filepath.Base(page) != "index.html" {
				t.Errorf("the report %q: %v", page, err)
			}
		})
	}
}
