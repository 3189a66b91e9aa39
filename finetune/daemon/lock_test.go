package daemon

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLockExclusive: a second holder is refused (in one process too: flock is per open
// file), Running names the holder's pid, and the lock is free once it is closed.
func TestLockExclusive(t *testing.T) {
	dir := t.TempDir()
	if _, running, err := Running(dir); err != nil || running {
		t.Fatalf("Running before any daemon: %v, %v", running, err)
	}
	d := &daemon{dir: dir}
	if err := d.takeLock(context.Background()); err != nil {
		t.Fatal(err)
	}
	pid, running, err := Running(dir)
	if err != nil || !running || pid != os.Getpid() {
		t.Fatalf("Running: pid %d, %v, %v; want %d, true", pid, running, err, os.Getpid())
	}
	start := time.Now()
	err = (&daemon{dir: dir}).takeLock(context.Background())
	if !errors.Is(err, ErrRunning) || !strings.Contains(err.Error(), "frognano finetune stop") {
		t.Fatalf("a second daemon: %v, want ErrRunning saying what to do", err)
	}
	if took := time.Since(start); took < time.Second {
		t.Errorf("the second daemon gave up after %v: it should try for a while (status takes the lock for an instant)", took)
	}
	d.lock.Close()
	if _, running, _ := Running(dir); running {
		t.Fatal("still running after the lock was closed")
	}
}

// startHolder detaches the re-executed test binary holding dir's lock.
func startHolder(t *testing.T, dir, mode string) int {
	t.Helper()
	pid, already, err := Start(dir, []string{os.Args[0], "-test.run=^$"}, append(os.Environ(), envHold+"="+mode, envDir+"="+dir))
	if err != nil || already {
		t.Fatalf("Start: pid %d, already %v, %v", pid, already, err)
	}
	t.Cleanup(func() { syscall.Kill(-pid, syscall.SIGKILL) })
	return pid
}

// TestStartStop: Start detaches a process in a session of its own that holds the lock; a
// second Start starts nothing and names it; Stop ends it with SIGTERM, or with SIGKILL
// when it ignores SIGTERM past the grace time.
func TestStartStop(t *testing.T) {
	dir := t.TempDir()
	pid := startHolder(t, dir, "term")
	if g, err := syscall.Getpgid(pid); err != nil || g != pid {
		t.Errorf("the daemon's process group %d (%v), want its own, %d", g, err, pid)
	}
	again, already, err := Start(dir, []string{"/bin/false"}, nil)
	if err != nil || !already || again != pid {
		t.Fatalf("second Start: pid %d, already %v, %v; want %d, true", again, already, err, pid)
	}
	s, err := Stop(context.Background(), dir, 10*time.Second)
	if err != nil || s.PID != pid || s.Killed {
		t.Fatalf("Stop: %+v, %v", s, err)
	}
	if _, running, _ := Running(dir); running {
		t.Fatal("running after Stop")
	}
	if s, err := Stop(context.Background(), dir, time.Second); err != nil || s.PID != 0 {
		t.Fatalf("Stop with nothing running: %+v, %v", s, err)
	}

	pid = startHolder(t, dir, "stubborn")
	s, err = Stop(context.Background(), dir, 300*time.Millisecond)
	if err != nil || s.PID != pid || !s.Killed {
		t.Fatalf("Stop of a daemon ignoring SIGTERM: %+v, %v; want killed", s, err)
	}
}

// TestStaleLock: a daemon killed with SIGKILL leaves its pid in the lock file but not the
// lock: the next start is not blocked, whatever that pid now is.
func TestStaleLock(t *testing.T) {
	dir := t.TempDir()
	pid := startHolder(t, dir, "stubborn")
	syscall.Kill(pid, syscall.SIGKILL)
	if !gone(context.Background(), dir, 10*time.Second) {
		t.Fatal("the lock is still held after SIGKILL")
	}
	if got := readPID(filepath.Join(dir, lockFile)); got != pid {
		t.Fatalf("the lock file says pid %d, want the dead %d (the case this test is about)", got, pid)
	}
	again := startHolder(t, dir, "term")
	if p, running, _ := Running(dir); !running || p != again {
		t.Fatalf("after a restart: pid %d running %v, want %d", p, running, again)
	}
	if _, err := Stop(context.Background(), dir, 10*time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestStartFails: a daemon that exits at once is reported with its log's end.
func TestStartFails(t *testing.T) {
	dir := t.TempDir()
	_, _, err := Start(dir, []string{"/bin/sh", "-c", "echo the settings are wrong >&2; exit 3"}, nil)
	if err == nil || !strings.Contains(err.Error(), "the settings are wrong") {
		t.Fatalf("Start: %v, want the log's end", err)
	}
}

// TestExclusive: a foreground step and a daemon exclude each other.
func TestExclusive(t *testing.T) {
	dir := t.TempDir()
	release, err := Exclusive(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Exclusive(context.Background(), dir); !errors.Is(err, ErrRunning) {
		t.Fatalf("a second step: %v, want ErrRunning", err)
	}
	release()
	pid := startHolder(t, dir, "term")
	if _, err := Exclusive(context.Background(), dir); !errors.Is(err, ErrRunning) || !strings.Contains(err.Error(), strconv.Itoa(pid)) {
		t.Fatalf("a step while the daemon runs: %v, want ErrRunning naming pid %d", err, pid)
	}
	Stop(context.Background(), dir, 10*time.Second)
}
