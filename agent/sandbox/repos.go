package sandbox

import (
	"os"
	"path/filepath"
	"strings"
)

// repositories are the places of git that hold dir's history and its siblings, which a
// hidden dir (Options.Hide) takes with it: each folder above dir (or dir) that holds a
// .git — the repository's top, when the user opened a subfolder; a superproject, when dir
// is in a submodule — and, where a .git is a file (a linked worktree, a submodule, a
// separate git dir), the git directory it names, that one's common directory (the main repository's
// .git, with every branch), the main worktree and the common directory's other worktrees;
// and the repositories whose objects a git directory borrows (objects/info/alternates: a
// clone made with --shared or --reference). Hiding only dir left all of them readable (a
// subfolder's ../.git; a worktree's main .git, found through /proc/self/mountinfo's list
// of what is hidden).
//
// Nothing here runs git: the files are read as git would, without following its
// configuration (core.worktree and the like are not followed: what they name is the
// user's, not frognano's, and in doubt is left visible rather than guessed).
func repositories(dir string) []string { return repositoriesDepth(dir, 0) }

// repositoriesDepth is repositories, lenders followed at most three deep (alternates may
// form a cycle).
func repositoriesDepth(dir string, depth int) []string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if p != "" && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	var gitDirs []string
	for d := abs; ; d = filepath.Dir(d) {
		dotGit := filepath.Join(d, ".git")
		if fi, err := os.Lstat(dotGit); err == nil {
			add(d)
			if fi.Mode().IsRegular() {
				if gitDir := readGitFile(dotGit); gitDir != "" {
					add(gitDir)
					gitDirs = append(gitDirs, gitDir)
					if common := commonDir(gitDir); common != "" {
						add(common)
						gitDirs = append(gitDirs, common)
						if filepath.Base(common) == ".git" {
							add(filepath.Dir(common)) // the main worktree
						}
						for _, wt := range worktrees(common) {
							add(wt)
						}
					}
				}
			} else if fi.IsDir() {
				gitDirs = append(gitDirs, dotGit)
				for _, wt := range worktrees(dotGit) {
					add(wt)
				}
			}
		}
		if parent := filepath.Dir(d); parent == d {
			break
		}
	}
	for _, g := range gitDirs {
		if depth >= 3 {
			break
		}
		for _, objects := range alternates(g) {
			// .../repo/.git/objects: the repository around it, its worktrees and all.
			lender := filepath.Dir(objects)
			if filepath.Base(lender) == ".git" {
				lender = filepath.Dir(lender)
			}
			add(lender)
			for _, p := range repositoriesDepth(lender, depth+1) {
				add(p)
			}
		}
	}
	return out
}

// alternates are the object folders gitDir's objects/info/alternates names (one a line,
// relative to gitDir/objects), at most one level deep: what they borrow in turn is
// followed by repositories on each.
func alternates(gitDir string) []string {
	b, err := readSmall(filepath.Join(gitDir, "objects", "info", "alternates"))
	if err != nil {
		return nil
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, absFrom(filepath.Join(gitDir, "objects"), l))
		}
	}
	return out
}

// readGitFile is the git directory a .git file names ("gitdir: <path>", relative to the
// file's folder), or "".
func readGitFile(p string) string {
	b, err := readSmall(p)
	if err != nil {
		return ""
	}
	rest, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
	if !ok {
		return ""
	}
	return absFrom(filepath.Dir(p), strings.TrimSpace(rest))
}

// commonDir is the repository's common git directory a worktree's git directory names
// in its commondir file, or "" when it has none (it is the common one).
func commonDir(gitDir string) string {
	b, err := readSmall(filepath.Join(gitDir, "commondir"))
	if err != nil {
		return ""
	}
	return absFrom(gitDir, strings.TrimSpace(string(b)))
}

// worktrees are the folders of the linked worktrees of the common git directory common,
// each read from worktrees/<name>/gitdir (the path of its .git file).
func worktrees(common string) []string {
	ents, err := os.ReadDir(filepath.Join(common, "worktrees"))
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		b, err := readSmall(filepath.Join(common, "worktrees", e.Name(), "gitdir"))
		if err != nil {
			continue
		}
		if p := absFrom(filepath.Join(common, "worktrees", e.Name()), strings.TrimSpace(string(b))); p != "" {
			out = append(out, filepath.Dir(p))
		}
	}
	return out
}

// readSmall reads a regular file of git's bookkeeping (at most 64 KiB), not a link.
func readSmall(p string) ([]byte, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > 64<<10 {
		return nil, os.ErrInvalid
	}
	return os.ReadFile(p)
}

// absFrom is p made absolute against base, or "" when empty.
func absFrom(base, p string) string {
	if p == "" {
		return ""
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(base, p)
	}
	return filepath.Clean(p)
}
