package sandbox

import (
	"context"
	"errors"
	"testing"
	"time"
)

// canKillEscapees: a process that left the group (setsid) can only be found through a PID
// namespace or the command's cgroup.
func canKillEscapees(t *testing.T, r *Runner) {
	if !r.Isolation().PIDNamespace && r.iso.cgroup == "" {
		t.Skipf("%s mode without a pids cgroup cannot find processes that called setsid: %s", r.Isolation().Mode, r.Isolation().Why)
	}
}

func TestBackgroundProcessesDie(t *testing.T) {
	eachMode(t, func(t *testing.T, r *Runner) {
		canKillEscapees(t, r)
		m := marker()
		o := run(t, r, "sleep "+m+" & setsid sleep "+m+" & (sleep "+m+" &) ; nohup sleep "+m+" >/dev/null 2>&1 & echo started", 10*time.Second)
		if o.Stdout != "started\n" || o.ExitCode != 0 {
			t.Fatalf("exit %d stdout %q stderr %q", o.ExitCode, o.Stdout, o.Stderr)
		}
		if left := withArg(m); len(left) > 0 {
			t.Errorf("background sleeps outlived Run: pids %v", left)
		}
	})
}

func TestCancelKillsEverything(t *testing.T) {
	eachMode(t, func(t *testing.T, r *Runner) {
		canKillEscapees(t, r)
		m := marker()
		ctx, cancel := context.WithCancel(context.Background())
		cancelledAt := make(chan time.Time, 1)
		go func() {
			time.Sleep(500 * time.Millisecond)
			cancelledAt <- time.Now()
			cancel()
		}()
		_, err := r.Run(ctx, Cmd{Dir: t.TempDir(), Command: "sleep " + m + " & setsid sleep " + m + " & sleep " + m, Timeout: time.Minute})
		returned := time.Now()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err %v; want context.Canceled", err)
		}
		if d := returned.Sub(<-cancelledAt); d > time.Second {
			t.Errorf("returned %v after the cancel; want within 1s", d)
		}
		if left := withArg(m); len(left) > 0 {
			t.Errorf("sleeps outlived the cancel: pids %v", left)
		}
	})
}
