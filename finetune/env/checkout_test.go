package env

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/frognano/frognano/finetune/internal/fixture"
	"github.com/frognano/frognano/internal/gitcmd"
)

// TestExportCommit: an older commit is exported as it was, HEAD moved on; the same files
// give the same tree hash whatever the commit.
func TestExportCommit(t *testing.T) {
	ctx := context.Background()
	repo := fixture.Repo(t, map[string]string{"a.txt": "one\n"})
	old, err := Head(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	g := gitcmd.Repo{Dir: repo, Trust: gitcmd.User, Env: []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid"}}
	if err := os.WriteFile(filepath.Join(repo, "a.txt"), []byte("two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Run(ctx, nil, "commit", "-qam", "two"); err != nil {
		t.Fatal(err)
	}
	co, err := ExportCommit(ctx, repo, old[:12], filepath.Join(t.TempDir(), "old"))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(co.Dir, "a.txt")); string(got) != "one\n" || co.Commit != old {
		t.Fatalf("exported %s: a.txt %q", co.Commit, got)
	}
	head, err := Export(ctx, repo, filepath.Join(t.TempDir(), "head"))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(head.Dir, "a.txt")); string(got) != "two\n" || head.Tree == co.Tree || co.Tree == "" {
		t.Fatalf("HEAD: a.txt %q, trees %s and %s", got, head.Tree, co.Tree)
	}
	again := fixture.Repo(t, map[string]string{"a.txt": "one\n"})
	other, err := Export(ctx, again, filepath.Join(t.TempDir(), "again"))
	if err != nil {
		t.Fatal(err)
	}
	if other.Tree != co.Tree {
		t.Errorf("the same files gave the trees %s and %s", other.Tree, co.Tree)
	}
	for _, bad := range []string{"", "--output=x", "nosuchcommit"} {
		if _, err := ExportCommit(ctx, repo, bad, filepath.Join(t.TempDir(), "bad")); err == nil {
			t.Errorf("ExportCommit(%q) exported", bad)
		}
	}
}
