package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Everything under the copy is written by the model: these tests play the model's part by
// writing there directly, as its Write tool or a Bash command would.

// agentGit runs git in the copy the way a command in the sandbox would: plain git, the
// copy's own .git.
func agentGit(t *testing.T, w *Workspace, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = w.Root
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v in the copy: %v\n%s", args, err, out)
	}
	return string(out)
}

// The git configuration, hooks and attributes the agent can write into its copy never make
// frognano run anything when it reads the changes.
func TestCopyGitSettingsRunNothing(t *testing.T) {
	w, _ := prepare(t, map[string]string{"a.txt": "one\n"}, nil)
	marker := filepath.Join(t.TempDir(), "ran")
	payload := "touch " + marker
	cfg := "[core]\n\tfsmonitor = " + payload + "\n\thooksPath = .githooks\n\tworktree = /\n" +
		"[diff]\n\texternal = " + payload + "\n[diff \"x\"]\n\ttextconv = " + payload + "\n" +
		"[filter \"x\"]\n\tclean = " + payload + "\n\tprocess = " + payload + "\n"
	f, err := os.OpenFile(filepath.Join(w.Root, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(cfg)
	f.Close()
	write(t, w.Root, map[string]string{
		".gitattributes":               "* filter=x diff=x\n",
		".githooks/pre-commit":         "#!/bin/sh\n" + payload + "\n",
		".git/hooks/post-commit":       "#!/bin/sh\n" + payload + "\n",
		".git/hooks/pre-auto-gc":       "#!/bin/sh\n" + payload + "\n",
		".git/info/attributes":         "* filter=x diff=x\n",
		".git/objects/info/alternates": "/\n",
		"a.txt":                        "two\n",
	})
	c, err := w.Changes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("reading the changes ran a command the copy's git settings named")
	}
	var got []string
	for _, f := range c.Files {
		got = append(got, string(f.Kind)+" "+f.Path)
	}
	want := "modified a.txt|created .gitattributes|created .githooks/pre-commit"
	if g := strings.Join(got, "|"); !sameSet(g, want) {
		t.Errorf("changes %q, want %q (core.worktree must not move the work tree)", g, want)
	}
	for _, f := range c.Files {
		if f.Path == "a.txt" && string(f.Content) != "two\n" {
			t.Errorf("a.txt content %q: attributes from the copy changed what was read", f.Content)
		}
	}
}

func sameSet(a, b string) bool {
	as, bs := strings.Split(a, "|"), strings.Split(b, "|")
	if len(as) != len(bs) {
		return false
	}
	seen := map[string]int{}
	for _, x := range as {
		seen[x]++
	}
	for _, x := range bs {
		seen[x]--
	}
	for _, n := range seen {
		if n != 0 {
			return false
		}
	}
	return true
}

// Where writes are not confined, a command could reach frognano's own repository of the
// copy: a change there is detected, and no change is reported from it.
func TestTamperedPrivateRepository(t *testing.T) {
	w, _ := prepare(t, map[string]string{"a.txt": "one\n"}, nil)
	f, _ := os.OpenFile(filepath.Join(w.gitDir, "config"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("[core]\n\tfsmonitor = touch /tmp/frognano-should-not-exist\n")
	f.Close()
	if _, err := w.Changes(context.Background()); !errors.Is(err, ErrTampered) {
		t.Errorf("Changes after the private config changed: %v, want ErrTampered", err)
	}
	w2, _ := prepare(t, map[string]string{"a.txt": "one\n"}, nil)
	os.WriteFile(filepath.Join(w2.gitDir, "objects", "info", "alternates"), []byte("/\n"), 0o644)
	if _, err := w2.Changes(context.Background()); !errors.Is(err, ErrTampered) {
		t.Errorf("Changes after alternates appeared: %v, want ErrTampered", err)
	}
}

// The agent's own repository behaves like a fresh clone at the base: status clean, diff
// and commit work, and what it commits changes nothing about what frognano reports.
func TestAgentRepository(t *testing.T) {
	w, _ := prepare(t, map[string]string{"a.txt": "one\n", "sub/b.txt": "b\n"}, map[string][]byte{"a.txt": []byte("overlay\n")})
	if st := agentGit(t, w, "status", "--porcelain"); st != "" {
		t.Fatalf("the agent's repository is not clean at the start: %q", st)
	}
	if log := agentGit(t, w, "log", "--format=%s"); strings.TrimSpace(log) != "frognano: base" {
		t.Errorf("log %q", log)
	}
	write(t, w.Root, map[string]string{"a.txt": "agent\n"})
	if d := agentGit(t, w, "diff"); !strings.Contains(d, "+agent") {
		t.Errorf("git diff in the copy: %q", d)
	}
	agentGit(t, w, "commit", "-qam", "the agent's commit")
	agentGit(t, w, "stash", "list")
	c, err := w.Changes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Files) != 1 || c.Files[0].Path != "a.txt" || string(c.Files[0].Base) != "overlay\n" || string(c.Files[0].Content) != "agent\n" {
		t.Errorf("changes after the agent committed: %+v", c.Files)
	}
}

// A link the agent makes is reported as a link, never as what it points to.
func TestLinksAreNotFollowed(t *testing.T) {
	w, _ := prepare(t, map[string]string{"a.txt": "one\n"}, nil)
	secret := filepath.Join(t.TempDir(), "id_rsa")
	os.WriteFile(secret, []byte("PRIVATE KEY\n"), 0o600)
	for name, target := range map[string]string{"notes.txt": secret, "env.txt": "/proc/self/environ", "shadow.txt": "/etc/shadow", "inside": "a.txt"} {
		if err := os.Symlink(target, filepath.Join(w.Root, name)); err != nil {
			t.Fatal(err)
		}
	}
	c, err := w.Changes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Files) != 4 {
		t.Fatalf("changes: %+v", c.Files)
	}
	for _, f := range c.Files {
		if !f.IsLink() || f.Kind != Created {
			t.Errorf("%s: kind %s mode %s, want a created link", f.Path, f.Kind, f.Mode)
		}
		if bytes.Contains(f.Content, []byte("PRIVATE")) || bytes.Contains(f.Content, []byte("PATH=")) || bytes.Contains(f.Content, []byte("root:")) {
			t.Errorf("%s: the content of the link's target was read: %q", f.Path, f.Content)
		}
	}
	if strings.Contains(c.Diff, "PRIVATE") {
		t.Errorf("the diff holds the target's content")
	}

	dst := t.TempDir()
	os.WriteFile(filepath.Join(dst, "a.txt"), []byte("one\n"), 0o644)
	err = Apply(dst, c)
	if err == nil || !strings.Contains(err.Error(), "outside the folder") {
		t.Fatalf("Apply of links to outside: %v", err)
	}
	if entries, _ := os.ReadDir(dst); len(entries) != 1 {
		t.Errorf("a refused change wrote something: %v", entries)
	}
	// Only the link inside: applied, as a link.
	var inside Changes
	for _, f := range c.Files {
		if f.Path == "inside" {
			inside.Files = append(inside.Files, f)
		}
	}
	if err := Apply(dst, &inside); err != nil {
		t.Fatal(err)
	}
	if target, err := os.Readlink(filepath.Join(dst, "inside")); err != nil || target != "a.txt" {
		t.Errorf("the link inside was not made as a link: %q %v", target, err)
	}
}

// A committed link can be changed or removed, and is compared by its target.
func TestCommittedLinkChanges(t *testing.T) {
	src := t.TempDir()
	write(t, src, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	os.Symlink("a.txt", filepath.Join(src, "cur"))
	os.Symlink("b.txt", filepath.Join(src, "old"))
	w, err := Prepare(context.Background(), src, filepath.Join(t.TempDir(), "copy"), nil)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(w.Root, "cur"))
	os.Symlink("b.txt", filepath.Join(w.Root, "cur"))
	os.Remove(filepath.Join(w.Root, "old"))
	c, err := w.Changes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := Apply(src, c); err != nil {
		t.Fatalf("Apply of a changed and a removed link: %v", err)
	}
	if target, _ := os.Readlink(filepath.Join(src, "cur")); target != "b.txt" {
		t.Errorf("cur -> %q, want b.txt", target)
	}
	if _, err := os.Lstat(filepath.Join(src, "old")); err == nil {
		t.Error("old was not removed")
	}
	if b, _ := os.ReadFile(filepath.Join(src, "a.txt")); string(b) != "a\n" {
		t.Errorf("the link's old target was written: %q", b)
	}
}

// Apply never writes through a link in the user's folder, even one the agent removed in
// its copy and replaced by a folder.
func TestApplyDoesNotWriteThroughLinks(t *testing.T) {
	src := t.TempDir()
	outside := t.TempDir()
	write(t, src, map[string]string{"a.txt": "a\n"})
	w, err := Prepare(context.Background(), src, filepath.Join(t.TempDir(), "copy"), nil)
	if err != nil {
		t.Fatal(err)
	}
	write(t, w.Root, map[string]string{"lib/evil.txt": "planted\n"})
	c, err := w.Changes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Meanwhile the user's folder got a link where the agent made a folder.
	os.Symlink(outside, filepath.Join(src, "lib"))
	if err := Apply(src, c); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("Apply through a link: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "evil.txt")); err == nil {
		t.Error("Apply wrote through the link")
	}
	// A link whose text stays inside but whose path goes through a link of the user's.
	os.Symlink("/etc", filepath.Join(src, "etc"))
	through := &Changes{Files: []FileChange{{Kind: Created, Path: "sh", Content: []byte("etc/shadow"), Mode: ModeLink}}}
	if err := Apply(src, through); err == nil || !strings.Contains(err.Error(), "goes through the link etc") {
		t.Errorf("Apply of a link out through the user's link: %v", err)
	}
	// A forged set removing a file through a link, then the link (found in review).
	os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o644)
	os.Symlink(outside, filepath.Join(src, "ext"))
	removal := &Changes{Files: []FileChange{
		{Kind: Deleted, Path: "ext/secret", Base: []byte("s"), BaseMode: ModeFile},
		{Kind: Deleted, Path: "ext", Base: []byte(outside), BaseMode: ModeLink},
	}}
	if err := Apply(src, removal); err == nil {
		t.Error("Apply removed a file through a link")
	}
	if _, err := os.Stat(filepath.Join(outside, "secret")); err != nil {
		t.Errorf("the file outside is gone: %v", err)
	}
	forged := &Changes{Files: []FileChange{{Kind: Created, Path: "../escape.txt", Content: []byte("x"), Mode: ModeFile}}}
	if err := Apply(src, forged); err == nil {
		t.Error("Apply of a path with ..")
	}
	forged = &Changes{Files: []FileChange{{Kind: Created, Path: ".git/hooks/pre-commit", Content: []byte("x"), Mode: ModeExec}}}
	if err := Apply(src, forged); err == nil {
		t.Error("Apply into .git")
	}
}

