package gitcmd

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A repository whose own configuration and attributes name commands: none of them may run
// when frognano asks git for a diff, adds files, or commits.
func TestHostileRepositoryRunsNothing(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(t.TempDir(), "ran")
	payload := "touch " + marker
	r := Repo{Dir: dir, Trust: Hostile, Env: []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t"}}
	ctx := context.Background()
	if _, err := r.Run(ctx, nil, "init", "-q"); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\n"), 0o644)
	if _, err := r.Run(ctx, nil, "add", "-A"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(ctx, nil, "commit", "-qm", "base"); err != nil {
		t.Fatal(err)
	}
	// What a model-written command could write into the copy's repository and work tree.
	cfg := "[core]\n\tfsmonitor = " + payload + "\n\thooksPath = hooks\n\tpager = " + payload + "\n" +
		"[diff]\n\texternal = " + payload + "\n" +
		"[diff \"evil\"]\n\ttextconv = " + payload + "\n\tcommand = " + payload + "\n" +
		"[filter \"evil\"]\n\tclean = " + payload + "\n\tsmudge = " + payload + "\n\tprocess = " + payload + "\n"
	f, _ := os.OpenFile(filepath.Join(dir, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(cfg)
	f.Close()
	os.MkdirAll(filepath.Join(dir, "hooks"), 0o755)
	for _, h := range []string{"pre-commit", "post-commit", "pre-auto-gc", "post-index-change", "reference-transaction"} {
		os.WriteFile(filepath.Join(dir, "hooks", h), []byte("#!/bin/sh\n"+payload+"\n"), 0o755)
		os.WriteFile(filepath.Join(dir, ".git", "hooks", h), []byte("#!/bin/sh\n"+payload+"\n"), 0o755)
	}
	os.WriteFile(filepath.Join(dir, ".gitattributes"), []byte("* filter=evil diff=evil\n"), 0o644)
	os.WriteFile(filepath.Join(dir, ".git", "info", "attributes"), []byte(NeutralAttributes), 0o644)
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("two\n"), 0o644)

	for _, args := range [][]string{
		{"status", "--porcelain"},
		{"add", "-A"},
		{"diff", "--cached", "HEAD"},
		{"diff", "HEAD~0"},
		{"commit", "-qm", "next"},
		{"log", "-p", "-1"},
		{"show", "HEAD"},
	} {
		out, err := r.Run(ctx, nil, args...)
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("git %v ran a command the repository configured; output %q", args, out)
		}
	}
	out, _ := r.Run(ctx, nil, "show", "HEAD:a.txt")
	if string(out) != "two\n" {
		t.Errorf("committed content %q, want the file's bytes", out)
	}
}

// Variables a git hook exports must not send a command meant for one repository to another.
func TestInheritedGitVariablesAreDropped(t *testing.T) {
	user := t.TempDir()
	exec.Command("git", "init", "-q", user).Run()
	t.Setenv("GIT_DIR", filepath.Join(user, ".git"))
	t.Setenv("GIT_INDEX_FILE", filepath.Join(user, ".git", "index"))
	t.Setenv("GIT_WORK_TREE", user)
	t.Setenv("GIT_CONFIG_COUNT", "1")
	t.Setenv("GIT_CONFIG_KEY_0", "core.fsmonitor")
	t.Setenv("GIT_CONFIG_VALUE_0", "touch /nonexistent/x")
	copyDir := t.TempDir()
	r := Repo{Dir: copyDir, Trust: Hostile}
	if _, err := r.Run(context.Background(), nil, "init", "-q"); err != nil {
		t.Fatal(err)
	}
	out, err := r.Run(context.Background(), nil, "rev-parse", "--absolute-git-dir")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != filepath.Join(copyDir, ".git") {
		t.Errorf("git used %s, want the copy's own repository", got)
	}
	for _, kv := range r.Environ() {
		for _, bad := range []string{"GIT_DIR=", "GIT_INDEX_FILE=", "GIT_WORK_TREE=", "GIT_CONFIG_COUNT="} {
			if strings.HasPrefix(kv, bad) {
				t.Errorf("environment keeps %s", kv)
			}
		}
	}
}
