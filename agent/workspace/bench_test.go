package workspace

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Benchmarks for making the agent's private copy of a large repository, to choose the
// method. Every benchmark works on the same kind of generated tree: 10,000 files of 1–4 KB
// in 200 folders, committed in a git repository of its own (the user's repository).
//
//	go test -run '^$' -bench . -benchtime 3x ./agent/workspace/
//
// Copy methods are timed without the base commit, which the *-base benchmarks time on
// their own: Prepare ≈ go-copyTree + git-base.
//
// Besides wall time each reports cpu-ms/op, the CPU time (user + system, this process and
// its finished children: cp, git) of the timed sections, which hardly moves when other
// work shares the cores.
//
// Copies are kept until the benchmark ends rather than deleted between iterations: on ext4
// without a journal (this project's VMs) creating inodes right after deleting many scans
// past every inode freed in the last minutes, which can make a copy ten times slower.
// cp-a-after-rm shows that cost on purpose. TMPDIR=/dev/shm measures the methods without a
// disk file system.

const (
	benchFiles   = 10000
	benchFolders = 200
)

// benchTree writes the tree into a fresh b.TempDir() and commits it there.
//
// It also turns git's automatic gc off for the benchmark: a commit that leaves more than
// gc.auto (6,700) loose objects starts a detached "git gc --auto" that repacks the whole
// repository in the background, which would steal the cores from what is timed and race
// the removal of the copy. Prepare itself does not turn it off (yet).
func benchTree(b *testing.B) string {
	b.Helper()
	for k, v := range map[string]string{"GIT_CONFIG_COUNT": "2",
		"GIT_CONFIG_KEY_0": "gc.auto", "GIT_CONFIG_VALUE_0": "0",
		"GIT_CONFIG_KEY_1": "maintenance.auto", "GIT_CONFIG_VALUE_1": "false"} {
		b.Setenv(k, v)
	}
	src := filepath.Join(b.TempDir(), "src")
	r := rand.New(rand.NewPCG(1, 2))
	for i := range benchFiles {
		dir := filepath.Join(src, fmt.Sprintf("d%02d", i%benchFolders/10), fmt.Sprintf("s%d", i%10))
		if i < benchFolders {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		size := 1024 + r.IntN(3072)
		var sb strings.Builder
		fmt.Fprintf(&sb, "package p%d\n\n", i%benchFolders)
		for sb.Len() < size {
			fmt.Fprintf(&sb, "// %d: %016x %016x\n", i, r.Uint64(), r.Uint64())
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%05d.go", i)), []byte(sb.String()[:size]), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	benchGit(b, src, [][]string{{"init", "-q"}}, baseArgs...)
	return src
}

// baseArgs is Prepare's base commit after git init.
var baseArgs = [][]string{
	{"add", "-A"},
	{"commit", "-q", "--allow-empty", "--no-verify", "-m", "frognano: base"},
	{"rev-parse", "HEAD"},
}

// benchGit runs git commands in dir as Prepare does.
func benchGit(b *testing.B, dir string, first [][]string, rest ...[]string) {
	b.Helper()
	w := &Workspace{Root: dir}
	for _, args := range append(first, rest...) {
		if _, err := w.git(context.Background(), args...); err != nil {
			b.Fatal(err)
		}
	}
}

func benchRun(b *testing.B, name string, args ...string) {
	b.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		b.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
}

// cpuClock adds up CPU time over the timed sections.
type cpuClock struct{ total, t0 time.Duration }

func cpuTime() time.Duration {
	var self, children syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return tv(self.Utime) + tv(self.Stime) + tv(children.Utime) + tv(children.Stime)
}

func (c *cpuClock) start() { c.t0 = cpuTime() }
func (c *cpuClock) stop()  { c.total += cpuTime() - c.t0 }

// report gives wall and CPU milliseconds per operation.
func (c *cpuClock) report(b *testing.B) {
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
	b.ReportMetric(float64(c.total.Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

func checkCopy(b *testing.B, dst string) {
	b.Helper()
	n := 0
	filepath.WalkDir(dst, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && strings.HasSuffix(p, ".go") {
			n++
		}
		return nil
	})
	if n != benchFiles {
		b.Fatalf("the copy has %d files, want %d", n, benchFiles)
	}
}

// BenchmarkPrepare10k is the current method: Go file copy, then git init/add/commit.
func BenchmarkPrepare10k(b *testing.B) {
	src := benchTree(b)
	tmp := b.TempDir()
	var clk cpuClock
	i := 0
	for b.Loop() {
		i++
		clk.start()
		w, err := Prepare(context.Background(), src, filepath.Join(tmp, fmt.Sprint(i)), nil)
		clk.stop()
		if err != nil {
			b.Fatal(err)
		}
		if i == 1 {
			b.StopTimer()
			checkCopy(b, w.Root)
			b.StartTimer()
		}
	}
	clk.report(b)
}

// BenchmarkCopy10k compares ways to copy the tree (without the source's .git) on one
// generated tree, and times the base commit separately.
func BenchmarkCopy10k(b *testing.B) {
	src := benchTree(b)
	ctx := context.Background()
	var entries []string // src's top level but .git, for cp
	ents, err := os.ReadDir(src)
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() != ".git" {
			entries = append(entries, filepath.Join(src, e.Name()))
		}
	}
	// Every copy lives under root until the whole benchmark ends (see the file comment).
	root := b.TempDir()
	dirs := 0
	newDir := func() string {
		dirs++
		return filepath.Join(root, fmt.Sprint(dirs))
	}
	goCopy := func(b *testing.B) func(string) {
		return func(dst string) {
			if err := copyTree(ctx, src, dst); err != nil {
				b.Fatal(err)
			}
		}
	}
	cp := func(b *testing.B, flags ...string) func(string) {
		return func(dst string) {
			if err := os.Mkdir(dst, 0o755); err != nil {
				b.Fatal(err)
			}
			benchRun(b, "cp", append(append(flags, "-t", dst), entries...)...)
		}
	}
	worktree := func(b *testing.B) func(string) {
		return func(dst string) { benchRun(b, "git", "-C", src, "worktree", "add", "-q", "--detach", dst, "HEAD") }
	}
	// copyLoop times copyFn, and counts the first copy's files.
	copyLoop := func(b *testing.B, copyFn func(dst string)) {
		var clk cpuClock
		first := true
		for b.Loop() {
			dst := newDir()
			clk.start()
			copyFn(dst)
			clk.stop()
			if first {
				b.StopTimer()
				checkCopy(b, dst)
				first = false
				b.StartTimer()
			}
		}
		clk.report(b)
	}
	// baseLoop times git commands on a fresh copy that prepare makes, untimed.
	baseLoop := func(b *testing.B, prepare func(dst string), git func(b *testing.B, dst string)) {
		var clk cpuClock
		for b.Loop() {
			b.StopTimer()
			dst := newDir()
			prepare(dst)
			b.StartTimer()
			clk.start()
			git(b, dst)
			clk.stop()
		}
		clk.report(b)
	}

	b.Run("go-copyTree", func(b *testing.B) { copyLoop(b, goCopy(b)) })
	b.Run("cp-a", func(b *testing.B) { copyLoop(b, cp(b, "-a")) })
	b.Run("cp-a-reflink-auto", func(b *testing.B) {
		// Whether this file system clones at all: cp --reflink=always fails where it cannot.
		probe := filepath.Join(b.TempDir(), "probe")
		reflink := exec.Command("cp", "--reflink=always", filepath.Join(src, "d00", "s0", "f00000.go"), probe).Run() == nil
		var st syscall.Statfs_t
		syscall.Statfs(src, &st)
		b.Logf("file system magic %#x; reflink supported: %v", st.Type, reflink)
		copyLoop(b, cp(b, "-a", "--reflink=auto"))
		r := 0.0
		if reflink {
			r = 1
		}
		b.ReportMetric(r, "reflinked")
	})
	// A worktree holds only committed content, and registers itself in the source's .git.
	b.Run("git-worktree-add", func(b *testing.B) { copyLoop(b, worktree(b)) })

	// git-base is what every plain copy still needs for Prepare: init, add -A, commit.
	b.Run("git-base", func(b *testing.B) {
		baseLoop(b, goCopy(b), func(b *testing.B, dst string) { benchGit(b, dst, [][]string{{"init", "-q"}}, baseArgs...) })
	})
	// git-base-alternates is git-base with the source's object store as a (read-only)
	// alternate: committed content needs no new objects, only hashing.
	b.Run("git-base-alternates", func(b *testing.B) {
		baseLoop(b, goCopy(b), func(b *testing.B, dst string) {
			benchGit(b, dst, [][]string{{"init", "-q"}})
			alt := filepath.Join(dst, ".git", "objects", "info", "alternates")
			if err := os.WriteFile(alt, []byte(filepath.Join(src, ".git", "objects")+"\n"), 0o644); err != nil {
				b.Fatal(err)
			}
			benchGit(b, dst, baseArgs)
		})
	})
	// worktree-base: a worktree already has HEAD and a populated index, so laying the base
	// (overlays included) is add -A + commit over an index that only needs checking.
	b.Run("worktree-base", func(b *testing.B) {
		baseLoop(b, worktree(b), func(b *testing.B, dst string) { benchGit(b, dst, baseArgs) })
	})

	// cp-a-after-rm is what back-to-back episodes do: the previous copy is deleted just
	// before the next one is made (the deletion is not timed).
	b.Run("cp-a-after-rm", func(b *testing.B) {
		prev := newDir()
		cp(b, "-a")(prev)
		baseLoop(b, func(string) {
			if err := os.RemoveAll(prev); err != nil {
				b.Fatal(err)
			}
		}, func(b *testing.B, dst string) {
			cp(b, "-a")(dst)
			prev = dst
		})
	})
}

// BenchmarkWarmTake10k is a run's start with a copy kept ready (Warm.Take) after one file
// of the 10,000 changed: "watched" when a watcher reported it, "compare" when the whole
// tree is compared by size and time. Compare with BenchmarkPrepare10k, the cost without a
// ready copy. The next copy, made in the background after each run, is waited for outside
// the timed part.
func BenchmarkWarmTake10k(b *testing.B) {
	src := benchTree(b)
	for _, watched := range []bool{true, false} {
		name := map[bool]string{true: "watched", false: "compare"}[watched]
		b.Run(name, func(b *testing.B) {
			w, err := NewWarm(src, b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			if watched {
				w.Watching(nil)
			}
			w.Prefetch()
			changed := filepath.Join(src, "d00", "s0", "f00000.go")
			var clk cpuClock
			i := 0
			for b.Loop() {
				b.StopTimer()
				w.Prefetch() // as the language server does after each run
				if err := w.Wait(context.Background()); err != nil {
					b.Fatal(err)
				}
				i++
				content := fmt.Sprintf("package p0\n// change %d\n", i)
				if err := os.WriteFile(changed, []byte(content), 0o644); err != nil {
					b.Fatal(err)
				}
				if watched {
					w.Changed("d00/s0/f00000.go")
				}
				b.StartTimer()
				clk.start()
				ws, err := w.Take(context.Background(), nil)
				clk.stop()
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if got, _ := os.ReadFile(filepath.Join(ws.Root, "d00", "s0", "f00000.go")); string(got) != content {
					b.Fatalf("the copy missed the change: %q", got)
				}
				ws.Remove()
				b.StartTimer()
			}
			clk.report(b)
		})
	}
}
