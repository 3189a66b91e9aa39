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
)

// Benchmarks for making the agent's private copy of a large repository, to choose the
// method. Every benchmark works on the same kind of generated tree: 10,000 files of 1–4 KB
// in 200 folders, committed in a git repository of its own (the user's repository).
//
//	go test -run '^$' -bench . -benchtime 3x ./agent/workspace/
//
// Copy methods are timed without the base commit, which BenchmarkCopy10k/git-base times
// on its own: Prepare ≈ go-copyTree + git-base.
//
// Copies are kept until the benchmark ends rather than deleted between iterations: on ext4
// without a journal (this project's CI VMs) creating inodes right after deleting many
// scans past every inode freed in the last few minutes, which can make a copy ten times
// slower. cp-a-after-rm shows that cost on purpose. TMPDIR=/dev/shm measures the methods
// without any disk file system.

const (
	benchFiles   = 10000
	benchFolders = 200
)

// benchTree writes the tree into a fresh b.TempDir() and commits it there.
func benchTree(b *testing.B) string {
	b.Helper()
	src := filepath.Join(b.TempDir(), "src")
	r := rand.New(rand.NewPCG(1, 2))
	var line strings.Builder
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
			line.Reset()
			fmt.Fprintf(&line, "// %d: %016x %016x\n", i, r.Uint64(), r.Uint64())
			sb.WriteString(line.String())
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%05d.go", i)), []byte(sb.String()[:size]), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	gitBase(b, src)
	return src
}

// gitBase runs the same git init/add/commit as Prepare, in dir.
func gitBase(b *testing.B, dir string) {
	b.Helper()
	w := &Workspace{Root: dir}
	for _, args := range [][]string{
		{"init", "-q"},
		{"add", "-A"},
		{"commit", "-q", "--allow-empty", "--no-verify", "-m", "frognano: base"},
		{"rev-parse", "HEAD"},
	} {
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

// topLevel lists src's entries other than .git, as cp arguments.
func topLevel(b *testing.B, src string) []string {
	b.Helper()
	ents, err := os.ReadDir(src)
	if err != nil {
		b.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if e.Name() != ".git" {
			out = append(out, filepath.Join(src, e.Name()))
		}
	}
	return out
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

func reportMs(b *testing.B) {
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
}

// BenchmarkPrepare10k is the current method: Go file copy, then git init/add/commit.
func BenchmarkPrepare10k(b *testing.B) {
	src := benchTree(b)
	tmp := b.TempDir()
	ctx := context.Background()
	i := 0
	for b.Loop() {
		i++
		dst := filepath.Join(tmp, fmt.Sprint(i))
		w, err := Prepare(ctx, src, dst, nil)
		if err != nil {
			b.Fatal(err)
		}
		if i == 1 {
			b.StopTimer()
			checkCopy(b, w.Root)
			b.StartTimer()
		}
	}
	reportMs(b)
}

// BenchmarkCopy10k compares ways to copy the tree (without the source's .git), and times
// the base commit separately, on one generated tree.
func BenchmarkCopy10k(b *testing.B) {
	src := benchTree(b)
	ctx := context.Background()
	entries := topLevel(b, src)
	// Every copy lives under root until the whole benchmark ends (see the file comment).
	root := b.TempDir()
	dirs := 0
	newDir := func() string {
		dirs++
		return filepath.Join(root, fmt.Sprint(dirs))
	}

	copyLoop := func(b *testing.B, copyFn func(dst string)) {
		first := true
		for b.Loop() {
			dst := newDir()
			copyFn(dst)
			if first {
				b.StopTimer()
				checkCopy(b, dst)
				first = false
				b.StartTimer()
			}
		}
		reportMs(b)
	}
	cp := func(b *testing.B, flags ...string) func(string) {
		return func(dst string) {
			if err := os.Mkdir(dst, 0o755); err != nil {
				b.Fatal(err)
			}
			benchRun(b, "cp", append(append(flags, "-t", dst), entries...)...)
		}
	}

	b.Run("go-copyTree", func(b *testing.B) {
		copyLoop(b, func(dst string) {
			if err := copyTree(ctx, src, dst); err != nil {
				b.Fatal(err)
			}
		})
	})
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
	b.Run("git-worktree-add", func(b *testing.B) {
		copyLoop(b, func(dst string) {
			benchRun(b, "git", "-C", src, "worktree", "add", "-q", "--detach", dst, "HEAD")
		})
	})

	// git-base is what every plain copy still needs for Prepare: init, add -A, commit.
	b.Run("git-base", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			dst := newDir()
			if err := copyTree(ctx, src, dst); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			gitBase(b, dst)
		}
		reportMs(b)
	})
	// git-base-alternates is git-base with the source's object store as an alternate
	// (read only): committed content needs no new objects, only hashing.
	b.Run("git-base-alternates", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			dst := newDir()
			if err := copyTree(ctx, src, dst); err != nil {
				b.Fatal(err)
			}
			w := &Workspace{Root: dst}
			b.StartTimer()
			if _, err := w.git(ctx, "init", "-q"); err != nil {
				b.Fatal(err)
			}
			alt := filepath.Join(dst, ".git", "objects", "info", "alternates")
			if err := os.WriteFile(alt, []byte(filepath.Join(src, ".git", "objects")+"\n"), 0o644); err != nil {
				b.Fatal(err)
			}
			for _, args := range [][]string{
				{"add", "-A"},
				{"commit", "-q", "--allow-empty", "--no-verify", "-m", "frognano: base"},
			} {
				if _, err := w.git(ctx, args...); err != nil {
					b.Fatal(err)
				}
			}
		}
		reportMs(b)
	})
	// worktree-base: a worktree already has HEAD and a populated index, so laying the base
	// (overlays included) is add -A + commit over an index that only needs stat checks.
	b.Run("worktree-base", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			dst := newDir()
			benchRun(b, "git", "-C", src, "worktree", "add", "-q", "--detach", dst, "HEAD")
			w := &Workspace{Root: dst}
			b.StartTimer()
			for _, args := range [][]string{
				{"add", "-A"},
				{"commit", "-q", "--allow-empty", "--no-verify", "-m", "frognano: base"},
			} {
				if _, err := w.git(ctx, args...); err != nil {
					b.Fatal(err)
				}
			}
		}
		reportMs(b)
	})

	// cp-a-after-rm is what back-to-back episodes do: the previous copy is deleted just
	// before the next one is made (the deletion is not timed).
	b.Run("cp-a-after-rm", func(b *testing.B) {
		prev := newDir()
		cp(b, "-a")(prev)
		for b.Loop() {
			b.StopTimer()
			if err := os.RemoveAll(prev); err != nil {
				b.Fatal(err)
			}
			prev = newDir()
			b.StartTimer()
			cp(b, "-a")(prev)
		}
		reportMs(b)
	})
}
