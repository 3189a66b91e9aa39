package sandbox

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"testing"
	"time"
)

// allModes are tried by the tests that hold in every mode; a mode this machine lacks is
// skipped with the reason.
var allModes = []Mode{ModeBwrap, ModeUnshare, ModeNone}

// newRunner starts a Runner in mode (the strongest when empty), closed at the end of t.
func newRunner(t testing.TB, mode Mode, limits *Limits) *Runner {
	t.Helper()
	r, err := NewRunner(context.Background(), Options{Mode: mode, Limits: limits})
	if err != nil {
		if mode != "" {
			skipOrFail(t, mode, err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	})
	return r
}

// eachMode runs f as a subtest per mode.
func eachMode(t *testing.T, f func(t *testing.T, r *Runner)) {
	for _, m := range allModes {
		t.Run(string(m), func(t *testing.T) { f(t, newRunner(t, m, nil)) })
	}
}

// run runs command in a fresh copy directory and fails t if it could not start.
func run(t testing.TB, r *Runner, command string, timeout time.Duration) Output {
	t.Helper()
	o, err := r.Run(context.Background(), Cmd{Dir: t.TempDir(), Command: command, Timeout: timeout})
	if err != nil {
		t.Fatalf("Run(%q): %v", command, err)
	}
	return o
}

// marker is a sleep duration no other process on the machine uses, so that /proc tells the
// test's sleeps from anyone else's.
func marker() string {
	return "300." + strconv.FormatInt(time.Now().UnixNano()%1e9, 10)
}

// withArg lists the live processes whose command line holds arg (zombies have none).
func withArg(arg string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		for _, a := range bytes.Split(cmdline, []byte{0}) {
			if string(a) == arg {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// skipOrFail skips t because mode m does not work here (err), except bubblewrap under CI
// (CI set, as CI services do): a CI machine without user namespaces must not pass with no
// confinement tested. unshare and none may legitimately be missing.
func skipOrFail(t testing.TB, m Mode, err error) {
	t.Helper()
	if (m == ModeBwrap || m == "") && os.Getenv("CI") != "" {
		t.Fatalf("CI is set, and mode %s does not work here: %v", m, err)
	}
	t.Skipf("mode %s is not available here: %v", m, err)
}
