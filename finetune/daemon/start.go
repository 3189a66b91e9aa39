package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// RunStep is the hidden `frognano finetune` step that is the daemon itself: what `frognano
// finetune start` and the language server's Start fine-tuning detach (see Argv).
const RunStep = "daemon-run"

// Argv is the command line of repo's daemon run by the frognano binary at frognano.
func Argv(frognano, repo string) []string {
	return []string{frognano, "finetune", RunStep, "--repo", repo}
}

// Start detaches argv (frognano's hidden `finetune daemon-run`, or a test binary) as the
// daemon of dir: a new session, so that it outlives the terminal and its process group
// is its own, with stdin from /dev/null and its output appended to daemon.log. It returns
// once the new process holds the daemon's lock; when a daemon already runs it returns
// that one's pid and already true, and starts nothing.
func Start(dir string, argv, env []string) (pid int, already bool, err error) {
	if pid, running, err := Running(dir); err != nil || running {
		return pid, running, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, false, err
	}
	logPath := filepath.Join(dir, LogFile)
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, false, err
	}
	defer log.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, false, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }() // reaps it if it ends while this process lives
	deadline := time.After(30 * time.Second)
	for {
		select {
		case err := <-exited:
			// Another start may have won the race for the lock.
			if pid, running, _ := Running(dir); running {
				return pid, true, nil
			}
			return 0, false, fmt.Errorf("the daemon exited at once (%v): %s", err, tail(logPath, 800))
		case <-deadline:
			return cmd.Process.Pid, false, fmt.Errorf("the daemon (pid %d) did not take its lock within 30s; see %s", cmd.Process.Pid, logPath)
		case <-time.After(50 * time.Millisecond):
		}
		if pid, running, _ := Running(dir); running && pid == cmd.Process.Pid {
			return pid, false, nil
		}
	}
}

// tail is the end of a file, for an error message.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	s := strings.TrimSpace(string(b))
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}

// Stopped is what Stop did.
type Stopped struct {
	// PID is the daemon's (0 when none ran).
	PID int
	// Killed says it did not end within the grace time after SIGTERM and got SIGKILL.
	Killed bool
	Took   time.Duration
}

// Stop ends dir's daemon: SIGTERM to its process group (the daemon cancels the running
// iteration, which resumes at the next start), then, if it still holds its lock after
// grace, SIGKILL. It returns once the lock is free, which is when the process is gone.
func Stop(ctx context.Context, dir string, grace time.Duration) (Stopped, error) {
	start := time.Now()
	var pid int
	for {
		p, running, err := Running(dir)
		if err != nil || !running {
			return Stopped{}, err
		}
		if pid = p; pid > 0 {
			break
		}
		time.Sleep(50 * time.Millisecond) // a daemon between taking its lock and writing its pid
		if time.Since(start) > 5*time.Second {
			return Stopped{}, fmt.Errorf("a daemon holds %s but wrote no pid; end it by hand", filepath.Join(dir, lockFile))
		}
	}
	s := Stopped{PID: pid}
	// The daemon leads its own session (Start), so its group is its pid.
	if err := syscall.Kill(-pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return s, fmt.Errorf("SIGTERM to the daemon's process group %d: %w", pid, err)
	}
	if gone(ctx, dir, grace) {
		s.Took = time.Since(start)
		return s, nil
	}
	s.Killed = true
	syscall.Kill(-pid, syscall.SIGKILL)
	if !gone(ctx, dir, 10*time.Second) {
		return s, fmt.Errorf("the daemon (pid %d) still holds its lock after SIGKILL; see `ps -o pid,stat,cmd -g %d`", pid, pid)
	}
	s.Took = time.Since(start)
	return s, nil
}

// gone waits up to d for dir's lock to be free.
func gone(ctx context.Context, dir string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if _, running, err := Running(dir); err == nil && !running {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}