func TestLinkInside(t *testing.T) {
	for _, c := range []struct {
		rel, target string
		want        bool
	}{
		{"a", "b", true},
		{"d/a", "../b", true},
		{"d/e/a", "../../b/c", true},
		{"a", "../b", false},
		{"d/a", "../../b", false},
		{"a", "/etc/passwd", false},
		{"d/a", "x/../../b", false},
		{"a", "./b", true},
		{"a", ".git/config", false},
		{"a", "", false},
	} {
		if got := LinkInside(c.rel, c.target); got != c.want {
			t.Errorf("LinkInside(%q, %q) = %v, want %v", c.rel, c.target, got, c.want)
		}
	}
}

// The user's repository is untouched by preparing a copy, whatever GIT_* variables
// frognano inherited (a git hook exports them).
func TestInheritedGitDirIsIgnored(t *testing.T) {
	src := t.TempDir()
	write(t, src, map[string]string{"a.txt": "a\n"})
	run := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=u", "GIT_AUTHOR_EMAIL=u@u", "GIT_COMMITTER_NAME=u", "GIT_COMMITTER_EMAIL=u@u")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run("init", "-q")
	run("add", "-A")
	run("commit", "-qm", "user's")
	head := run("rev-parse", "HEAD")
	t.Setenv("GIT_DIR", filepath.Join(src, ".git"))
	t.Setenv("GIT_WORK_TREE", src)
	t.Setenv("GIT_INDEX_FILE", filepath.Join(src, ".git", "index"))
	w, err := Prepare(context.Background(), src, filepath.Join(t.TempDir(), "copy"), nil)
	if err != nil {
		t.Fatal(err)
	}
	write(t, w.Root, map[string]string{"a.txt": "changed\n"})
	if _, err := w.Changes(context.Background()); err != nil {
		t.Fatal(err)
	}
	os.Unsetenv("GIT_DIR")
	os.Unsetenv("GIT_WORK_TREE")
	os.Unsetenv("GIT_INDEX_FILE")
	if now := run("rev-parse", "HEAD"); now != head {
		t.Errorf("the user's branch moved: %s -> %s", head, now)
	}
	if st := run("status", "--porcelain"); st != "" {
		t.Errorf("the user's repository changed: %q", st)
	}
}

