package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frognano/frognano/agent/sandbox"
	"github.com/frognano/frognano/agent/workspace"
)

// TestGoCacheDir: Options.GoCacheDir is the commands' GOCACHE, not the repository's own
// one that every copy of the folder shares (rollouts give each episode its own).
func TestGoCacheDir(t *testing.T) {
	ctx := context.Background()
	ws, err := workspace.Prepare(ctx, userRepo(t), filepath.Join(t.TempDir(), "repo"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Remove()
	own := filepath.Join(t.TempDir(), "gocache")
	t.Setenv("FROGNANO_SANDBOX_GOCACHE", "") // the suites' shared one would win otherwise
	for _, c := range []struct {
		opts Options
		want string
	}{{Options{GoCacheDir: own}, own}, {Options{}, sandbox.GoCacheFor(ws.Source)}} {
		r, err := newRunner(ctx, ws, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		out, err := r.Run(ctx, sandbox.Cmd{Dir: ws.Root, Command: "go env GOCACHE", Timeout: time.Minute})
		r.Close()
		if err != nil || strings.TrimSpace(string(out.Stdout)) != c.want {
			t.Errorf("GoCacheDir %q: GOCACHE %q (%v, %s), want %s", c.opts.GoCacheDir, out.Stdout, err, out.Stderr, c.want)
		}
	}
	os.RemoveAll(sandbox.GoCacheFor(ws.Source))
}
