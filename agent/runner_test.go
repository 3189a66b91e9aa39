package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frognano/frognano/agent/sandbox"
	"github.com/frognano/frognano/agent/workspace"
	"github.com/frognano/frognano/internal/gocache"
)

// A Go cache in layers is refused where the sandbox does not confine writes (unshare, none):
// there a command could rewrite the trusted layer that rewards build with. The same modes
// without it, and bubblewrap with it, still make a runner.
func TestGoCacheNeedsConfinedWrites(t *testing.T) {
	ctx := context.Background()
	user := t.TempDir()
	if err := os.WriteFile(filepath.Join(user, "go.mod"), []byte("module example.com/m\n\ngo 1.24\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, err := workspace.Prepare(ctx, user, filepath.Join(t.TempDir(), "repo"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Remove()
	if os.Getenv("FROGNANO_SANDBOX_GOCACHE") == "" {
		defer os.RemoveAll(sandbox.GoCacheFor(user))
	}
	layers := func() *gocache.Layers { return &gocache.Layers{Scratch: filepath.Join(t.TempDir(), "scratch")} }

	for _, mode := range []sandbox.Mode{sandbox.ModeUnshare, sandbox.ModeNone} {
		t.Run(string(mode), func(t *testing.T) {
			r, err := newRunnerIn(ctx, ws, Options{}, mode)
			if err != nil {
				t.Skipf("mode %s does not work here: %v", mode, err)
			}
			r.Close()
			r, err = newRunnerIn(ctx, ws, Options{GoCache: layers()}, mode)
			if err == nil {
				r.Close()
				t.Fatalf("a layered Go cache was accepted in mode %s, which does not confine writes", mode)
			}
			if !strings.Contains(err.Error(), "needs the bubblewrap sandbox") || !strings.Contains(err.Error(), string(mode)+":") {
				t.Errorf("the error does not say what is needed and what this machine has: %v", err)
			}
		})
	}
	t.Run(string(sandbox.ModeBwrap), func(t *testing.T) {
		if iso := sandbox.Detect(ctx); iso.Mode != sandbox.ModeBwrap {
			t.Skipf("no bubblewrap here: %s", iso.Summary())
		}
		r, err := newRunnerIn(ctx, ws, Options{GoCache: layers()}, sandbox.ModeBwrap)
		if err != nil {
			t.Fatalf("bubblewrap with a layered Go cache: %v", err)
		}
		r.Close()
	})
}
