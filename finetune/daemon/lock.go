package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// errHeld says another process holds a lock.
var errHeld = errors.New("held by another process")

// tryLock takes path's exclusive flock without waiting (errHeld when another open file
// holds it). flock, not a pid file: the kernel drops it when its holder dies, however it
// dies, so a kill -9 never leaves a lock that blocks the next start.
func tryLock(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errHeld
		}
		return nil, err
	}
	return f, nil
}

// lockWait takes path's lock, trying every poll until ctx ends; waiting (when not nil)
// hears the holder's pid each time the lock is found taken.
func lockWait(ctx context.Context, path string, poll time.Duration, waiting func(pid int)) (*os.File, error) {
	for {
		f, err := tryLock(path)
		if !errors.Is(err, errHeld) {
			return f, err
		}
		if waiting != nil {
			waiting(readPID(path))
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(poll):
		}
	}
}

// writePID records the holder's pid in a lock file it holds, for stop and status.
func writePID(f *os.File) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return err
}

// readPID is the pid written in a lock file (0 when none).
func readPID(path string) int {
	b, _ := os.ReadFile(path)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// Running reports whether a daemon holds dir's lock, and its pid (0 when it has not
// written it yet). It takes the lock for an instant to find out.
func Running(dir string) (pid int, running bool, err error) {
	p := filepath.Join(dir, lockFile)
	if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
		return 0, false, nil
	}
	f, err := tryLock(p)
	switch {
	case errors.Is(err, errHeld):
		return readPID(p), true, nil
	case err != nil:
		return 0, false, fmt.Errorf("daemon lock %s: %w", p, err)
	}
	f.Close()
	return 0, false, nil
}

// Exclusive takes dir's daemon lock for a run in the foreground (`frognano finetune
// step`), so that it and a daemon never run the loop of one repository at once; ErrRunning
// when a daemon (or another step) runs.
func Exclusive(ctx context.Context, dir string) (release func(), err error) {
	d := &daemon{dir: dir}
	if err := d.takeLock(ctx); err != nil {
		return nil, err
	}
	return func() { d.lock.Close() }, nil
}
