package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A user's repository kept outside the homes and /tmp (/var/tmp here, /srv or /work on a
// real machine) was readable by every command, history and all: Options.Hide empties it,
// through a link to it too, while a copy and a cache bound inside it still work (in unshare
// mode too, where what lies beside them is masked instead); a hidden file reads as empty. Before Hide, the first check failed on the .git folder's secret.
func TestHiddenPaths(t *testing.T) {
	for _, m := range []Mode{ModeBwrap, ModeUnshare} {
		t.Run(string(m), func(t *testing.T) {
			base := varTmpDir(t)
			os.Chmod(base, 0o755)
			repo := filepath.Join(base, "repo")
			for _, d := range []string{filepath.Join(repo, ".git"), filepath.Join(repo, "copy"), filepath.Join(base, "state")} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			secrets := map[string]string{
				filepath.Join(repo, ".git", "COMMIT_EDITMSG"): secretMark + "history",
				filepath.Join(repo, "fix_test.go"):            secretMark + "tests",
				filepath.Join(base, "state", "task.json"):     secretMark + "store",
				filepath.Join(base, "answers.patch"):          secretMark + "file",
			}
			for p, s := range secrets {
				if err := os.WriteFile(p, []byte(s+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			link := filepath.Join(base, "state-link")
			if err := os.Symlink(filepath.Join(base, "state"), link); err != nil {
				t.Fatal(err)
			}
			// A PATH entry inside a hidden folder still runs (bwrap binds it back).
			bin := filepath.Join(repo, "tools", "bin")
			os.MkdirAll(bin, 0o755)
			if err := os.WriteFile(filepath.Join(bin, "repotool"), []byte("#!/bin/sh\necho repotool ran\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
			// Only the entry: the folder around it (an installation elsewhere) stays hidden.
			beside := filepath.Join(repo, "tools", "notes.txt")
			if err := os.WriteFile(beside, []byte(secretMark+"beside the entry\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			secrets[beside] = secretMark + "beside the entry"
			// Unshare mode binds nothing back: a hidden folder holding the cache or the copy
			// is replaced by masks of what lies beside them (before, it stayed visible).
			cache := filepath.Join(repo, "cache")
			r, err := NewRunner(context.Background(), Options{Mode: m, Writable: []string{cache},
				Hide: []string{repo, link, filepath.Join(base, "answers.patch"), filepath.Join(base, "missing"), "/usr"}})
			if err != nil {
				skipOrFail(t, m, err)
			}
			t.Cleanup(func() { r.Close() })
			var cmd strings.Builder
			for p := range secrets {
				fmt.Fprintf(&cmd, "cat %q 2>/dev/null; ", p)
			}
			fmt.Fprintf(&cmd, "ls -a %q %q 2>&1; repotool; ", repo, link)
			// /usr is never hidden: the command's own tools live there.
			fmt.Fprintf(&cmd, "test -x /usr/bin/env && echo usr-visible; echo ok > %q/built && cat %q/built", cache, cache)
			dir := filepath.Join(repo, "copy") // a copy inside a hidden folder is still the command's
			o, err := r.Run(context.Background(), Cmd{Dir: dir, Command: cmd.String(), Timeout: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(o.Stdout, secretMark) || strings.Contains(o.Stdout, "task.json") {
				t.Errorf("a hidden path shows: stdout %q stderr %q", o.Stdout, o.Stderr)
			}
			// Unshare mode shows the names of what it masks beside a needed folder.
			if m == ModeBwrap && strings.Contains(o.Stdout, "fix_test.go") {
				t.Errorf("a hidden path's names show: stdout %q stderr %q", o.Stdout, o.Stderr)
			}
			if !strings.Contains(o.Stdout, "usr-visible") {
				t.Errorf("/usr was hidden: stdout %q stderr %q", o.Stdout, o.Stderr)
			}
			if m == ModeBwrap && !strings.Contains(o.Stdout, "repotool ran\n") {
				t.Errorf("a PATH entry inside a hidden folder does not run: stdout %q stderr %q", o.Stdout, o.Stderr)
			}
			if !strings.HasSuffix(o.Stdout, "ok\n") {
				t.Errorf("the cache bound inside a hidden folder is not writable: stdout %q stderr %q", o.Stdout, o.Stderr)
			}
			for p, s := range secrets {
				if b, _ := os.ReadFile(p); !strings.Contains(string(b), s) {
					t.Fatalf("the fixture is broken, or a command changed it: %s holds %q", p, b)
				}
			}
		})
	}
}
