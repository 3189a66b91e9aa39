package agent

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Other programs' writes on the same disk do not count against an episode's budget; its
// own do, and stop the command.
func TestDiskGuardCountsOnlyTheEpisode(t *testing.T) {
	copyDir, elsewhere := t.TempDir(), t.TempDir()
	g, err := newDiskGuard(32<<20, []string{copyDir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	fill := func(dir string, mib int) {
		buf := make([]byte, 1<<20)
		for i := range mib {
			rand.Read(buf)
			os.WriteFile(filepath.Join(dir, "f"+string(rune('a'+i%26))+time.Now().Format("150405.000000")), buf, 0o644)
		}
	}
	watchWhile := func(write func()) error {
		ctx, cancel := context.WithCancelCause(context.Background())
		stop := g.watch(cancel)
		write()
		time.Sleep(4 * diskPoll)
		stop()
		return context.Cause(ctx)
	}
	if err := watchWhile(func() { fill(elsewhere, 64) }); err != nil {
		t.Errorf("64 MiB written elsewhere stopped the command: %v", err)
	}
	if err := watchWhile(func() { fill(copyDir, 128) }); !errors.Is(err, errDiskBudget) {
		t.Errorf("128 MiB written into the copy against a 32 MiB budget: %v", err)
	}
	if g.budget != 32<<20 {
		t.Errorf("budget %d", g.budget)
	}
}

// Space others free while a command runs must not hide the command's own writes: a delete
// elsewhere used to lower the cheap figure by as much (found in a loaded test run).
func TestDiskGuardSeesWritesAfterOthersFree(t *testing.T) {
	copyDir, elsewhere := t.TempDir(), t.TempDir()
	buf := make([]byte, 1<<20)
	var others []string
	for i := range 112 {
		rand.Read(buf)
		p := filepath.Join(elsewhere, time.Now().Format("150405.000000")+string(rune('a'+i%26)))
		if err := os.WriteFile(p, buf, 0o644); err != nil {
			t.Fatal(err)
		}
		others = append(others, p)
	}
	syscall.Sync() // the others' blocks are allocated before the guard looks
	g, err := newDiskGuard(32<<20, []string{copyDir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := g.watch(cancel)
	for _, p := range others {
		os.Remove(p)
	}
	syscall.Sync()
	time.Sleep(4 * diskPoll) // the guard sees the space come back
	for i := range 128 {
		rand.Read(buf)
		if err := os.WriteFile(filepath.Join(copyDir, fmt.Sprint(i)), buf, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	syscall.Sync()
	time.Sleep(4 * diskPoll)
	stop()
	if err := context.Cause(ctx); !errors.Is(err, errDiskBudget) {
		t.Errorf("128 MiB written into the copy after others freed 112 MiB, against a 32 MiB budget: %v", err)
	}
}

// The shared Go build cache is not walked at the start; what counts there is what changed
// since, by change time: a file that was there before counts not at all, new files count,
// and so does an old file the command grew and then set back in time (its modification
// time can be set back, its change time cannot).
func TestDiskGuardCountsSharedChangesOnly(t *testing.T) {
	copyDir, cache := t.TempDir(), t.TempDir()
	if !blocksNeedAChange(cache) {
		t.Skipf("%s is not on a disk file system: the guard walks a shared folder there", cache)
	}
	old := filepath.Join(cache, "00", "old")
	os.MkdirAll(filepath.Dir(old), 0o755)
	buf := make([]byte, 16<<20)
	rand.Read(buf)
	if err := os.WriteFile(old, buf, 0o644); err != nil {
		t.Fatal(err)
	}
	syscall.Sync()
	time.Sleep(50 * time.Millisecond) // past the file system's clock tick
	g, err := newDiskGuard(32<<20, []string{copyDir}, []string{cache})
	if err != nil {
		t.Fatal(err)
	}
	if len(g.shared) != 1 {
		t.Fatalf("the cache is measured whole: %+v", g)
	}
	if g.base != dirBlocks(copyDir) {
		t.Errorf("base %d bytes: the empty copy holds its folder's %d and the cache is not walked", g.base, dirBlocks(copyDir))
	}
	if n := g.grown(); n != 0 {
		t.Errorf("grown %d bytes before anything was written", n)
	}
	if err := os.WriteFile(filepath.Join(cache, "00", "new"), buf[:4<<20], 0o644); err != nil {
		t.Fatal(err)
	}
	syscall.Sync()
	if n := g.grown(); n < 4<<20 || n > 5<<20 {
		t.Errorf("grown %d bytes after a new 4 MiB file in the cache, want 4 MiB", n)
	}
	f, err := os.OpenFile(old, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(buf)
	f.Close()
	long := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.Chtimes(old, long, long); err != nil {
		t.Fatal(err)
	}
	syscall.Sync()
	if n := g.grown(); n < 36<<20 {
		t.Errorf("grown %d bytes after an old 16 MiB file grew by 16 MiB and was set back to 2000: want it counted whole, with the new file (36 MiB)", n)
	}
}

// BenchmarkDiskGuardStart: an episode's start with a Go build cache of 20,000 entries, the
// cache walked (as the episode's own folders are) or only its clock read (as it is now).
func BenchmarkDiskGuardStart(b *testing.B) {
	copyDir, cache := b.TempDir(), b.TempDir()
	for i := range 20000 {
		d := filepath.Join(cache, fmt.Sprintf("%02x", i%256))
		os.MkdirAll(d, 0o755)
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("%x-d", i)), []byte("an entry"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct {
		name         string
		dirs, shared []string
	}{{"walked", []string{copyDir, cache}, nil}, {"by change time", []string{copyDir}, []string{cache}}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := newDiskGuard(DefaultDiskBudget, c.dirs, c.shared); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// On a tmpfs, a hole of a mapped file gets its page at the first fault, a read fault too
// (shared or private mapping), and a read changes no time of the file: an old sparse file
// of the shared cache (truncate -s in an earlier episode, no blocks) fills memory and swap
// through a read-only mapping, with no change time to give it away. A write fault does
// change it (Linux 6.18). So the guard walks a shared folder on tmpfs whole, as it does
// the episode's own folders, and counts it.
func TestDiskGuardSharedTmpfsMmap(t *testing.T) {
	var fsst syscall.Statfs_t
	if err := syscall.Statfs("/dev/shm", &fsst); err != nil || fsst.Type != 0x01021994 {
		t.Skip("no tmpfs at /dev/shm")
	}
	base, err := os.MkdirTemp("/dev/shm", "frognano-disk-")
	if err != nil {
		t.Skip(err)
	}
	defer os.RemoveAll(base)
	copyDir, cache := filepath.Join(base, "copy"), filepath.Join(base, "cache")
	os.Mkdir(copyDir, 0o755)
	os.Mkdir(cache, 0o755)
	const size = 64 << 20
	old := filepath.Join(cache, "00", "old-d") // an earlier episode's: sparse, no blocks
	os.MkdirAll(filepath.Dir(old), 0o755)
	if err := os.WriteFile(old, nil, 0o644); err != nil || os.Truncate(old, size) != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	for _, c := range []struct {
		name         string
		dirs, shared []string
		write        bool
	}{
		{"the episode's own, read", []string{copyDir, cache}, nil, false},
		{"shared, read", []string{copyDir}, []string{cache}, false},
		{"shared, written", []string{copyDir}, []string{cache}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			os.Truncate(old, 0)
			os.Truncate(old, size)
			time.Sleep(50 * time.Millisecond)
			g, err := newDiskGuard(1<<30, c.dirs, c.shared)
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(old, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			prot := syscall.PROT_READ
			if c.write {
				prot |= syscall.PROT_WRITE
			}
			m, err := syscall.Mmap(int(f.Fd()), 0, size, prot, syscall.MAP_SHARED)
			if err != nil {
				t.Fatal(err)
			}
			var sum byte
			for i := 0; i < size; i += 4096 {
				if c.write {
					m[i] = 1
				} else {
					sum += m[i]
				}
			}
			syscall.Munmap(m)
			mmapSink += sum
			var st syscall.Stat_t
			syscall.Stat(old, &st)
			if n := g.grown(); n < size {
				t.Errorf("the old sparse file now takes %d MiB, grown %d MiB: want it counted", st.Blocks*512>>20, n>>20)
			}
		})
	}
}

var mmapSink byte // the mapped pages' bytes, read: a load the compiler may not drop

// What the closer look cannot measure (here a file below PATH_MAX, which lstat refuses) is
// held over any budget, and the model is told what it was.
func TestDiskGuardFailsClosed(t *testing.T) {
	copyDir, cache := t.TempDir(), t.TempDir()
	g, err := newDiskGuard(32<<20, []string{copyDir}, []string{cache})
	if err != nil {
		t.Fatal(err)
	}
	if n := g.grown(); n != 0 {
		t.Fatalf("grown %d bytes before anything was written", n)
	}
	deep := `cd "$1" && n=$(printf 'd%.0s' $(seq 1 250)) && for i in $(seq 1 20); do mkdir "$n" && cd "$n" || exit 1; done && echo x > f`
	if out, err := exec.Command("bash", "-c", deep, "deep", cache).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if n := g.grown(); n != unmeasurable {
		t.Errorf("grown %d bytes with a file the walk cannot reach, want unmeasurable", n)
	}
	if note := g.diskNote(); !strings.Contains(note, "cannot be measured") || !strings.Contains(note, "name too long") {
		t.Errorf("the model is not told what could not be measured: %s", note)
	}
}
