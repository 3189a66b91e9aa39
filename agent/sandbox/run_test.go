package sandbox

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestExitCodesAndStreams(t *testing.T) {
	cases := []struct {
		command        string
		code           int
		stdout, stderr string
	}{
		{"echo out; echo err >&2", 0, "out\n", "err\n"},
		{"echo partial; exit 3", 3, "partial\n", ""},
		{"no-such-command-frognano", 127, "", "no-such-command-frognano: command not found"},
		{"kill -9 $$", 128 + 9, "", ""},
		{"kill -TERM $$", 128 + 15, "", ""},
	}
	eachMode(t, func(t *testing.T, r *Runner) {
		for _, c := range cases {
			o := run(t, r, c.command, 10*time.Second)
			if o.ExitCode != c.code || o.Stdout != c.stdout || !strings.Contains(o.Stderr, c.stderr) || o.TimedOut {
				t.Errorf("%q: got exit %d stdout %q stderr %q timedOut %v; want exit %d stdout %q stderr containing %q",
					c.command, o.ExitCode, o.Stdout, o.Stderr, o.TimedOut, c.code, c.stdout, c.stderr)
			}
		}
	})
}

func TestOutputCappedAndCounted(t *testing.T) {
	r := newRunner(t, "", &Limits{Output: 1 << 20})
	o := run(t, r, "head -c 10000000 /dev/zero; head -c 3000000 /dev/zero >&2", 30*time.Second)
	if o.ExitCode != 0 || o.Flooded {
		t.Fatalf("exit %d, flooded %v; want 0, false", o.ExitCode, o.Flooded)
	}
	if len(o.Stdout) != 1<<20 || o.StdoutDropped != 10000000-(1<<20) {
		t.Errorf("stdout kept %d dropped %d; want %d and %d", len(o.Stdout), o.StdoutDropped, 1<<20, 10000000-(1<<20))
	}
	if len(o.Stderr) != 1<<20 || o.StderrDropped != 3000000-(1<<20) {
		t.Errorf("stderr kept %d dropped %d; want %d and %d", len(o.Stderr), o.StderrDropped, 1<<20, 3000000-(1<<20))
	}
}

// A command printing gigabytes is killed once past 64 MiB, without blocking on the pipe.
func TestOutputFloodKilled(t *testing.T) {
	r := newRunner(t, "", nil)
	o := run(t, r, "yes | head -c 3G", time.Minute)
	if !o.Flooded || o.TimedOut {
		t.Errorf("flooded %v timedOut %v; want true, false", o.Flooded, o.TimedOut)
	}
	if len(o.Stdout) != DefaultLimits().Output || o.StdoutDropped < floodLimit-int64(DefaultLimits().Output) {
		t.Errorf("stdout kept %d dropped %d; want %d kept and at least %d dropped", len(o.Stdout), o.StdoutDropped, DefaultLimits().Output, floodLimit-DefaultLimits().Output)
	}
	if o.Duration > 20*time.Second {
		t.Errorf("took %v to stop a flood", o.Duration)
	}
}

func TestTimeout(t *testing.T) {
	eachMode(t, func(t *testing.T, r *Runner) {
		m := marker()
		start := time.Now()
		o := run(t, r, "echo before; sleep "+m, time.Second)
		if !o.TimedOut || o.ExitCode != 124 || o.Stdout != "before\n" {
			t.Errorf("timedOut %v exit %d stdout %q; want true, 124, %q", o.TimedOut, o.ExitCode, o.Stdout, "before\n")
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("returned after %v; want within timeout+1s", d)
		}
		if left := withArg(m); len(left) > 0 {
			t.Errorf("sleep still running after the timeout: pids %v", left)
		}
	})
}

func TestCloseRemovesHome(t *testing.T) {
	r, err := NewRunner(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	o := run(t, r, `touch "$HOME/mark" && echo "$HOME"`, 10*time.Second)
	home := strings.TrimSpace(o.Stdout)
	if o.ExitCode != 0 || !isDir(home) {
		t.Fatalf("exit %d, HOME %q not a directory; stderr %q", o.ExitCode, home, o.Stderr)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if isDir(home) {
		t.Errorf("private HOME %s still exists after Close", home)
	}
}

func BenchmarkRunTrue(b *testing.B) {
	r := newRunner(b, "", nil)
	dir := b.TempDir()
	for b.Loop() {
		o, err := r.Run(context.Background(), Cmd{Dir: dir, Command: "true", Timeout: 10 * time.Second})
		if err != nil || o.ExitCode != 0 {
			b.Fatalf("exit %d, err %v, stderr %q", o.ExitCode, err, o.Stderr)
		}
	}
}

// BenchmarkArgv is the per-command look-up: the secrets that exist now, the allowlist's binds
// and the mount order.
func BenchmarkArgv(b *testing.B) {
	r := newRunner(b, "", nil)
	dir := b.TempDir()
	for b.Loop() {
		r.argv(dir, "true", nil)
	}
}

// The limits hold in every mode, hard (a command cannot raise them back), whichever way they
// are applied (the cgroup's shell, or prlimit).
func TestLimitsApplied(t *testing.T) {
	for _, m := range allModes {
		t.Run(string(m), func(t *testing.T) {
			r := newRunner(t, m, &Limits{CPU: 2 * time.Second, FileSize: 1 << 20, Memory: 1 << 30})
			o := run(t, r, `echo $(ulimit -Ht) $(ulimit -St) $(ulimit -Hf) $(ulimit -Hv); ulimit -t 100 2>/dev/null && echo RAISED; head -c 2M /dev/zero > big; echo "write: $?"`, 10*time.Second)
			if !strings.HasPrefix(o.Stdout, "2 2 1024 1048576\nwrite: ") || strings.Contains(o.Stdout, "write: 0") || strings.Contains(o.Stdout, "RAISED") {
				t.Errorf("want CPU 2 s, 1 MiB files, 1 GiB of address space, hard: stdout %q stderr %q", o.Stdout, o.Stderr)
			}
		})
	}
}
