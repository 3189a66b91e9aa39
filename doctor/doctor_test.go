package doctor

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frognano/frognano/agent/sandbox"
	"github.com/frognano/frognano/ollama"
	"github.com/frognano/frognano/ollama/modelgen"
	"github.com/frognano/frognano/ollama/ollamatest"
)

func find(t *testing.T, r Report, name string) Result {
	t.Helper()
	for _, c := range r {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no %q check in %+v", name, r)
	return Result{}
}

func TestDoctorAgainstRealServer(t *testing.T) {
	srv := ollamatest.Start(t)
	ctx := context.Background()
	gguf := filepath.Join(t.TempDir(), "m.gguf")
	if _, err := modelgen.Scripted(gguf, modelgen.Qwen3, modelgen.Script{Turns: []modelgen.Turn{{Content: "hi there"}}}); err != nil {
		t.Fatal(err)
	}
	if err := ollama.Create(ctx, srv.Client, ollama.FrogNanoRequest("frognano:4b", gguf, 0), nil); err != nil {
		t.Fatal(err)
	}
	srv.Scripted("no-tools", modelgen.Llama, modelgen.Script{NoTools: true, Turns: []modelgen.Turn{{Content: "hi there"}}})

	t.Run("up", func(t *testing.T) {
		r := Run(ctx, ollama.Config{Host: srv.Host})
		var out bytes.Buffer
		Print(&out, r)
		if r.Failed() {
			t.Fatalf("doctor failed on a healthy setup:\n%s", out.String())
		}
		if v := find(t, r, "ollama").Verdict; !strings.Contains(v, "version "+ollama.Version) {
			t.Errorf("ollama verdict %q lacks the version", v)
		}
		m := find(t, r, "model")
		if m.Status != OK || !strings.Contains(m.Verdict, "frognano:4b present (qwen3, context 131072 tokens, tools: yes, thinking: yes)") {
			t.Errorf("model: %+v", m)
		}
		if c := find(t, r, "num_ctx"); c.Status != OK {
			t.Errorf("num_ctx: %+v", c)
		}
		if !strings.Contains(out.String(), "frognano is ready") {
			t.Errorf("report:\n%s", out.String())
		}
	})
	t.Run("num_ctx too big", func(t *testing.T) {
		r := Run(ctx, ollama.Config{Host: srv.Host, NumCtx: 200000})
		c := find(t, r, "num_ctx")
		if c.Status != Fail || !strings.Contains(c.Fix, "FROGNANO_NUM_CTX to 131072 or less") || !r.Failed() {
			t.Errorf("num_ctx: %+v", c)
		}
	})
	t.Run("model missing", func(t *testing.T) {
		r := Run(ctx, ollama.Config{Host: srv.Host, Model: "nope:1b"})
		m := find(t, r, "model")
		if m.Status != Fail || !strings.Contains(m.Verdict, `"nope:1b" is not installed`) || !strings.Contains(m.Fix, "frognano model import") {
			t.Errorf("model: %+v", m)
		}
		if !r.Failed() {
			t.Error("a missing model must fail the report")
		}
	})
	t.Run("model without tools", func(t *testing.T) {
		r := Run(ctx, ollama.Config{Host: srv.Host, Model: "no-tools"})
		if m := find(t, r, "model"); m.Status != Fail || !strings.Contains(m.Verdict, "tools: no") {
			t.Errorf("model: %+v", m)
		}
	})
	t.Run("down", func(t *testing.T) {
		// A port that was free a moment ago: nothing listens there.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		r := Run(ctx, ollama.Config{Host: addr})
		o := find(t, r, "ollama")
		if o.Status != Fail || !strings.Contains(o.Verdict, fmt.Sprintf("not reachable at http://%s", addr)) || !strings.Contains(o.Fix, "ollama serve") {
			t.Errorf("ollama: %+v", o)
		}
		if m := find(t, r, "model"); m.Status != Skip {
			t.Errorf("model check should be skipped when Ollama is down: %+v", m)
		}
		if !r.Failed() {
			t.Error("Ollama down must fail the report")
		}
	})
}

// The watch check reads the kernel's inotify limit: a low one is a warning with the
// sysctl that raises it, this machine's own is read as it is, and a missing file says
// what the language server does instead.
func TestWatchLimit(t *testing.T) {
	defer func(p string) { maxUserWatches = p }(maxUserWatches)
	if r := checkWatch(context.Background(), nil); r.Status != OK && r.Status != Warn || !strings.Contains(r.Verdict, "inotify watch limit") {
		t.Errorf("this machine's limit: %+v", r)
	}
	p := filepath.Join(t.TempDir(), "max_user_watches")
	for _, tc := range []struct {
		content string
		want    Status
		fix     bool
	}{{"8192\n", Warn, true}, {"524288\n", OK, false}, {"junk", Info, false}} {
		os.WriteFile(p, []byte(tc.content), 0o644)
		maxUserWatches = p
		r := checkWatch(context.Background(), nil)
		if r.Status != tc.want || (r.Fix != "") != tc.fix || tc.fix && !strings.Contains(r.Fix, "sysctl fs.inotify.max_user_watches=") {
			t.Errorf("limit %q: %+v", tc.content, r)
		}
	}
	maxUserWatches = filepath.Join(t.TempDir(), "absent")
	if r := checkWatch(context.Background(), nil); r.Status != Info || !strings.Contains(r.Verdict, "compares the workspace") {
		t.Errorf("no inotify: %+v", r)
	}
}

// The sandbox line says the mode's guarantees and, deny by default, what is bound back.
func TestSandboxSaysWhatIsBound(t *testing.T) {
	r := checkSandbox(context.Background(), &state{})
	if !strings.HasPrefix(r.Verdict, "sandbox mode ") {
		t.Fatalf("verdict %q", r.Verdict)
	}
	if strings.HasPrefix(r.Verdict, "sandbox mode bwrap") && (!strings.Contains(r.Verdict, "homes and /run hidden") || !strings.Contains(r.Verdict, "bound back read-only: ")) {
		t.Errorf("bwrap verdict does not say what is hidden and bound back: %q", r.Verdict)
	}
	t.Log(r.Verdict)
	if got := boundSummary([]string{"/home", "/run"}, []sandbox.Allowed{{Path: "/a"}, {Path: "/b"}, {Path: "/c"}, {Path: "/d"}, {Path: "/e"}}); got != "hidden: /home, /run; bound back read-only: 5 (/a, /b, /c, /d, …)" {
		t.Errorf("boundSummary = %q", got)
	}
}
