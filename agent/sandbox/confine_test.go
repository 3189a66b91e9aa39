package sandbox

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestWritesConfinedToCopy(t *testing.T) {
	for _, m := range allModes {
		t.Run(string(m), func(t *testing.T) { testWritesConfined(t, m) })
	}
}

func testWritesConfined(t *testing.T, m Mode) {
	// Not under /tmp, which is a private tmpfs inside: these must be visible there. Open to
	// all, so that only the read-only mount stops the write (commands may run as nobody).
	outside, extra := varTmpDir(t), varTmpDir(t)
	os.Chmod(outside, 0o777)
	r, err := NewRunner(context.Background(), Options{Mode: m, Writable: []string{extra}})
	if err != nil {
		skipOrFail(t, m, err)
	}
	defer r.Close()
	if !r.Isolation().WriteConfined {
		if m == ModeBwrap {
			t.Fatalf("bwrap mode without write confinement: %s", r.Isolation().Summary())
		}
		t.Skipf("%s mode does not confine writes, as its Isolation says: %s", m, r.Isolation().Why)
	}
	copyDir := t.TempDir()
	cmd := fmt.Sprintf(`echo x > %s/escaped; echo "outside=$?"; echo x > inside && echo x > %s/cache && echo x > /tmp/scratch && echo ok`, outside, extra)
	o, err := r.Run(context.Background(), Cmd{Dir: copyDir, Command: cmd, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(o.Stdout, "outside=1") || !strings.Contains(o.Stderr, "Read-only file system") {
		t.Errorf("write outside the copy did not fail: stdout %q stderr %q", o.Stdout, o.Stderr)
	}
	if _, err := os.Stat(filepath.Join(outside, "escaped")); err == nil {
		t.Errorf("the command wrote %s/escaped", outside)
	}
	if !strings.HasSuffix(o.Stdout, "ok\n") {
		t.Errorf("writes to the copy, the writable directory and /tmp failed: stdout %q stderr %q", o.Stdout, o.Stderr)
	}
	for _, p := range []string{filepath.Join(copyDir, "inside"), filepath.Join(extra, "cache")} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("the write to %s is not there: %v", p, err)
		}
	}
	if _, err := os.Stat("/tmp/scratch"); err == nil {
		t.Errorf("the sandbox's /tmp is the machine's")
	}
}

