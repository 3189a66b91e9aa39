package watch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The tests use the real file system and the real git. They never sleep to wait for a result:
// they collect batches until the expected paths show up (5 s deadline). To show that
// something is NOT reported they write a sentinel file afterwards and check every batch up to
// the one holding it. Only "nothing after Close" waits a fixed, short time, since there is
// nothing to wait for.

const deadline = 5 * time.Second

type recorder struct {
	t  *testing.T
	ch chan Batch
}

// startWatch starts a watcher on root whose batches are checked for the Batch invariants
// and recorded; it is closed when the test ends.
func startWatch(t *testing.T, ctx context.Context, root string, opts Options) (*Watcher, *recorder) {
	t.Helper()
	return startWatchHook(t, ctx, root, opts, nil)
}

// startWatchHook is startWatch with a hook that sees each batch first.
func startWatchHook(t *testing.T, ctx context.Context, root string, opts Options, hook func(Batch)) (*Watcher, *recorder) {
	t.Helper()
	r := &recorder{t: t, ch: make(chan Batch, 4096)}
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	w, err := Start(ctx, root, opts, func(b Batch) {
		if hook != nil {
			hook(b)
		}
		checkBatch(t, b)
		r.ch <- b
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w, r
}

// checkBatch checks what every Batch promises: sorted, unique, relative slash paths, nothing
// under .git, no paths with Overflow.
func checkBatch(t *testing.T, b Batch) {
	if b.Overflow && len(b.Paths) > 0 {
		t.Errorf("overflow batch with paths %v", b.Paths)
	}
	if !slices.IsSorted(b.Paths) || len(slices.Compact(slices.Clone(b.Paths))) != len(b.Paths) {
		t.Errorf("paths not sorted and unique: %v", b.Paths)
	}
	for _, p := range b.Paths {
		if p == "" || filepath.IsAbs(p) || strings.Contains(p, `\`) || p == ".git" ||
			strings.HasPrefix(p, ".git/") || strings.Contains(p, "/.git/") || strings.HasSuffix(p, "/.git") {
			t.Errorf("bad path %q in %v", p, b.Paths)
		}
	}
}

// waitFor collects batches until done(all seen so far) holds.
func (r *recorder) waitFor(what string, done func([]Batch) bool) []Batch {
	r.t.Helper()
	var seen []Batch
	timeout := time.After(deadline)
	for {
		select {
		case b := <-r.ch:
			seen = append(seen, b)
			if done(seen) {
				return seen
			}
		case <-timeout:
			r.t.Fatalf("no %s within %v; got %+v", what, deadline, seen)
		}
	}
}

// waitPaths collects batches until all paths were reported.
func (r *recorder) waitPaths(paths ...string) []Batch {
	r.t.Helper()
	return r.waitFor(fmt.Sprint(paths), func(bs []Batch) bool {
		got := allPaths(bs)
		for _, p := range paths {
			if !got[p] {
				return false
			}
		}
		return true
	})
}

var sentinels atomic.Int64

// sentinel writes a new file in root and collects batches until it is reported, so that the
// caller can check that what happened before it was (not) reported.
func (r *recorder) sentinel(root string) ([]Batch, string) {
	r.t.Helper()
	name := "zz-sentinel-" + strconv.FormatInt(sentinels.Add(1), 10)
	write(r.t, filepath.Join(root, name), "s")
	return r.waitPaths(name), name
}

func allPaths(bs []Batch) map[string]bool {
	m := map[string]bool{}
	for _, b := range bs {
		for _, p := range b.Paths {
			m[p] = true
		}
	}
	return m
}

func noPathUnder(t *testing.T, bs []Batch, prefixes ...string) {
	t.Helper()
	for p := range allPaths(bs) {
		for _, pre := range prefixes {
			if strings.HasPrefix(p, pre) {
				t.Errorf("reported %q, under %q", p, pre)
			}
		}
	}
}

func write(t testing.TB, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mkdirs(t testing.TB, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// git runs the real git for a test, isolated from the machine's configuration.
func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=test",
		"-c", "user.email=test@example.com", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func gitRepo(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	root := t.TempDir()
	git(t, root, "init", "-q", "-b", "main")
	return root
}

// notGit returns a temporary folder that git does not see as inside a work tree.
func notGit(t *testing.T) string {
	root := t.TempDir()
	t.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(root))
	return root
}

func TestFiles(t *testing.T) {
	root := notGit(t)
	_, r := startWatch(t, context.Background(), root, Options{})
	f, g := filepath.Join(root, "f"), filepath.Join(root, "g")

	write(t, f, "1")
	r.waitPaths("f")
	write(t, f, "2")
	r.waitPaths("f")
	if err := os.Rename(f, g); err != nil {
		t.Fatal(err)
	}
	r.waitPaths("f", "g")
	if err := os.Chmod(g, 0o600); err != nil {
		t.Fatal(err)
	}
	r.waitPaths("g")
	if err := os.Remove(g); err != nil {
		t.Fatal(err)
	}
	r.waitPaths("g")
}

// A folder tree made with mkdir -p and filled at once: the files land before the watches on
// the new folders exist, so they are found by listing each folder after watching it.
func TestNewNestedFolders(t *testing.T) {
	root := notGit(t)
	w, r := startWatch(t, context.Background(), root, Options{})
	var want []string
	for i := range 20 {
		dir := filepath.Join(root, fmt.Sprintf("x%d", i), "b", "c")
		mkdirs(t, dir)
		write(t, filepath.Join(dir, "f"), "1")
		want = append(want, fmt.Sprintf("x%d/b/c/f", i), fmt.Sprintf("x%d/b", i))
	}
	r.waitPaths(want...)
	if got := w.Stats().Folders; got != 1+3*20 {
		t.Errorf("Folders = %d, want %d", got, 1+3*20)
	}
	write(t, filepath.Join(root, "x7", "b", "c", "g"), "1")
	r.waitPaths("x7/b/c/g")
}

// After a folder is renamed, events below it must carry the new path: fsnotify keeps the old
// paths of the watches below a moved folder unless the watcher replaces them.
func TestRenameFolder(t *testing.T) {
	root := notGit(t)
	write(t, filepath.Join(root, "a", "b", "c", "f"), "1")
	w, r := startWatch(t, context.Background(), root, Options{})
	if err := os.Rename(filepath.Join(root, "a"), filepath.Join(root, "z")); err != nil {
		t.Fatal(err)
	}
	r.waitPaths("a", "z", "z/b/c/f")

	write(t, filepath.Join(root, "z", "b", "c", "g"), "1")
	bs := r.waitPaths("z/b/c/g")
	noPathUnder(t, bs, "a/")
	if got := w.Stats().Folders; got != 4 {
		t.Errorf("Folders = %d after rename, want 4", got)
	}

	// Moved out of the tree: nothing below it is watched any more.
	out := t.TempDir()
	if err := os.Rename(filepath.Join(root, "z"), filepath.Join(out, "z")); err != nil {
		t.Fatal(err)
	}
	r.waitPaths("z")
	write(t, filepath.Join(out, "z", "b", "c", "h"), "1")
	bs, _ = r.sentinel(root)
	noPathUnder(t, bs, "z/")
	if got := w.Stats().Folders; got != 1 {
		t.Errorf("Folders = %d after moving out, want 1", got)
	}
}

func TestRemoveFolder(t *testing.T) {
	root := notGit(t)
	for i := range 5 {
		write(t, filepath.Join(root, "a", "b", strconv.Itoa(i)), "1")
	}
	w, r := startWatch(t, context.Background(), root, Options{Debounce: 300 * time.Millisecond})
	if err := os.RemoveAll(filepath.Join(root, "a")); err != nil {
		t.Fatal(err)
	}
	bs := r.waitPaths("a")
	if last := bs[len(bs)-1]; slices.ContainsFunc(last.Paths, func(p string) bool { return strings.HasPrefix(p, "a/") }) {
		t.Errorf("removed folder reported with its contents: %v", last.Paths)
	}
	if got := w.Stats().Folders; got != 1 {
		t.Errorf("Folders = %d, want 1", got)
	}
}

func TestSkipped(t *testing.T) {
	root := notGit(t)
	write(t, filepath.Join(root, "node_modules", "pkg", "index.js"), "1")
	write(t, filepath.Join(root, "sub", "node_modules", "x.js"), "1")
	w, r := startWatch(t, context.Background(), root, Options{})
	if got, want := w.Unwatched(), []string{"node_modules", "sub/node_modules"}; !slices.Equal(got, want) {
		t.Errorf("Unwatched = %v, want %v", got, want)
	}
	if got := w.Stats().Folders; got != 2 {
		t.Errorf("Folders = %d, want 2 (root, sub)", got)
	}

	write(t, filepath.Join(root, "node_modules", "pkg", "new.js"), "1")
	write(t, filepath.Join(root, "sub", "node_modules", "x.js"), "2")
	mkdirs(t, filepath.Join(root, "lib", "node_modules", "p"))
	write(t, filepath.Join(root, "lib", "node_modules", "p", "y.js"), "1")
	write(t, filepath.Join(root, "lib", "ok.js"), "1")
	bs := r.waitPaths("lib/ok.js", "lib/node_modules") // the new skipped folder appears as itself
	more, _ := r.sentinel(root)
	noPathUnder(t, append(bs, more...), "node_modules/", "sub/node_modules/", "lib/node_modules/")
	if got, want := w.Unwatched(), []string{"lib/node_modules", "node_modules", "sub/node_modules"}; !slices.Equal(got, want) {
		t.Errorf("Unwatched = %v, want %v", got, want)
	}
}

func TestGitignored(t *testing.T) {
	root := gitRepo(t)
	write(t, filepath.Join(root, ".gitignore"), "gen/\n*.log\n")
	write(t, filepath.Join(root, "gen", "sub", "a.go"), "1")
	// A folder holding only ignored files is listed by `git ls-files --ignored --directory`
	// but is not ignored: a new source file in it must be reported.
	write(t, filepath.Join(root, "only", "a.log"), "1")
	w, r := startWatch(t, context.Background(), root, Options{})
	if got, want := w.Unwatched(), []string{"gen"}; !slices.Equal(got, want) {
		t.Errorf("Unwatched = %v, want %v", got, want)
	}

	write(t, filepath.Join(root, "gen", "sub", "b.go"), "1")
	write(t, filepath.Join(root, "only", "b.go"), "1")
	write(t, filepath.Join(root, "x.log"), "1") // ignored files in watched folders count
	mkdirs(t, filepath.Join(root, "new", "gen", "deep"))
	write(t, filepath.Join(root, "new", "gen", "deep", "f"), "1")
	write(t, filepath.Join(root, "new", "ok.txt"), "1")
	bs := r.waitPaths("only/b.go", "x.log", "new/ok.txt", "new/gen")
	more, _ := r.sentinel(root)
	noPathUnder(t, append(bs, more...), "gen/", "new/gen/")
	if got, want := w.Unwatched(), []string{"gen", "new/gen"}; !slices.Equal(got, want) {
		t.Errorf("Unwatched = %v, want %v", got, want)
	}
}

func TestGitignoreEdit(t *testing.T) {
	root := gitRepo(t)
	write(t, filepath.Join(root, "data", "d", "keep"), "1")
	write(t, filepath.Join(root, ".gitignore"), "*.tmp\n")
	w, r := startWatch(t, context.Background(), root, Options{})
	if got := w.Stats().Folders; got != 3 {
		t.Fatalf("Folders = %d, want 3", got)
	}

	write(t, filepath.Join(root, ".gitignore"), "*.tmp\ndata/\n")
	r.waitPaths(".gitignore", "data") // now ignored: reported as changed
	if got, want := w.Unwatched(), []string{"data"}; !slices.Equal(got, want) {
		t.Errorf("Unwatched = %v, want %v", got, want)
	}
	if got := w.Stats().Folders; got != 1 {
		t.Errorf("Folders = %d while data is ignored, want 1", got)
	}
	write(t, filepath.Join(root, "data", "d", "x"), "1")
	bs, _ := r.sentinel(root)
	noPathUnder(t, bs, "data/")

	write(t, filepath.Join(root, ".gitignore"), "*.tmp\n")
	r.waitPaths(".gitignore", "data", "data/d/x") // back in view, with its contents
	if got := w.Unwatched(); len(got) != 0 {
		t.Errorf("Unwatched = %v, want none", got)
	}
	write(t, filepath.Join(root, "data", "d", "y"), "1")
	r.waitPaths("data/d/y")
}

func headOf(t *testing.T, bs []Batch) *HeadChange {
	t.Helper()
	var h *HeadChange
	for _, b := range bs {
		if b.Head != nil {
			if h != nil {
				t.Errorf("two head changes: %+v then %+v", *h, *b.Head)
			}
			h = b.Head
		}
	}
	return h
}

func waitHead(r *recorder) []Batch {
	return r.waitFor("head change", func(bs []Batch) bool { return bs[len(bs)-1].Head != nil })
}

func TestHead(t *testing.T) {
	root := gitRepo(t)
	write(t, filepath.Join(root, "f"), "1")
	git(t, root, "add", "f")
	git(t, root, "commit", "-q", "-m", "one")
	c1 := git(t, root, "rev-parse", "HEAD")
	git(t, root, "checkout", "-q", "-b", "other")
	write(t, filepath.Join(root, "g"), "1")
	git(t, root, "add", "g")
	git(t, root, "commit", "-q", "-m", "other")
	c2 := git(t, root, "rev-parse", "HEAD")
	git(t, root, "checkout", "-q", "main")
	_, r := startWatch(t, context.Background(), root, Options{})

	write(t, filepath.Join(root, "f"), "2")
	git(t, root, "commit", "-q", "-am", "two")
	c3 := git(t, root, "rev-parse", "HEAD")
	if h := headOf(t, waitHead(r)); *h != (HeadChange{Old: c1, New: c3, Branch: "main"}) {
		t.Errorf("commit: Head = %+v, want %s..%s on main", *h, c1, c3)
	}

	git(t, root, "checkout", "-q", "other") // brings g back
	bs := r.waitFor("head change and g", func(bs []Batch) bool {
		return allPaths(bs)["g"] && slices.ContainsFunc(bs, func(b Batch) bool { return b.Head != nil })
	})
	if h := headOf(t, bs); *h != (HeadChange{Old: c3, New: c2, Branch: "other"}) {
		t.Errorf("checkout: Head = %+v, want %s..%s on other", *h, c3, c2)
	}

	git(t, root, "checkout", "-q", "--detach", "main")
	if h := headOf(t, waitHead(r)); *h != (HeadChange{Old: c2, New: c3}) {
		t.Errorf("detach: Head = %+v, want %s..%s detached", *h, c2, c3)
	}

	git(t, root, "checkout", "-q", "-b", "topic") // the same commit, now on a branch
	if h := headOf(t, waitHead(r)); *h != (HeadChange{Old: c3, New: c3, Branch: "topic"}) {
		t.Errorf("new branch: Head = %+v, want %s on topic", *h, c3)
	}
	if h, err := Head(context.Background(), root); err != nil || h != (HeadChange{New: c3, Branch: "topic"}) {
		t.Errorf("Head(root) = %+v, %v", h, err)
	}
	if _, err := Head(context.Background(), t.TempDir()); err == nil {
		t.Error("Head of a folder outside git: no error")
	}
}

// HEAD of a linked worktree lives in .git/worktrees/<name>, its branch refs in the main
// .git; a commit in the main worktree moves no HEAD of this one.
func TestHeadWorktree(t *testing.T) {
	main := gitRepo(t)
	write(t, filepath.Join(main, "f"), "1")
	git(t, main, "add", "f")
	git(t, main, "commit", "-q", "-m", "one")
	c1 := git(t, main, "rev-parse", "HEAD")
	wt := filepath.Join(t.TempDir(), "wt")
	git(t, main, "worktree", "add", "-q", "-b", "side", wt)
	_, r := startWatch(t, context.Background(), wt, Options{})

	write(t, filepath.Join(main, "f"), "2")
	git(t, main, "commit", "-q", "-am", "main moves")
	write(t, filepath.Join(wt, "f"), "3")
	git(t, wt, "commit", "-q", "-am", "side moves")
	c2 := git(t, wt, "rev-parse", "HEAD")
	if h := headOf(t, waitHead(r)); *h != (HeadChange{Old: c1, New: c2, Branch: "side"}) {
		t.Errorf("Head = %+v, want %s..%s on side", *h, c1, c2)
	}
}

// git status rewrites the index (and its lock) in .git: no git call, no Head, no Paths.
func TestGitStatusQuiet(t *testing.T) {
	root := gitRepo(t)
	write(t, filepath.Join(root, "f"), "1")
	git(t, root, "add", "f")
	git(t, root, "commit", "-q", "-m", "one")
	if err := os.Chtimes(filepath.Join(root, "f"), time.Now(), time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err) // stale stat data: the next git status refreshes and rewrites the index
	}
	w, r := startWatch(t, context.Background(), root, Options{})
	calls := w.Stats().GitCalls
	git(t, root, "status")
	git(t, root, "status", "--porcelain")
	git(t, root, "add", "f")
	bs, name := r.sentinel(root)
	for _, b := range bs {
		if b.Head != nil || b.Overflow || !slices.Equal(b.Paths, []string{name}) {
			t.Errorf("git status gave %+v", b)
		}
	}
	if got := w.Stats().GitCalls; got != calls {
		t.Errorf("git status caused %d git calls", got-calls)
	}
}

func TestClose(t *testing.T) {
	root := notGit(t)
	var closed atomic.Bool
	w, err := Start(context.Background(), root, Options{}, func(b Batch) {
		if closed.Load() {
			t.Errorf("batch after Close: %+v", b)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(root, "a"), "1") // pending when Close is called
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	closed.Store(true)
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	select {
	case <-w.Done():
	default:
		t.Error("Done not closed after Close")
	}
	write(t, filepath.Join(root, "b"), "1")
	time.Sleep(200 * time.Millisecond) // a wrong implementation would report b by now
}

func TestCancel(t *testing.T) {
	root := notGit(t)
	ctx, cancel := context.WithCancel(context.Background())
	var stopped atomic.Bool
	var mu sync.Mutex
	var got []string
	w, err := Start(ctx, root, Options{}, func(b Batch) {
		if stopped.Load() {
			t.Errorf("batch after cancel: %+v", b)
		}
		mu.Lock()
		got = append(got, b.Paths...)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case <-w.Done():
	case <-time.After(deadline):
		t.Fatal("watcher still running after cancel")
	}
	stopped.Store(true)
	write(t, filepath.Join(root, "b"), "1")
	time.Sleep(200 * time.Millisecond) // a wrong implementation would report b by now
	if err := w.Close(); err != nil {
		t.Errorf("Close after cancel: %v", err)
	}
}

// Outside git only Skip applies: a .gitignore means nothing, and no git folder is watched.
func TestNonGit(t *testing.T) {
	root := notGit(t)
	write(t, filepath.Join(root, ".gitignore"), "gen/\n")
	mkdirs(t, filepath.Join(root, "gen"), filepath.Join(root, ".venv", "lib"))
	w, r := startWatch(t, context.Background(), root, Options{})
	if got, want := w.Unwatched(), []string{".venv"}; !slices.Equal(got, want) {
		t.Errorf("Unwatched = %v, want %v", got, want)
	}
	if s := w.Stats(); s.GitFolders != 0 || s.Folders != 2 {
		t.Errorf("Stats = %+v, want 2 folders, no git folder", s)
	}
	write(t, filepath.Join(root, "gen", "x"), "1")
	for _, b := range r.waitPaths("gen/x") {
		if b.Head != nil {
			t.Errorf("Head outside git: %+v", b.Head)
		}
	}
}

func TestDebounce(t *testing.T) {
	root := notGit(t)
	const debounce = time.Second
	_, r := startWatch(t, context.Background(), root, Options{Debounce: debounce})
	var want []string
	t0 := time.Now()
	for i := range 30 {
		name := fmt.Sprintf("f%02d", i)
		for j := range 5 {
			write(t, filepath.Join(root, name), strconv.Itoa(j))
		}
		want = append(want, name)
	}
	took := time.Since(t0)
	bs := r.waitPaths(want...)
	if len(bs) != 1 || !slices.Equal(bs[0].Paths, want) {
		if took > debounce/2 {
			t.Skipf("the writes took %v, too long for one %v batch on this loaded machine", took, debounce)
		}
		t.Errorf("150 writes of 30 files in %v gave %d batches: %+v", took, len(bs), bs)
	}
}

func TestMaxPaths(t *testing.T) {
	root := notGit(t)
	_, r := startWatch(t, context.Background(), root, Options{MaxPaths: 5, Debounce: 300 * time.Millisecond})
	for i := range 20 {
		write(t, filepath.Join(root, fmt.Sprintf("f%02d", i)), "1")
	}
	r.waitFor("overflow", func(bs []Batch) bool { return bs[len(bs)-1].Overflow })
	write(t, filepath.Join(root, "after"), "1")
	bs := r.waitPaths("after")
	if bs[len(bs)-1].Overflow {
		t.Error("overflow did not reset")
	}
}

// The kernel queue overflows while onBatch blocks: the watcher reports Overflow and watches
// again what was created meanwhile.
func TestKernelOverflow(t *testing.T) {
	data, err := os.ReadFile("/proc/sys/fs/inotify/max_queued_events")
	if err != nil {
		t.Skip("no inotify:", err)
	}
	max, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	if max <= 0 || max > 100_000 {
		t.Skipf("max_queued_events = %d: too many events to make", max)
	}
	root := notGit(t)
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	write(t, a, "1")
	write(t, b, "1")
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	_, r := startWatchHook(t, context.Background(), root, Options{}, func(Batch) {
		once.Do(func() { close(entered); <-release })
	})
	write(t, filepath.Join(root, "block"), "1")
	<-entered
	// Alternate two files: inotify merges an event identical to the last one queued. Twice
	// the queue's size, not just over it: fsnotify's reader holds a buffer of events too, and
	// under load a margin of a thousand was not always enough (seen once in CI-like runs).
	for i := range max + 2000 {
		mode := os.FileMode(0o600 | (i%2)<<2)
		os.Chmod(a, mode)
		os.Chmod(b, mode)
	}
	write(t, filepath.Join(root, "during", "f"), "1")
	close(release)
	r.waitFor("overflow", func(bs []Batch) bool { return bs[len(bs)-1].Overflow })
	write(t, filepath.Join(root, "during", "g"), "1")
	r.waitPaths("during/g")
}

// The inotify limit, reached through the test hook: Start fails with ErrLimit; after Start
// the folder becomes Unwatched and the batch is Overflow.
func TestLimit(t *testing.T) {
	root := notGit(t)
	mkdirs(t, filepath.Join(root, "x", "deep"))
	full := func(p string) error {
		if strings.Contains(p, "deep") {
			return syscall.ENOSPC
		}
		return nil
	}
	_, err := Start(context.Background(), root, Options{addHook: full}, func(Batch) {})
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "max_user_watches") {
		t.Fatalf("Start = %v, want ErrLimit", err)
	}

	if err := os.RemoveAll(filepath.Join(root, "x")); err != nil {
		t.Fatal(err)
	}
	var logs atomic.Int32
	w, r := startWatch(t, context.Background(), root, Options{addHook: full, Logf: func(f string, args ...any) {
		if strings.Contains(fmt.Sprintf(f, args...), "max_user_watches") {
			logs.Add(1)
		}
	}})
	mkdirs(t, filepath.Join(root, "deep1"), filepath.Join(root, "deep2"))
	r.waitFor("overflow", func(bs []Batch) bool { return bs[len(bs)-1].Overflow })
	r.sentinel(root)
	if got, want := w.Unwatched(), []string{"deep1", "deep2"}; !slices.Equal(got, want) {
		t.Errorf("Unwatched = %v, want %v", got, want)
	}
	if n := logs.Load(); n != 1 {
		t.Errorf("limit logged %d times, want once", n)
	}
}

func TestSymlinkNotFollowed(t *testing.T) {
	root := notGit(t)
	out := t.TempDir()
	mkdirs(t, filepath.Join(out, "real", "sub"))
	if err := os.Symlink(filepath.Join(out, "real"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	w, r := startWatch(t, context.Background(), root, Options{})
	if got := w.Stats().Folders; got != 1 {
		t.Errorf("Folders = %d, want 1", got)
	}
	if err := os.Symlink(filepath.Join(out, "real"), filepath.Join(root, "link2")); err != nil {
		t.Fatal(err)
	}
	r.waitPaths("link2")
	write(t, filepath.Join(out, "real", "x"), "1")
	bs, _ := r.sentinel(root)
	noPathUnder(t, bs, "link/", "link2/")
	if got := w.Stats().Folders; got != 1 {
		t.Errorf("Folders = %d after a new link, want 1", got)
	}
}
