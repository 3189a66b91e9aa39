package task

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/frognano/frognano/internal/gitcmd"
)

// Change is one file a task changes: its content at the base commit and with the bug.
type Change struct {
	Path     string // slash-separated, relative to the top of the repository
	Old, New []byte
}

// scratch is git on a private temporary folder of frognano's: no configuration but the
// hardening, so the user's diff settings (noprefix, a diff driver) never shape a patch.
func scratch(dir string) gitcmd.Repo {
	return gitcmd.Repo{Dir: dir, Trust: gitcmd.Hostile, Config: []string{"diff.noprefix=false", "diff.mnemonicPrefix=false", "diff.relative=false"}}
}

// MakePatch is the unified diff (git apply -p1) from every Old to its New.
func MakePatch(ctx context.Context, changes []Change) (string, error) {
	tmp, err := os.MkdirTemp("", "frognano-patch-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	var patch strings.Builder
	for _, c := range changes {
		if !SafePath(c.Path) {
			return "", fmt.Errorf("task: refusing the path %q", c.Path)
		}
		for side, content := range map[string][]byte{"o": c.Old, "n": c.New} {
			p := filepath.Join(tmp, side, filepath.FromSlash(c.Path))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return "", err
			}
			if err := os.WriteFile(p, content, 0o644); err != nil {
				return "", err
			}
		}
		out, err := scratch(tmp).Run(ctx, nil, "diff", "--no-index", "--no-color", "-U3",
			"--src-prefix=a/", "--dst-prefix=b/", "o/"+c.Path, "n/"+c.Path)
		var gerr *gitcmd.Error
		if err != nil && !(errors.As(err, &gerr) && exitCode(gerr) == 1) { // 1: they differ
			return "", err
		}
		patch.WriteString(renameHeaders(string(out), c.Path))
	}
	return patch.String(), nil
}

func exitCode(e *gitcmd.Error) int {
	var x interface{ ExitCode() int }
	if errors.As(e.Err, &x) {
		return x.ExitCode()
	}
	return -1
}

// renameHeaders puts path in the header lines, where git diff --no-index named the two
// scratch copies.
func renameHeaders(diff, path string) string {
	lines := strings.SplitAfter(diff, "\n")
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "diff --git "):
			lines[i] = "diff --git a/" + path + " b/" + path + "\n"
		case strings.HasPrefix(l, "--- a/"):
			lines[i] = "--- a/" + path + "\n"
		case strings.HasPrefix(l, "+++ b/"):
			lines[i] = "+++ b/" + path + "\n"
		case strings.HasPrefix(l, "@@"):
			return strings.Join(lines, "")
		}
	}
	return strings.Join(lines, "")
}

// CheckPatch proves patch reproducible: applied to every Old it gives New, and reversed on
// every New it gives Old, with no fuzz.
func CheckPatch(ctx context.Context, patch string, changes []Change) error {
	for _, dir := range []struct {
		name     string
		reverse  bool
		from, to func(Change) []byte
	}{
		{"forward", false, func(c Change) []byte { return c.Old }, func(c Change) []byte { return c.New }},
		{"reverse", true, func(c Change) []byte { return c.New }, func(c Change) []byte { return c.Old }},
	} {
		tmp, err := os.MkdirTemp("", "frognano-apply-")
		if err != nil {
			return err
		}
		err = func() error {
			for _, c := range changes {
				if !SafePath(c.Path) {
					return fmt.Errorf("task: refusing the path %q", c.Path)
				}
				p := filepath.Join(tmp, filepath.FromSlash(c.Path))
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.WriteFile(p, dir.from(c), 0o644); err != nil {
					return err
				}
			}
			args := []string{"apply", "--whitespace=nowarn"}
			if dir.reverse {
				args = append(args, "-R")
			}
			if _, err := scratch(tmp).Run(ctx, []byte(patch), args...); err != nil {
				return fmt.Errorf("the %s patch does not apply: %w", dir.name, err)
			}
			for _, c := range changes {
				got, err := os.ReadFile(filepath.Join(tmp, filepath.FromSlash(c.Path)))
				if err != nil || !bytes.Equal(got, dir.to(c)) {
					return fmt.Errorf("the %s patch gives other content for %s", dir.name, c.Path)
				}
			}
			return nil
		}()
		os.RemoveAll(tmp)
		if err != nil {
			return err
		}
	}
	return nil
}

// ChangedLines counts the lines a patch removes and adds.
func ChangedLines(patch string) int {
	n := 0
	for _, l := range strings.Split(patch, "\n") {
		if (strings.HasPrefix(l, "+") && !strings.HasPrefix(l, "+++ ")) || (strings.HasPrefix(l, "-") && !strings.HasPrefix(l, "--- ")) {
			n++
		}
	}
	return n
}

// SafePath is whether p is a plain relative path (slash-separated, no empty, "." or ".."
// part, no .git in any case): what a task's patch may name, and what synthesis may write
// into a private folder.
func SafePath(p string) bool {
	if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, "\\") {
		return false
	}
	for _, part := range strings.Split(p, "/") {
		if part == "" || part == "." || part == ".." || strings.EqualFold(part, ".git") {
			return false
		}
	}
	return true
}

// Apply applies patch (a task's, -p1) to the tree in dir: frognano's private export of the
// task's base commit (finetune/env.ExportCommit), never a user's work tree. git apply
// refuses a patch that does not apply exactly, and paths that leave the tree or pass
// through a symbolic link.
func Apply(ctx context.Context, dir, patch string) error {
	if strings.TrimSpace(patch) == "" {
		return nil
	}
	if _, err := scratch(dir).Run(ctx, []byte(patch), "apply", "--whitespace=nowarn", "-"); err != nil {
		var gerr *gitcmd.Error
		if errors.As(err, &gerr) {
			return fmt.Errorf("task: the patch does not apply to %s: %s", dir, strings.TrimSpace(gerr.Stderr))
		}
		return err
	}
	return nil
}
