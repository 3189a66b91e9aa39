package agent

import (
	"context"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
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
