package watch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/fsnotify/fsnotify"

	"github.com/frognano/frognano/internal/gitcmd"
)

// The git side: the real git CLI answers what is ignored (.gitignore files, info/exclude and
// the user's core.excludesFile, which a reimplementation would get subtly wrong) and which
// commit HEAD names (loose refs, packed-refs, reftable, worktrees). The watcher asks only when
// something that can change the answer changed: HEAD, packed-refs, a branch ref, an ignore
// file. Index and lock churn (every `git status`) costs no git call.

// repo is the git side of a watcher rooted in a git work tree.
type repo struct {
	gitDir    string              // per-worktree git dir (rev-parse --absolute-git-dir): HEAD
	commonDir string              // shared by worktrees: refs, packed-refs, info/exclude
	heads     string              // commonDir/refs/heads, watched recursively
	head      string              // last HEAD commit seen, "" on an unborn branch
	branch    string              // its branch, "" when detached
	dirs      map[string]struct{} // absolute git folders watched
}

// owns reports whether an event path belongs to the git side (the git dir itself and below).
func (r *repo) owns(name string) bool {
	return within(name, r.gitDir) || within(name, r.commonDir)
}

func within(name, dir string) bool {
	return name == dir || strings.HasPrefix(name, dir) && len(name) > len(dir) && name[len(dir)] == filepath.Separator
}

// git runs a git command in the root through the project's hardened runner: the user's
// global configuration still counts (core.excludesFile), inherited GIT_* variables do not,
// and GIT_OPTIONAL_LOCKS=0 keeps the watcher's own questions from writing the index.
func (w *Watcher) git(stdin []byte, args ...string) ([]byte, error) {
	w.gitCalls.Add(1)
	r := gitcmd.Repo{Dir: w.root, Trust: gitcmd.User, Env: []string{"GIT_OPTIONAL_LOCKS=0"}}
	return r.Run(w.ctx, stdin, args...)
}

// findRepo returns the repository whose work tree holds the root, or nil.
func (w *Watcher) findRepo() *repo {
	out, err := w.git(nil, "rev-parse", "--is-inside-work-tree", "--absolute-git-dir",
		"--path-format=absolute", "--git-common-dir")
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			w.logf("watch: git not found; .gitignore is not honoured and HEAD is not followed")
		} else if !strings.Contains(err.Error(), "not a git repository") {
			w.logf("watch: %v", err)
		}
		return nil
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 3 || lines[0] != "true" {
		return nil // inside a .git folder or a bare repository
	}
	r := &repo{gitDir: filepath.Clean(lines[1]), commonDir: filepath.Clean(lines[2]), dirs: map[string]struct{}{}}
	r.heads = filepath.Join(r.commonDir, "refs", "heads")
	w.repo = r
	r.head, r.branch = w.readHead()
	return r
}

// ignoredDirs returns the ignored folders of the tree (relative slash paths, top-most only).
// `git ls-files --others --ignored --directory` also lists untracked folders that merely
// hold nothing but ignored files (a src/ with only *.log in it), which must stay watched, so
// its folders are only candidates that `git check-ignore` confirms.
func (w *Watcher) ignoredDirs() map[string]bool {
	out, err := w.git(nil, "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory")
	if err != nil {
		w.logf("watch: %v; .gitignore not honoured", err)
		return nil
	}
	var cands []string
	for _, e := range strings.Split(string(out), "\x00") {
		if strings.HasSuffix(e, "/") && e != "./" {
			cands = append(cands, strings.TrimSuffix(e, "/"))
		}
	}
	return w.checkIgnore(cands)
}

// checkIgnore returns which of rels (relative slash paths of folders) git ignores.
func (w *Watcher) checkIgnore(rels []string) map[string]bool {
	if len(rels) == 0 || w.repo == nil {
		return nil
	}
	in := []byte(strings.Join(rels, "\x00") + "\x00")
	out, err := w.git(in, "check-ignore", "-z", "--stdin")
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 1 {
		return nil // none is ignored
	}
	if err != nil {
		if w.ctx.Err() == nil {
			w.logf("watch: %v", err)
		}
		return nil
	}
	ignored := map[string]bool{}
	for _, e := range strings.Split(string(out), "\x00") {
		if e != "" {
			ignored[strings.TrimSuffix(e, "/")] = true
		}
	}
	return ignored
}

// readHead returns the commit HEAD names ("" on an unborn branch) and the short branch name
// ("" when detached).
func (w *Watcher) readHead() (hash, branch string) {
	out, err := w.git(nil, "rev-parse", "-q", "--verify", "HEAD^{commit}")
	if err != nil {
		return "", ""
	}
	hash = strings.TrimSpace(string(out))
	if out, err := w.git(nil, "symbolic-ref", "-q", "--short", "HEAD"); err == nil {
		branch = strings.TrimSpace(string(out))
	}
	return hash, branch
}