// What git must not see is left out of the changes and named: a nested repository's .git
// (its files are then shown as they are), a .git file pointing at another repository, a
// .GIT folder, FIFOs where git would open them, files over the size cap (sparse ones cost
// the agent nothing), and new content beyond the total cap.
func TestPrunedAndCapped(t *testing.T) {
	w, _ := prepare(t, map[string]string{"a.txt": "a\n", "d/.gitignore": "*.log\n"}, nil)
	other := t.TempDir()
	exec.Command("git", "init", "-q", other).Run()
	exec.Command("git", "-C", other, "-c", "user.name=a", "-c", "user.email=a@a", "commit", "-q", "--allow-empty", "-m", "x").Run()
	otherHead, _ := exec.Command("git", "-C", other, "rev-parse", "HEAD").Output()
	write(t, w.Root, map[string]string{"sub/x.txt": "x\n", "n/f.txt": "f\n", ".GIT/config": "x", "ok.txt": "ok\n"})
	exec.Command("git", "init", "-q", filepath.Join(w.Root, "sub")).Run()
	os.WriteFile(filepath.Join(w.Root, "n", ".git"), []byte("gitdir: "+other+"/.git\n"), 0o644)
	for _, fifo := range []string{".gitignore", "d/.gitignore", ".gitattributes", "pipe"} {
		os.Remove(filepath.Join(w.Root, fifo))
		if err := syscall.Mkfifo(filepath.Join(w.Root, fifo), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"sparse1", "sparse2"} {
		f, _ := os.Create(filepath.Join(w.Root, name))
		f.Truncate(1 << 30)
		f.Close()
	}
	done := make(chan struct{})
	var c *Changes
	var err error
	go func() { c, err = w.Changes(context.Background()); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("Changes blocked")
	}
	if err != nil {
		t.Fatal(err)
	}
	var files, skipped []string
	for _, f := range c.Files {
		files = append(files, string(f.Kind)+" "+f.Path)
	}
	for _, s := range c.Skipped {
		skipped = append(skipped, s.Path)
	}
	if g := strings.Join(files, "|"); !sameSet(g, "created sub/x.txt|created n/f.txt|created ok.txt|deleted d/.gitignore") {
		t.Errorf("files %q", g)
	}
	if g := strings.Join(skipped, "|"); !sameSet(g, "sub/.git|n/.git|.GIT|.gitattributes|.gitignore|d/.gitignore|pipe|sparse1|sparse2") {
		t.Errorf("skipped %q", g)
	}
	if strings.Contains(c.Diff, strings.TrimSpace(string(otherHead))) || strings.Contains(c.Diff, "sparse") {
		t.Errorf("the diff shows what was left out:\n%s", c.Diff)
	}

	// Many files under the per-file cap, over the total one.
	w2, _ := prepare(t, map[string]string{"a.txt": "a\n"}, nil)
	chunk := bytes.Repeat([]byte("0123456789abcdef"), (MaxFileSize-1)/16)
	for i := range MaxChangeSize/len(chunk) + 2 {
		os.WriteFile(filepath.Join(w2.Root, fmt.Sprintf("big%02d", i)), chunk, 0o644)
	}
	c, err = w2.Changes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, f := range c.Files {
		total += len(f.Content)
	}
	if total > MaxChangeSize || len(c.Skipped) == 0 || len(c.Files) == 0 {
		t.Errorf("%d bytes in %d files, %d skipped", total, len(c.Files), len(c.Skipped))
	}
}

func TestToolSettings(t *testing.T) {
	c := &Changes{Files: []FileChange{{Path: "main.go"}, {Path: ".vscode/settings.json"}, {Path: ".envrc"}, {Path: "a/.vscode/x"}}}
	if got := c.ToolSettings(); len(got) != 2 || got[0] != ".vscode/settings.json" || got[1] != ".envrc" {
		t.Errorf("ToolSettings = %v", got)
	}
}

// Apply is all or nothing: a write that fails halfway puts every file back as it was.
func TestApplyRollsBack(t *testing.T) {
	src := t.TempDir()
	write(t, src, map[string]string{"a.txt": "a\n", "b.txt": "b\n", "d/x.txt": "x\n"})
	os.Chmod(filepath.Join(src, "a.txt"), 0o600)
	w, err := Prepare(context.Background(), src, filepath.Join(t.TempDir(), "copy"), nil)
	if err != nil {
		t.Fatal(err)
	}
	write(t, w.Root, map[string]string{"a.txt": "agent\n", "new/c.txt": "c\n", "z.txt": "z\n"})
	os.Remove(filepath.Join(w.Root, "b.txt"))
	os.RemoveAll(filepath.Join(w.Root, "d"))
	os.Symlink("a.txt", filepath.Join(w.Root, "d")) // a folder replaced by a link
	c, err := w.Changes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	snapshot := func() string {
		var b strings.Builder
		filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
			r, _ := filepath.Rel(src, p)
			info, _ := d.Info()
			content, _ := os.ReadFile(p)
			if d.Type()&fs.ModeSymlink != 0 {
				content = nil
			}
			fmt.Fprintf(&b, "%s %v %q\n", r, info.Mode(), content)
			return nil
		})
		return b.String()
	}
	before := snapshot()
	failWrite = func(rel string) error {
		if rel == "z.txt" {
			return errors.New("no space left on device")
		}
		return nil
	}
	err = Apply(src, c)
	failWrite = nil
	if err == nil || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("Apply with a failing write: %v", err)
	}
	if after := snapshot(); after != before {
		t.Errorf("not rolled back:\nbefore\n%s\nafter\n%s", before, after)
	}
	if err := Apply(src, c); err != nil {
		t.Fatal(err)
	}
	if target, _ := os.Readlink(filepath.Join(src, "d")); target != "a.txt" {
		t.Errorf("the folder was not replaced by the link: %q", target)
	}
	if b, _ := os.ReadFile(filepath.Join(src, "new", "c.txt")); string(b) != "c\n" {
		t.Errorf("new/c.txt: %q", b)
	}
	if st, _ := os.Stat(filepath.Join(src, "a.txt")); st.Mode().Perm() != 0o600 {
		t.Errorf("a.txt lost its permissions: %v", st.Mode())
	}
	entries, _ := os.ReadDir(src)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".frognano-apply-") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}
