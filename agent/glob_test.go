package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frognano/frognano/agent/workspace"
)

// Glob as the harness the model was trained in: braces, what git ignores and installed
// packages left out, sorted before the cap, and the cap said.
func TestGlobLikeTheHarness(t *testing.T) {
	user := t.TempDir()
	files := map[string]string{
		"src/a.ts": "", "src/b.tsx": "", "src/c.go": "", "src/deep/d.ts": "",
		"node_modules/pkg/index.ts": "", ".gitignore": "build/\n*.log\n",
		"build/out.ts": "", "src/debug.log": "",
	}
	for i := range 1005 {
		files[fmt.Sprintf("gen/f%04d.txt", i)] = ""
	}
	for name, content := range files {
		p := filepath.Join(user, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(content), 0o644)
	}
	ws, err := workspace.Prepare(context.Background(), user, filepath.Join(t.TempDir(), "copy"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Remove()
	e := &episode{ws: ws}
	glob := func(a args) string {
		out, err := runGlob(context.Background(), e, a)
		if err != nil {
			return "error: " + err.Error()
		}
		return out
	}
	for _, c := range []struct {
		a    args
		want string
	}{
		{args{"pattern": "**/*.{ts,tsx}"}, "src/a.ts\nsrc/b.tsx\nsrc/deep/d.ts\n"},
		{args{"pattern": "*.ts", "path": "src"}, "src/a.ts\n"},
		{args{"pattern": "node_modules/**/*.ts"}, "node_modules/pkg/index.ts\n"}, // named: not skipped
		{args{"pattern": "**/*.log"}, "No files match"},
		{args{"pattern": "src/[ab].*"}, "src/a.ts\nsrc/b.tsx\n"},
		{args{"pattern": "src/{a"}, "bad pattern"},
	} {
		if got := glob(c.a); !strings.HasPrefix(got, c.want) && !strings.Contains(got, c.want) {
			t.Errorf("Glob %v = %q, want %q", c.a, got, c.want)
		}
	}
	all := glob(args{"pattern": "**"})
	lines := strings.Split(strings.TrimSpace(all), "\n")
	if !strings.Contains(all, "(capped at 1000 files: ") || len(lines) != 1001 || lines[0] != ".gitignore" || !strings.HasPrefix(lines[1], "gen/f0000") {
		t.Errorf("the cap: %d lines, first %q, last %q", len(lines), lines[0], lines[len(lines)-1])
	}
	if strings.Contains(all, "node_modules") || strings.Contains(all, "build/") {
		t.Error("node_modules or an ignored folder was listed")
	}
}
