package watch

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// largeRepo is a synthetic git repository, built once per test binary (TestMain removes it):
// 10×10×50 = 5,000 leaf folders of 10 small files each (50,000 files, 5,110 folders watched),
// all committed, plus 10 node_modules folders of 20 packages each that stay unwatched. With
// -short it has 2,000 leaf folders (20,000 files): creating 50,000 files took 40 s on the
// 2-core development machine, whose disk is slow at creating files.
var largeRepo struct {
	once  sync.Once
	dir   string
	build time.Duration
	err   error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if largeRepo.dir != "" {
		os.RemoveAll(largeRepo.dir)
	}
	os.Exit(code)
}

func buildLargeRepo(b *testing.B) string {
	largeRepo.once.Do(func() {
		t0 := time.Now()
		dir, err := os.MkdirTemp("", "watch-bench-")
		if err != nil {
			largeRepo.err = err
			return
		}
		largeRepo.dir = dir
		leaves := 50
		if testing.Short() {
			leaves = 20
		}
		for i := range 10 {
			for j := range 10 {
				for k := range leaves {
					leaf := filepath.Join(dir, fmt.Sprintf("d%d", i), fmt.Sprintf("e%d", j), fmt.Sprintf("f%02d", k))
					for n := range 10 {
						write(b, filepath.Join(leaf, fmt.Sprintf("file%d.go", n)), "package p\n")
					}
				}
			}
			for p := range 20 {
				write(b, filepath.Join(dir, fmt.Sprintf("d%d", i), "node_modules", fmt.Sprintf("p%d", p), "index.js"), "x\n")
			}
		}
		write(b, filepath.Join(dir, ".gitignore"), "node_modules/\n")
		git(b, dir, "init", "-q", "-b", "main")
		git(b, dir, "add", "-A")
		git(b, dir, "commit", "-q", "-m", "large")
		largeRepo.build = time.Since(t0)
	})
	if largeRepo.err != nil {
		b.Fatal(largeRepo.err)
	}
	return largeRepo.dir
}

// BenchmarkWatchLargeRepo times Start on the large repository (Close is not timed) and
// reports what one live watcher holds:
//   - heap-MB: Go heap retained (HeapAlloc after a GC, watcher alive, minus before Start);
//   - heap-B/folder: the same per watched folder;
//   - stack-KB: goroutine stacks added (fsnotify reads events into a 64 KiB stack buffer);
//   - folders: watched folders (workspace and git);
//   - kernel-MB-est: folders × the kernel's own per-watch cost, INOTIFY_WATCH_COST
//     (sizeof(struct inotify_inode_mark) + 2*sizeof(struct inode), fs/notify/inotify/
//     inotify_user.c), recovered from the boot default max_user_watches = 1% of RAM / cost.
//     It is an estimate and an upper bound: it counts the watched folder's inode as pinned,
//     memory the page cache usually holds anyway.
//   - slab-MB: the change of Slab in /proc/meminfo, a rough measurement (other processes
//     on the machine move it too).
func BenchmarkWatchLargeRepo(b *testing.B) {
	root := buildLargeRepo(b)
	b.Logf("tree built in %v", largeRepo.build.Round(time.Millisecond))
	var heap, stack, slab, folders, gitCalls float64
	var ms runtime.MemStats
	for b.Loop() {
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		before, stack0 := ms.HeapAlloc, ms.StackInuse
		slab0 := meminfo("Slab")
		b.StartTimer()
		w, err := Start(context.Background(), root, Options{}, func(Batch) {})
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&ms)
		heap += float64(int64(ms.HeapAlloc) - int64(before))
		stack += float64(int64(ms.StackInuse) - int64(stack0))
		slab += float64(meminfo("Slab") - slab0)
		s := w.Stats()
		folders = float64(s.Folders + s.GitFolders)
		gitCalls = float64(s.GitCalls)
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	n := float64(b.N)
	b.ReportMetric(heap/n/1e6, "heap-MB")
	b.ReportMetric(heap/n/folders, "heap-B/folder")
	b.ReportMetric(stack/n/1e3, "stack-KB")
	b.ReportMetric(folders, "folders")
	b.ReportMetric(gitCalls, "git-calls")
	b.ReportMetric(slab/n/1e6, "slab-MB")
	if cost := watchCost(); cost > 0 {
		b.ReportMetric(folders*cost/1e6, "kernel-MB-est")
		b.Logf("implied INOTIFY_WATCH_COST %.0f bytes per watch", cost)
	}
}

// watchCost returns the kernel's per-watch cost implied by the boot default of
// max_user_watches (1% of RAM / cost, clamped to [8192, 1048576]), or 0 when the value looks
// clamped or set by hand.
func watchCost() float64 {
	data, err := os.ReadFile("/proc/sys/fs/inotify/max_user_watches")
	if err != nil {
		return 0
	}
	max, _ := strconv.ParseFloat(strings.TrimSpace(string(data)), 64)
	ram := meminfo("MemTotal")
	if max <= 8192 || max >= 1048576 || max == 524288 || ram == 0 {
		return 0
	}
	return float64(ram) / 100 / max
}

// meminfo returns a /proc/meminfo field in bytes (0 if unknown).
func meminfo(field string) int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if ok && name == field {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb * 1024
		}
	}
	return 0
}
