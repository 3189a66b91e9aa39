package gctune

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, Max},
		{1 << 20, Max},
		{Headroom / 4, Max},
		{Headroom / 2, 200},
		{Headroom, Min},
		{4 * Headroom, Min},
	} {
		if got := Percent(c.live); got != c.want {
			t.Errorf("Percent(%d) = %d, want %d", c.live, got, c.want)
		}
	}
}

// gcPercent reads GOGC (SetGCPercent returns the old value; it is put back at once).
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// waitPercent collects until GOGC is want, for up to 10 s: the tuner sets it on the
// runtime's cleanup goroutine after a collection.
func waitPercent(t *testing.T, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for gcPercent() != want {
		if time.Now().After(deadline) {
			t.Fatalf("GOGC is %d, want %d", gcPercent(), want)
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}

func TestStartFollowsTheLiveHeap(t *testing.T) {
	debug.SetGCPercent(100)
	stop := Start(func(string) string { return "" })
	if got := gcPercent(); got != Max {
		t.Fatalf("GOGC after Start with a small heap = %d, want %d", got, Max)
	}
	big := make([]byte, 2*Headroom) // live across the collections below
	for i := range big {
		big[i] = byte(i)
	}
	waitPercent(t, Min)
	runtime.KeepAlive(big)
	big = nil
	waitPercent(t, Max)
	stop()
	if got := gcPercent(); got != 100 {
		t.Errorf("GOGC after stop = %d, want the 100 Start found", got)
	}
	runtime.GC()
	time.Sleep(20 * time.Millisecond)
	if got := gcPercent(); got != 100 {
		t.Errorf("GOGC after a collection past stop = %d, want 100", got)
	}
}

func TestUsersGOGCWins(t *testing.T) {
	debug.SetGCPercent(150)
	defer debug.SetGCPercent(100)
	stop := Start(func(k string) string {
		if k == "GOGC" {
			return "150"
		}
		return ""
	})
	defer stop()
	runtime.GC()
	time.Sleep(20 * time.Millisecond)
	if got := gcPercent(); got != 150 {
		t.Errorf("GOGC = %d with the user's GOGC=150 set, want 150", got)
	}
}