func varTmpDir(t *testing.T) string {
	d, err := os.MkdirTemp("/var/tmp", "frognano-test-")
	if err != nil {
		t.Skipf("no directory outside /tmp to test writes with: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// A listener in the test's own network namespace must be unreachable from the sandbox,
// and reachable without isolation (which shows the probe really connects).
func TestNoNetwork(t *testing.T) {
	eachMode(t, func(t *testing.T, r *Runner) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		var accepted atomic.Int32
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				accepted.Add(1)
				c.Close()
			}
		}()
		port := ln.Addr().(*net.TCPAddr).Port
		o := run(t, r, fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && echo connected", port), 10*time.Second)
		connected := strings.Contains(o.Stdout, "connected")
		time.Sleep(50 * time.Millisecond) // let Accept count a connection that made it
		if r.Isolation().NoNetwork && (connected || accepted.Load() > 0 || o.ExitCode == 0) {
			t.Errorf("%s: the command reached the loopback listener (stdout %q, exit %d, accepted %d)", r.Isolation().Mode, o.Stdout, o.ExitCode, accepted.Load())
		}
		if !r.Isolation().NoNetwork && !connected {
			t.Errorf("without isolation the probe should connect: stdout %q stderr %q", o.Stdout, o.Stderr)
		}
	})
}

// The bomb runs only where a process limit was found that binds this user: uncontained it
// would take the machine down. It is bounded in time besides.
func TestForkBombContained(t *testing.T) {
	const limit = 64
	r := newRunner(t, "", &Limits{Processes: limit})
	if r.Isolation().ProcessLimit == "" {
		t.Skipf("no process limit works here, so no fork bomb: %s", r.Isolation().Why)
	}
	m := marker() // the bomb's processes carry it as an argument of bash
	var peak atomic.Int32
	done := make(chan struct{})
	go func() {
		for {
			if n := int32(len(withArg(m))); n > peak.Load() {
				peak.Store(n)
			}
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	o := run(t, r, `timeout 5 bash -c 'b(){ b | b & }; b; sleep 2' `+m+`; echo contained`, 30*time.Second)
	close(done)
	if !strings.Contains(o.Stdout, "contained") || o.TimedOut {
		t.Errorf("the shell did not survive the bomb: stdout %q timedOut %v stderr %.300q", o.Stdout, o.TimedOut, o.Stderr)
	}
	if !strings.Contains(o.Stderr, "fork") {
		t.Errorf("the bomb never hit the limit (no fork error): stderr %.300q", o.Stderr)
	}
	if strings.Contains(r.Isolation().ProcessLimit, "pids.max") && !o.ProcessCap {
		t.Error("Output.ProcessCap is not set though the pids cgroup refused forks")
	}
	if quiet := run(t, r, "true", 10*time.Second); quiet.ProcessCap {
		t.Error("Output.ProcessCap set for a command that forked nothing")
	}
	t.Logf("peak %d, took %v, stderr %.200q", peak.Load(), o.Duration, o.Stderr)
	if p := peak.Load(); p > limit || p < limit/2 {
		t.Errorf("peak of %d bomb processes; want up to the limit, %d", p, limit)
	}
	if left := withArg(m); len(left) > 0 {
		t.Errorf("bomb processes left: %v", left)
	}
}

func TestEnvironmentScrubbed(t *testing.T) {
	t.Setenv("FROGNANO_SECRET_TOKEN", "s3cr3t-frognano")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "s3cr3t-aws")
	t.Setenv("LC_TIME", "C")
	eachMode(t, func(t *testing.T, r *Runner) {
		o := run(t, r, "env", 10*time.Second)
		for _, leak := range []string{"FROGNANO_SECRET_TOKEN", "AWS_SECRET_ACCESS_KEY", "s3cr3t"} {
			if strings.Contains(o.Stdout, leak) {
				t.Errorf("the command sees %s", leak)
			}
		}
		for _, want := range []string{"HOME=" + r.home + "\n", "TERM=dumb\n", "GOPROXY=off\n", "GOTOOLCHAIN=local\n", "LC_TIME=C\n", "PATH="} {
			if !strings.Contains(o.Stdout, want) {
				t.Errorf("env lacks %q:\n%s", want, o.Stdout)
			}
		}
	})
}

// The Go toolchain works offline inside, with the build cache writable.
func TestGoToolchain(t *testing.T) {
	r := newRunner(t, "", nil)
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":  "module example.com/hello\n\ngo 1.21\n",
		"main.go": "package main\n\nfunc main() { println(\"hello\") }\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	o, err := r.Run(context.Background(), Cmd{Dir: dir, Command: "go version && go env GOPROXY && go run .", Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if o.ExitCode != 0 || !strings.HasPrefix(o.Stdout, "go version go1.") || !strings.Contains(o.Stdout, "off\n") || !strings.Contains(o.Stderr, "hello") {
		t.Errorf("exit %d stdout %q stderr %q", o.ExitCode, o.Stdout, o.Stderr)
	}
}

// The private /tmp is a tmpfs in memory: under bubblewrap 0.5+ it is capped, so a command
// cannot fill the machine's memory through it, and what fits is written normally.
func TestTmpIsCapped(t *testing.T) {
	r := newRunner(t, ModeBwrap, &Limits{Tmp: 32 << 20})
	if !slices.Contains(r.Isolation().prefix, "--size") {
		t.Skipf("this bubblewrap cannot cap /tmp: %s", r.Isolation().Why)
	}
	o := run(t, r, `head -c 20M /dev/zero > /tmp/a && echo first-ok; head -c 20M /dev/zero > /tmp/b; echo "second: $?"; df -k /tmp | tail -1`, 30*time.Second)
	if !strings.Contains(o.Stdout, "first-ok") || !strings.Contains(o.Stdout, "second: 1") || !strings.Contains(o.Stderr, "No space left") {
		t.Errorf("a 32 MiB /tmp must take 20 MiB and refuse 20 more: stdout %q stderr %q", o.Stdout, o.Stderr)
	}
	if o := run(t, newRunner(t, ModeBwrap, nil), `df -k --output=size /tmp | tail -1`, 30*time.Second); strings.TrimSpace(o.Stdout) != "2097152" {
		t.Errorf("the default /tmp is %q KiB, want 2 GiB", o.Stdout)
	}
	// /dev/shm likewise, and /dev itself is read-only while its devices work.
	o = run(t, r, `head -c 40M /dev/zero > /dev/shm/big; echo "shm: $?"; echo x > /dev/new; echo "dev: $?"; echo ok > /dev/null && echo null-ok`, 30*time.Second)
	if !strings.Contains(o.Stdout, "shm: 1") || !strings.Contains(o.Stdout, "dev: 1") || !strings.Contains(o.Stdout, "null-ok") {
		t.Errorf("/dev/shm must be capped and /dev read-only: stdout %q stderr %q", o.Stdout, o.Stderr)
	}
}

// Commands build with a Go cache of their own: the user's build cache and module cache
// are read-only to them, since the user's next build would trust what a command planted
// there (a module's source, a compiled object, a cached test result).
func TestGoCachesOfTheirOwn(t *testing.T) {
	user := goEnvironmentCached(context.Background())
	if user["GOCACHE"] == "" || user["GOMODCACHE"] == "" {
		t.Skip("go is not installed")
	}
	own := filepath.Join(t.TempDir(), "go-build")
	r, err := NewRunner(context.Background(), Options{Mode: ModeBwrap, GoCache: own})
	if err != nil {
		skipOrFail(t, ModeBwrap, err)
	}
	defer r.Close()
	os.MkdirAll(user["GOMODCACHE"], 0o755)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/hello\n\ngo 1.21\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() { println(\"hello\") }\n"), 0o644)
	cmd := fmt.Sprintf(`go env GOCACHE; go build -o /tmp/hello . && echo built
touch '%s/frognano-probe' && echo WROTE-MODCACHE
touch '%s/frognano-probe' && echo WROTE-USER-GOCACHE
true`, user["GOMODCACHE"], user["GOCACHE"])
	o, err := r.Run(context.Background(), Cmd{Dir: dir, Command: cmd, Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(o.Stdout, own+"\n") || !strings.Contains(o.Stdout, "built") {
		t.Errorf("GOCACHE must be the commands' own and builds must work: stdout %q stderr %q", o.Stdout, o.Stderr)
	}
	if strings.Contains(o.Stdout, "WROTE") {
		t.Errorf("a command wrote into the user's Go caches: %q", o.Stdout)
	}
	if entries, _ := os.ReadDir(own); len(entries) == 0 {
		t.Error("the commands' own cache was not used")
	}
}

// Options.ReadOnly brings paths back read-only, even under the private /tmp; a missing one
// is an error at the start.
func TestReadOnlyPaths(t *testing.T) {
	objects := t.TempDir() // under /tmp, which is the sandbox's own tmpfs otherwise
	file := filepath.Join(objects, "pack")
	single := filepath.Join(t.TempDir(), "HEAD")
	if err := os.WriteFile(single, []byte("ref: main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, m := range allModes {
		t.Run(string(m), func(t *testing.T) {
			if err := os.WriteFile(file, []byte("objects here\n"), 0o644); err != nil { // unshare's writes are not confined
				t.Fatal(err)
			}
			r, err := NewRunner(context.Background(), Options{Mode: m, ReadOnly: []string{objects, single}})
			if err != nil {
				skipOrFail(t, m, err)
			}
			defer r.Close()
			o := run(t, r, fmt.Sprintf(`cat %s %s; echo x > %s/new; echo "write=$?"; echo x >> %s; echo "append=$?"`, file, single, objects, file), 10*time.Second)
			if !strings.Contains(o.Stdout, "objects here\nref: main\n") {
				t.Errorf("the read-only paths are not readable: stdout %q stderr %q", o.Stdout, o.Stderr)
			}
			if r.Isolation().WriteConfined && (!strings.Contains(o.Stdout, "write=1") || !strings.Contains(o.Stdout, "append=1")) {
				t.Errorf("the read-only paths are writable: stdout %q stderr %q", o.Stdout, o.Stderr)
			}
		})
	}
	if _, err := NewRunner(context.Background(), Options{ReadOnly: []string{filepath.Join(objects, "missing")}}); err == nil {
		t.Error("a missing read-only path must be an error")
	}
}
