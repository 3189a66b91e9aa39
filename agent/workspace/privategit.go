package workspace

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/frognano/frognano/internal/gitcmd"
)

// Two repositories serve one copy, because everything inside the copy is written by the
// model and is hostile input to frognano:
//
//   - frognano's own, in gitDir beside the copy (Root+gitDirSuffix), holds the base commit
//     and computes the agent's changes (git add -A; git diff --cached). The sandbox does not
//     bind it (only its objects, read-only), so no command can set a hook, an fsmonitor, a
//     filter or a core.worktree that frognano's next git call would obey. Where the sandbox
//     cannot confine writes, its configuration files are checked before use instead.
//   - the agent's, Root/.git, made for the model, which was trained in a repository and
//     runs git status, diff, stash and commit. It borrows frognano's objects through
//     objects/info/alternates and starts with the same base commit and index; whatever the
//     model does to it, frognano never runs git on it again.
//
// git never records an entry named .git, so the agent's repository is invisible to
// frognano's.

// gitDirSuffix names frognano's repository of a copy: the copy's path plus this.
const gitDirSuffix = ".frognano-git"

// identity is who commits in both repositories.
var identity = []string{
	"GIT_AUTHOR_NAME=frognano", "GIT_AUTHOR_EMAIL=agent@frognano.invalid",
	"GIT_COMMITTER_NAME=frognano", "GIT_COMMITTER_EMAIL=agent@frognano.invalid",
}

// sealedFiles are the files of gitDir that would change what git runs or reads, with the
// content frognano gives them ("" = must not exist).
var sealedFiles = []string{"config", "info/attributes", "commondir", "config.worktree", "objects/info/alternates"}

func (w *Workspace) private() gitcmd.Repo {
	// The NTFS and HFS name checks refuse names that are harmless here (git~1), and a
	// refused name fails the whole `git add`; names like .git are left out before git runs.
	return gitcmd.Repo{GitDir: w.gitDir, WorkTree: w.Root, Trust: gitcmd.Hostile, Env: identity,
		Config: []string{"core.protectNTFS=false", "core.protectHFS=false"}, WaitDelay: w.gitWaitDelay}
}

// git runs git on frognano's repository of the copy.
func (w *Workspace) git(ctx context.Context, args ...string) ([]byte, error) {
	return w.private().Run(ctx, nil, args...)
}

// initGit makes frognano's repository of the copy: bare (the work tree is always given on
// the command line, so no core.worktree is needed), with every .gitattributes of the copy
// overridden, and sealed.
func (w *Workspace) initGit(ctx context.Context) error {
	if err := os.RemoveAll(w.gitDir); err != nil {
		return err
	}
	if _, err := (gitcmd.Repo{GitDir: w.gitDir, Trust: gitcmd.Hostile}).Run(ctx, nil, "init", "-q"); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	// A bare repository has no info/ on some git versions.
	if err := os.MkdirAll(filepath.Join(w.gitDir, "info"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(w.gitDir, "info", "attributes"), []byte(gitcmd.NeutralAttributes), 0o644); err != nil {
		return err
	}
	return w.seal()
}

// seal records the content of sealedFiles.
func (w *Workspace) seal() error {
	w.sealed = map[string]string{}
	for _, f := range sealedFiles {
		b, err := os.ReadFile(filepath.Join(w.gitDir, f))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err == nil {
			w.sealed[f] = Hash(b)
		}
	}
	return nil
}

// ErrTampered means frognano's repository of the copy was changed from outside frognano,
// which only a command run without write confinement can do: the changes it would report
// cannot be trusted.
var ErrTampered = errors.New("the copy's private git data was changed by a command (only possible when the sandbox does not confine writes); its changes are not trusted")

// checkSeal fails with ErrTampered when a sealed file differs from what seal recorded, or
// when the hooks folder has gained anything (hooks are off by the command line anyway).
func (w *Workspace) checkSeal() error {
	for _, f := range sealedFiles {
		b, err := os.ReadFile(filepath.Join(w.gitDir, f))
		want, had := w.sealed[f]
		switch {
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return err
		case err != nil && had, err == nil && !had, err == nil && Hash(b) != want:
			return fmt.Errorf("workspace: %s: %w", f, ErrTampered)
		}
	}
	return nil
}

// ObjectsDir is where the copy's git objects live; commands must be able to read it (the
// agent's repository borrows from it) and must not write to it.
func (w *Workspace) ObjectsDir() string { return filepath.Join(w.gitDir, "objects") }

// seedAgentRepo gives the copy a repository of its own for the agent, at the base commit,
// with a clean status: it borrows frognano's objects and starts from a copy of its index
// (the stat data holds: same files, same paths).
func (w *Workspace) seedAgentRepo(ctx context.Context) error {
	dotGit := filepath.Join(w.Root, ".git")
	agent := gitcmd.Repo{GitDir: dotGit, Trust: gitcmd.Hostile, Env: identity}
	if _, err := os.Lstat(dotGit); errors.Is(err, fs.ErrNotExist) {
		if _, err := (gitcmd.Repo{Dir: w.Root, Trust: gitcmd.Hostile}).Run(ctx, nil, "init", "-q"); err != nil {
			return fmt.Errorf("workspace: %w", err)
		}
		// The model commits now and then; without a name git refuses to.
		f, err := os.OpenFile(filepath.Join(dotGit, "config"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		_, err = f.WriteString("[user]\n\tname = frognano agent\n\temail = agent@frognano.invalid\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dotGit, "objects", "info", "alternates"), []byte(w.ObjectsDir()+"\n"), 0o644); err != nil {
		return err
	}
	if err := copyFile(filepath.Join(w.gitDir, "index"), filepath.Join(dotGit, "index")); err != nil {
		return err
	}
	if _, err := agent.Run(ctx, nil, "update-ref", "HEAD", w.base); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	return nil
}

// readBlobs reads the blobs named by ids from frognano's repository in one git process.
func (w *Workspace) readBlobs(ctx context.Context, ids []string) (map[string][]byte, error) {
	out := make(map[string][]byte, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	stdin := []byte(strings.Join(ids, "\n") + "\n")
	raw, err := w.private().Run(ctx, stdin, "cat-file", "--batch")
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	r := bufio.NewReader(bytes.NewReader(raw))
	for range ids {
		header, err := r.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("workspace: reading git objects: %w", err)
		}
		f := strings.Fields(header)
		if len(f) != 3 || f[1] != "blob" {
			return nil, fmt.Errorf("workspace: unexpected git object %q", strings.TrimSpace(header))
		}
		size, err := strconv.Atoi(f[2])
		if err != nil {
			return nil, fmt.Errorf("workspace: unexpected git object %q", strings.TrimSpace(header))
		}
		b := make([]byte, size)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, fmt.Errorf("workspace: reading git objects: %w", err)
		}
		if _, err := r.ReadByte(); err != nil { // the newline after each object
			return nil, fmt.Errorf("workspace: reading git objects: %w", err)
		}
		out[f[0]] = b
	}
	return out, nil
}

// Ignored lists what git ignores in the copy as the agent left it (its .gitignore files
// included): relative slash paths, folders with a trailing slash and not descended into.
// It asks frognano's own repository of the copy, never the agent's.
func (w *Workspace) Ignored(ctx context.Context) ([]string, error) {
	out, err := w.git(ctx, "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory")
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, p := range strings.Split(string(out), "\x00") {
		if p != "" {
			paths = append(paths, p)
		}
	}
	return paths, nil
}