// checkHead reports a HeadChange when HEAD names another commit or branch than last time
// (a new branch made at the same commit is a change of branch only).
func (w *Watcher) checkHead() *HeadChange {
	if w.repo == nil {
		return nil
	}
	hash, branch := w.readHead()
	if hash == "" || hash == w.repo.head && branch == w.repo.branch {
		return nil
	}
	c := &HeadChange{Old: w.repo.head, New: hash, Branch: branch}
	w.repo.head, w.repo.branch = hash, branch
	return c
}

// Head returns the commit and branch of dir's HEAD as git reads them (Old is empty), the
// way the watcher does; an error when dir is not in a git work tree or has no commit.
func Head(ctx context.Context, dir string) (HeadChange, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return HeadChange{}, err
	}
	w := &Watcher{root: abs, ctx: ctx}
	hash, branch := w.readHead()
	if hash == "" {
		return HeadChange{}, fmt.Errorf("watch: %s has no commit", abs)
	}
	return HeadChange{New: hash, Branch: branch}, nil
}

// watchGit watches the folders whose files say which commit HEAD names: the git dir (HEAD),
// the common dir (packed-refs) with its info folder (exclude), refs/heads with its sub-folders
// (branch refs), and reftable where that backend is used. None recursively but refs/heads:
// objects/ and logs/ churn on every commit and tell nothing more.
func (w *Watcher) watchGit() error {
	r := w.repo
	if r == nil {
		return nil
	}
	for _, d := range []string{r.gitDir, r.commonDir, filepath.Join(r.commonDir, "info"),
		filepath.Join(r.commonDir, "reftable")} {
		if err := w.watchGitDir(d); err != nil {
			return err
		}
	}
	return w.watchGitTree(r.heads)
}

// watchGitTree watches dir and the folders below it.
func (w *Watcher) watchGitTree(dir string) error {
	stack := []string{dir}
	for len(stack) > 0 {
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if err := w.watchGitDir(d); err != nil {
			return err
		}
		entries, _ := readDir(d)
		for _, e := range entries {
			if e.IsDir() {
				stack = append(stack, filepath.Join(d, e.Name()))
			}
		}
	}
	return nil
}

func (w *Watcher) watchGitDir(d string) error {
	if _, ok := w.repo.dirs[d]; ok {
		return nil
	}
	err := w.addWatch(d)
	switch {
	case err == nil:
		w.mu.Lock()
		w.repo.dirs[d] = struct{}{}
		w.mu.Unlock()
	case errors.Is(err, os.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
	case errors.Is(err, syscall.ENOSPC):
		if !w.started {
			return ErrLimit
		}
		w.limitHit()
	default:
		w.logf("watch: not watching %s: %v", d, err)
	}
	return nil
}

// handleGit takes an event in the git dir: it marks HEAD for a check after the debounce, or
// an ignore re-evaluation, and follows refs/heads folders; anything else (index, locks,
// objects) is dropped without a git call.
func (w *Watcher) handleGit(ev fsnotify.Event) {
	r := w.repo
	dir, base := filepath.Dir(ev.Name), filepath.Base(ev.Name)
	switch {
	case within(ev.Name, r.heads) && ev.Name != r.heads:
		if ev.Has(fsnotify.Remove | fsnotify.Rename) {
			w.unwatchGit(ev.Name)
		}
		if ev.Has(fsnotify.Create) {
			if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() {
				_ = w.watchGitTree(ev.Name) // branch names with slashes: refs/heads/feature/x
			}
		}
		if strings.HasSuffix(base, ".lock") {
			return
		}
	case dir == r.gitDir && base == "HEAD",
		dir == r.commonDir && base == "packed-refs",
		dir == filepath.Join(r.commonDir, "reftable") && base == "tables.list":
	case dir == filepath.Join(r.commonDir, "info") && base == "exclude":
		w.batch.ignores = true
		w.arm()
		return
	default:
		return
	}
	w.batch.head = true
	w.arm()
}

// unwatchGit drops the watches of a refs folder that went away, and of those below it.
func (w *Watcher) unwatchGit(d string) {
	var gone []string
	w.mu.Lock()
	for g := range w.repo.dirs {
		if within(g, d) {
			gone = append(gone, g)
			delete(w.repo.dirs, g)
		}
	}
	w.mu.Unlock()
	for _, g := range gone {
		_ = w.fsw.Remove(g)
	}
}
