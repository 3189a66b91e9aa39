package env

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/frognano/frognano/internal/gitcmd"
)

// ErrNotRepository and ErrNoCommit are what a folder synthesis cannot base tasks on: every
// task is a patch on a commit, so the repository needs one.
var (
	ErrNotRepository = errors.New("not a git repository")
	ErrNoCommit      = errors.New("the repository has no commit yet")
)

// Checkout is the tree of one commit of the user's repository, written to a private folder
// with git's plumbing (ls-tree, cat-file): the user's work tree, index and refs are only
// read, never touched, and uncommitted changes are not part of it, so every task stays
// reproducible from its base commit. Copies for the sandbox are made from Dir.
type Checkout struct {
	Repo   string // the user's repository, absolute, links resolved
	Commit string // the full hash
	// Tree is the hash of the commit's tree: the same files give the same tree, whatever
	// the commit (what is built from the files alone can be keyed by it).
	Tree string
	Dir  string // the exported tree
	// Dirty is true when the user's work tree had changes that the commit does not hold.
	Dirty bool
}

// userGit is the user's repository, as they configured it.
// GIT_OPTIONAL_LOCKS=0: git status would otherwise refresh the user's index and write it.
func userGit(repo string) gitcmd.Repo {
	return gitcmd.Repo{Dir: repo, Trust: gitcmd.User, Env: []string{"GIT_OPTIONAL_LOCKS=0"}}
}

// Head is the commit HEAD names in repo.
func Head(ctx context.Context, repo string) (string, error) {
	g := userGit(repo)
	if out, err := g.Run(ctx, nil, "rev-parse", "--is-inside-work-tree"); err != nil || strings.TrimSpace(string(out)) != "true" {
		return "", fmt.Errorf("%s: %w", repo, ErrNotRepository)
	}
	out, err := g.Run(ctx, nil, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	if err != nil {
		return "", fmt.Errorf("%s: %w", repo, ErrNoCommit)
	}
	return strings.TrimSpace(string(out)), nil
}

// Export writes HEAD's tree of repo (the top of the work tree) under dir, which must not
// exist. Submodules are left out (their commits are not in this repository).
func Export(ctx context.Context, repo, dir string) (*Checkout, error) {
	return export(ctx, repo, "", dir)
}

// ExportCommit is Export of commit (any name git resolves to a commit of repo) instead of
// HEAD: a task's base commit, which HEAD may have left behind. Dirty still says whether
// the work tree differs from HEAD.
func ExportCommit(ctx context.Context, repo, commit, dir string) (*Checkout, error) {
	if commit == "" || strings.HasPrefix(commit, "-") {
		return nil, fmt.Errorf("exporting %s: bad commit %q", repo, commit)
	}
	return export(ctx, repo, commit, dir)
}

func export(ctx context.Context, repo, commit, dir string) (*Checkout, error) {
	abs, err := filepath.Abs(repo)
	if err != nil {
		return nil, err
	}
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return nil, err
	}
	head, err := Head(ctx, abs)
	if err != nil {
		return nil, err
	}
	g := userGit(abs)
	if commit == "" {
		commit = head
	} else {
		out, err := g.Run(ctx, nil, "rev-parse", "--verify", "--quiet", "--end-of-options", commit+"^{commit}")
		if err != nil {
			return nil, fmt.Errorf("%s: no commit %q", abs, commit)
		}
		commit = strings.TrimSpace(string(out))
	}
	top, err := g.Run(ctx, nil, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, err
	}
	abs = strings.TrimSpace(string(top))
	g.Dir = abs
	status, err := g.Run(ctx, nil, "status", "--porcelain", "--untracked-files=no")
	if err != nil {
		return nil, err
	}
	tree, err := g.Run(ctx, nil, "rev-parse", "--verify", commit+"^{tree}")
	if err != nil {
		return nil, err
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	c := &Checkout{Repo: abs, Commit: commit, Tree: strings.TrimSpace(string(tree)), Dir: dir, Dirty: len(bytes.TrimSpace(status)) > 0}
	if err := c.write(ctx, g); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("exporting %s at %.12s: %w", abs, commit, err)
	}
	return c, nil
}

// Remove deletes the exported tree.
func (c *Checkout) Remove() error { return os.RemoveAll(c.Dir) }

type treeEntry struct {
	mode, oid, path string
}

func (c *Checkout) write(ctx context.Context, g gitcmd.Repo) error {
	out, err := g.Run(ctx, nil, "ls-tree", "-r", "-z", "--full-tree", c.Commit)
	if err != nil {
		return err
	}
	var entries []treeEntry
	var batch bytes.Buffer
	for _, rec := range bytes.Split(out, []byte{0}) {
		meta, path, ok := strings.Cut(string(rec), "\t")
		if !ok {
			continue
		}
		f := strings.Fields(meta) // mode type oid
		if len(f) != 3 || f[1] != "blob" {
			continue // a submodule's commit
		}
		if !safeRel(path) {
			return fmt.Errorf("refusing the path %q", path)
		}
		entries = append(entries, treeEntry{mode: f[0], oid: f[2], path: path})
		batch.WriteString(f[2] + "\n")
	}
	cmd := g.Command(ctx, "cat-file", "--batch")
	cmd.Stdin = &batch
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	r := bufio.NewReaderSize(pipe, 1<<16)
	werr := func() error {
		for _, e := range entries {
			header, err := r.ReadString('\n')
			if err != nil {
				return err
			}
			f := strings.Fields(header) // oid type size
			if len(f) != 3 || f[0] != e.oid {
				return fmt.Errorf("cat-file: unexpected %q", header)
			}
			size, err := strconv.ParseInt(f[2], 10, 64)
			if err != nil {
				return err
			}
			content := make([]byte, size+1) // and the newline after it
			if _, err := io.ReadFull(r, content); err != nil {
				return err
			}
			if err := writeEntry(c.Dir, e, content[:size]); err != nil {
				return err
			}
		}
		return nil
	}()
	if werr != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return werr
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("cat-file: %v: %s", err, stderr.String())
	}
	return nil
}

func writeEntry(root string, e treeEntry, content []byte) error {
	p := filepath.Join(root, filepath.FromSlash(e.path))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	switch e.mode {
	case "120000":
		return os.Symlink(string(content), p)
	case "100755":
		return os.WriteFile(p, content, 0o755)
	default:
		return os.WriteFile(p, content, 0o644)
	}
}

// safeRel refuses what git itself would never check out: absolute paths, "..", and .git.
func safeRel(p string) bool {
	if p == "" || strings.HasPrefix(p, "/") {
		return false
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." || part == "." || part == "" || strings.EqualFold(part, ".git") {
			return false
		}
	}
	return true
}
