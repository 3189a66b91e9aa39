package learnbench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/frognano/frognano/finetune/internal/fixture"
	"github.com/frognano/frognano/internal/gitcmd"
)

// committer is the identity of the benchmark's own commits (the fixture's), so that they do
// not depend on the user's git configuration.
var committer = []string{"GIT_AUTHOR_NAME=learnbench", "GIT_AUTHOR_EMAIL=learnbench@example.invalid",
	"GIT_COMMITTER_NAME=learnbench", "GIT_COMMITTER_EMAIL=learnbench@example.invalid"}

// writeFixture writes the calc fixture (small functions, each with a doc comment that
// states its behaviour and a test that checks it closely) as a repository in dir, once.
func writeFixture(ctx context.Context, dir string) (string, error) {
	if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
		return dir, nil
	}
	tmp := dir + ".partial"
	if err := os.RemoveAll(tmp); err != nil {
		return "", err
	}
	for rel, content := range map[string]string{
		"go.mod":            fixture.GoMod("example.com/learnbench"),
		"calc/calc.go":      fixture.Calc,
		"calc/calc_test.go": fixture.CalcTest,
	} {
		p := filepath.Join(tmp, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return "", err
		}
	}
	g := gitcmd.Repo{Dir: tmp, Trust: gitcmd.User, Env: committer}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "learnbench fixture"}} {
		if out, err := g.Run(ctx, nil, args...); err != nil {
			return "", fmt.Errorf("learnbench: git %v: %v\n%s", args, err, out)
		}
	}
	return dir, os.Rename(tmp, dir)
}

// cloneOnce clones src into dir unless a finished clone is there (a resumed run): each
// seed's loop keys its registry and task store by its repository's path.
func cloneOnce(ctx context.Context, src, dir string) (string, error) {
	if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
		return dir, nil
	}
	tmp := dir + ".partial"
	if err := os.RemoveAll(tmp); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	// The hardened runner allows no transport; a clone of a local folder needs the file
	// one, and only that.
	g := gitcmd.Repo{Dir: filepath.Dir(dir), Trust: gitcmd.User}
	if out, err := g.Run(ctx, nil, "-c", "protocol.file.allow=always", "clone", "-q", "--no-hardlinks", src, tmp); err != nil {
		return "", fmt.Errorf("learnbench: cloning %s: %v\n%s", src, err, out)
	}
	return dir, os.Rename(tmp, dir)
}
