package reward

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/frognano/frognano/agent/workspace"
	"github.com/frognano/frognano/finetune/env"
	"github.com/frognano/frognano/finetune/task"
	"github.com/frognano/frognano/internal/gitcmd"
)

// kept is one change of the agent's that reaches the evaluation tree: a regular file's new
// content (Content nil: the file is deleted), and its base content for the screen.
type kept struct {
	Path          string
	Content, Base []byte
	Mode          string
	// Orig is the file in the base commit before the task's patch (nil: none): what the
	// screen spares besides Base.
	Orig []byte
}

// sortChanges splits the agent's changes into those the evaluation tree takes and those it
// leaves out (with why). A rename is a deletion of the old path and a creation of the new,
// each judged on its own. protect names further paths that must come from the base (the
// hidden tests' files of a Python or JS/TS task).
func sortChanges(c *workspace.Changes, protect map[string]bool) (keep []kept, dropped []workspace.Skipped) {
	if c == nil {
		return nil, nil
	}
	drop := func(p, why string) { dropped = append(dropped, workspace.Skipped{Path: p, Why: why}) }
	consider := func(p string, content []byte, mode string, base []byte) {
		if !task.SafePath(p) {
			drop(p, "a path that leaves the tree")
			return
		}
		if why := protected(p); why != "" {
			drop(p, why)
			return
		}
		if protect[p] {
			drop(p, "a hidden test's file comes from the base commit")
			return
		}
		if content != nil && mode != workspace.ModeFile && mode != workspace.ModeExec {
			if mode == workspace.ModeLink {
				drop(p, "a symbolic link (the evaluation tree takes regular files only)")
			} else {
				drop(p, "not a regular file (mode "+mode+")")
			}
			return
		}
		keep = append(keep, kept{Path: p, Content: content, Mode: mode, Base: base})
	}
	for _, f := range c.Files {
		base := f.Base
		if f.BaseIsLink() {
			base = nil // a link's target is not code the screen compares with
		}
		switch f.Kind {
		case workspace.Deleted:
			consider(f.Path, nil, "", base)
		case workspace.Renamed:
			consider(f.OldPath, nil, "", base)
			consider(f.Path, nonNil(f.Content), f.Mode, nil)
		default:
			consider(f.Path, nonNil(f.Content), f.Mode, base)
		}
	}
	for _, s := range c.Skipped {
		drop(s.Path, "left out of the agent's changes: "+s.Why)
	}
	return keep, dropped
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// Files the agent may not change, whatever the language: they decide what the tests are,
// how they run and what they build with. Matched on the slash path; the base commit's
// version is what the tests see.
var (
	protectedNames = map[string]string{
		// Go: the module's dependencies and workspace (a replace directive swaps a package
		// the tests use).
		"go.mod": "go.mod", "go.sum": "go.sum", "go.work": "go.work", "go.work.sum": "go.work.sum",
		// Python: pytest's configuration and plugins, and what Python imports on its own.
		"conftest.py": "pytest configuration", "pytest.ini": "pytest configuration",
		// pytest 9 reads pytest.toml before any other configuration: its addopts can load a
		// plugin of the agent's (-p), which reports every test but frognano's passed.
		"pytest.toml": "pytest configuration",
		"setup.cfg":   "Python configuration", "tox.ini": "Python configuration",
		"pyproject.toml": "Python configuration", "setup.py": "Python configuration",
		"sitecustomize.py": "imported by Python at start", "usercustomize.py": "imported by Python at start",
		// JS/TS: the test script, the dependencies.
		"package.json": "the package's scripts and dependencies", "package-lock.json": "a lockfile",
		"npm-shrinkwrap.json": "a lockfile", "yarn.lock": "a lockfile", "pnpm-lock.yaml": "a lockfile",
		"pnpm-workspace.yaml": "a lockfile", "bun.lockb": "a lockfile", "bun.lock": "a lockfile",
	}
	// Folders whose files are the tests' or the build's: anything below them.
	protectedDirs = map[string]string{
		"vendor": "vendored dependencies", "testdata": "test data", "node_modules": "installed packages",
		"__tests__": "tests", "__snapshots__": "test snapshots",
	}
	// JS/TS runner configurations: jest.config.js, vitest.config.mts, …
	configPrefixes = []string{"jest.config.", "vitest.config.", "vitest.workspace.", "vite.config.", "babel.config.",
		"karma.conf.", "playwright.config.", "tsconfig.", "ava.config.", "mocha."}
)

// protected says why the agent may not change the file at p (slash path), or "".
func protected(p string) string {
	parts := strings.Split(p, "/")
	base := parts[len(parts)-1]
	for i, part := range parts {
		if strings.HasPrefix(part, ".") {
			// .frognano/finetune.json says how the tests run; .mocharc, .babelrc, .npmrc,
			// .pytest_cache, .github: configuration, never the code under test.
			return "a hidden file or folder (configuration)"
		}
		if why, ok := protectedDirs[part]; ok && i < len(parts)-1 {
			return why + " come from the base commit"
		}
		if i < len(parts)-1 && (strings.HasSuffix(part, ".dist-info") || strings.HasSuffix(part, ".egg-info")) {
			// The tree is on PYTHONPATH, and pytest loads the plugins that any
			// distribution's entry_points.txt there names (group pytest11).
			return "a package's metadata (its entry points load pytest plugins)"
		}
	}
	if why, ok := protectedNames[base]; ok {
		return why + " comes from the base commit"
	}
	ext := path.Ext(base)
	switch {
	case strings.HasSuffix(base, "_test.go"):
		return "Go tests come from the base commit"
	case ext == ".pth":
		return "imported by Python at start"
	case ext == ".pyc" || ext == ".pyo" || strings.Contains("/"+p, "/__pycache__/"):
		// Python runs byte code the screen cannot read: a .pyc alone is a module, and an
		// unchecked hash-based one in __pycache__ is loaded instead of its screened source.
		return "Python byte code (run in place of the source)"
	case ext == ".py" && (strings.HasPrefix(base, "test_") || strings.HasSuffix(base, "_test.py")):
		return "Python tests come from the base commit"
	case isScript(ext) && (strings.Contains(base, ".test.") || strings.Contains(base, ".spec.")):
		return "JS/TS tests come from the base commit"
	}
	if ext != ".go" {
		// pytest and node --test find tests by folder too; a Go package may be called test.
		for _, part := range parts[:len(parts)-1] {
			if part == "test" || part == "tests" {
				return "tests come from the base commit"
			}
		}
	}
	for _, pre := range configPrefixes {
		if strings.HasPrefix(base, pre) {
			return "a test runner's configuration comes from the base commit"
		}
	}
	return ""
}

// patchFiles are the paths t's patch changes, on either side (modified, added, deleted, both
// names of a rename), as git apply reads it: the same reading that laid the patch in dir.
func patchFiles(ctx context.Context, dir, patch string) (map[string]bool, error) {
	files := map[string]bool{}
	if strings.TrimSpace(patch) == "" {
		return files, nil
	}
	g := gitcmd.Repo{Dir: dir, Trust: gitcmd.Hostile}
	out, err := g.Run(ctx, []byte(patch), "apply", "--numstat", "-z", "-")
	if err != nil {
		return nil, fmt.Errorf("reading the task's patch: %w", err)
	}
	// -z: "added\tdeleted\tpath\0" per file; a rename names its new path alone, so its old
	// one comes from the patch's "rename from" line.
	for _, rec := range strings.Split(string(out), "\x00") {
		if f := strings.SplitN(rec, "\t", 3); len(f) == 3 && f[2] != "" {
			files[f[2]] = true
		}
	}
	for _, l := range strings.Split(patch, "\n") {
		if p, ok := strings.CutPrefix(strings.TrimRight(l, "\r"), "rename from "); ok {
			if q, err := strconv.Unquote(p); err == nil {
				p = q
			}
			files[p] = true
		}
	}
	return files, nil
}

// outsidePatch drops the changes of keep to files the task's patch does not change: a fix
// of the task's bug lives where the bug was put (every synthesizer's fix is its patch
// reversed), and anything else the agent wrote is code the tests would run that has no
// business being there: a new helper module, a sitecustomize.py or a .pth that Python
// imports at start, another module of the repository made to lie to the tests. One rule
// for every language, which a person can check from the patch alone.
func outsidePatch(keep []kept, files map[string]bool) (rest []kept, dropped []workspace.Skipped) {
	for _, k := range keep {
		if !files[k.Path] {
			dropped = append(dropped, workspace.Skipped{Path: k.Path, Why: "outside the files the task changed"})
			continue
		}
		rest = append(rest, k)
	}
	return rest, dropped
}

// newTopModules drops the Python files of keep that would make a top-level module the
// base commit does not have, at the top of the tree or of src/ (both on PYTHONPATH, before
// the environment's packages): a pytest.py or _pytest/ there is imported as pytest itself,
// a pluggy.py as its plugin manager, which report whatever they like and need none of
// the constructs the screen refuses. A fix rarely adds a top-level module.
func newTopModules(root string, keep []kept) (rest []kept, dropped []workspace.Skipped) {
	for _, k := range keep {
		if k.Content != nil && strings.HasSuffix(k.Path, ".py") {
			top, sub, _ := strings.Cut(k.Path, "/")
			if top == "src" && sub != "" {
				s, _, _ := strings.Cut(sub, "/")
				top = "src/" + s
			}
			if _, err := os.Lstat(filepath.Join(root, filepath.FromSlash(top))); errors.Is(err, fs.ErrNotExist) {
				dropped = append(dropped, workspace.Skipped{Path: k.Path, Why: "a new top-level Python module (it could shadow pytest or what it imports)"})
				continue
			}
		}
		rest = append(rest, k)
	}
	return rest, dropped
}

// testHelpers drops the agent's Go files in the repository's test helper packages (a
// folder named test…: testutil, internal/testhelpers), whose code the tests run to judge
// the code under test: an assert.Equal made to succeed always passes every test that uses
// it. A helper package that holds hidden tests, or that the task's patch changed (its bug
// is there), stays the agent's to fix.
func testHelpers(keep []kept, patch, module string, hidden []string) (rest []kept, dropped []workspace.Skipped) {
	mine := map[string]bool{}
	for _, id := range hidden {
		pkg, _ := env.SplitID(id)
		if pkg == module {
			mine["."] = true
		} else if rel, ok := strings.CutPrefix(pkg, module+"/"); ok {
			mine[rel] = true
		}
	}
	for _, l := range strings.Split(patch, "\n") {
		for _, pre := range []string{"--- a/", "+++ b/"} {
			if p, ok := strings.CutPrefix(l, pre); ok {
				mine[path.Dir(strings.TrimRight(p, "\t\r"))] = true
			}
		}
	}
	for _, k := range keep {
		dir := path.Dir(k.Path)
		if strings.HasSuffix(k.Path, ".go") && !mine[dir] && helperDir(dir) {
			dropped = append(dropped, workspace.Skipped{Path: k.Path, Why: "a test helper package comes from the base commit"})
			continue
		}
		rest = append(rest, k)
	}
	return rest, dropped
}

func helperDir(dir string) bool {
	for _, part := range strings.Split(dir, "/") {
		if strings.HasPrefix(strings.ToLower(part), "test") {
			return true
		}
	}
	return false
}

func isScript(ext string) bool {
	switch ext {
	case ".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx":
		return true
	}
	return false
}

// lay writes the kept changes into the evaluation tree at root, which frognano exported:
// never through a link (a folder of the base commit may be one), never outside root. A
// change below a linked folder is left out, and so is one the tree's shape refuses (a file
// where a folder of the base stays, with files the agent may not remove): the agent made
// that tree, and it must earn a reward (an error is frognano's failure, with none).
func lay(root string, keep []kept) (dropped []workspace.Skipped, err error) {
	for _, k := range keep {
		if err := realParents(root, k.Path); errors.Is(err, errLinkedFolder) {
			dropped = append(dropped, workspace.Skipped{Path: k.Path, Why: "below a symbolic link of the base commit"})
			continue
		} else if err != nil {
			return nil, err
		}
		err := layOne(root, k)
		if errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.EISDIR) {
			dropped = append(dropped, workspace.Skipped{Path: k.Path, Why: "does not fit the tree: " + err.Error()})
			continue
		}
		if err != nil {
			return nil, err
		}
	}
	return dropped, nil
}

// layOne writes (or removes) one kept change under root, whose folders on the way are real.
func layOne(root string, k kept) error {
	p := filepath.Join(root, filepath.FromSlash(k.Path))
	if k.Content == nil {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	// Every existing folder on the way is a real one (checked by realParents), so
	// MkdirAll follows no link.
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	// Remove first: what lies there may be a link, which a plain write would follow.
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	perm := os.FileMode(0o644)
	if k.Mode == workspace.ModeExec {
		perm = 0o755
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(k.Content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// errLinkedFolder: a change below a folder that is a link in the base commit.
var errLinkedFolder = errors.New("a folder on the path is a symbolic link")

// realParents checks that every existing folder on rel's way under root is a folder, not
// a link.
func realParents(root, rel string) error {
	parts := strings.Split(rel, "/")
	p := root
	for _, part := range parts[:len(parts)-1] {
		p = filepath.Join(p, part)
		st, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if !st.IsDir() {
			return fmt.Errorf("%s: %w", rel, errLinkedFolder)
		}
	}
	return nil
}
