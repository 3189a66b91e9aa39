package sandbox

import (
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestUserGoCacheProgStaysOut: a GOCACHEPROG the user set with `go env -w` does not reach
// the commands, which would build through it instead of their own GOCACHE; the file's other
// settings do. The control: the same file read as the user's go reads it does set it.
func TestUserGoCacheProgStaysOut(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "env")
	if err := os.WriteFile(file, []byte("GOCACHEPROG=/usr/bin/false\nGOFLAGS=-tags=frognano_goenv\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	user, err := exec.Command("go", "env", "GOCACHEPROG").Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(user)) != "" {
		t.Skip("this machine's user has a GOCACHEPROG of their own")
	}
	cmd := exec.Command("go", "env", "GOCACHEPROG")
	cmd.Env = append(os.Environ(), "GOENV="+file)
	if out, err := cmd.Output(); err != nil || strings.TrimSpace(string(out)) != "/usr/bin/false" {
		t.Fatalf("the control: go env GOCACHEPROG with that file = %q, %v", out, err)
	}
	// As goEnvironment would have found it, for the runners made here.
	probeMu.Lock()
	saved, savedProbed := goEnv, goEnvProbed
	env := maps.Clone(goEnvironment(ctx))
	env["GOENV"], env["GOCACHEPROG"] = file, "/usr/bin/false"
	goEnv, goEnvProbed = env, true
	probeMu.Unlock()
	t.Cleanup(func() {
		probeMu.Lock()
		goEnv, goEnvProbed = saved, savedProbed
		probeMu.Unlock()
	})
	for _, prog := range []string{"", "/bin/ours -scratch x"} {
		r, err := NewRunner(ctx, Options{GoCache: t.TempDir(), GoCacheProg: prog, ReadOnly: []string{file}})
		if err != nil {
			t.Fatal(err)
		}
		out, err := r.Run(ctx, Cmd{Dir: t.TempDir(), Command: "go env GOCACHEPROG GOFLAGS"})
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		if want := prog + "\n-tags=frognano_goenv\n"; out.Stdout != want {
			t.Errorf("runner with GoCacheProg %q: go env GOCACHEPROG GOFLAGS = %q, want %q (%s)", prog, out.Stdout, want, out.Stderr)
		}
	}
}
