package agent

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Other programs' writes on the same disk do not count against an episode's budget; its
// own do, and stop the command.
func TestDiskGuardCountsOnlyTheEpisode(t *testing.T) {
	copyDir, elsewhere := t.TempDir(), t.TempDir()
	g, err := newDiskGuard(32<<20, copyDir)
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
	g, err := newDiskGuard(32<<20, copyDir)
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
