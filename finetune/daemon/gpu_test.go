package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frognano/frognano/finetune/loop"
)

func TestParseApps(t *testing.T) {
	apps, err := parseApps("1234, /usr/bin/python3, 2048\n 77, /opt/a,b/runner, [N/A]\nNo running processes found\n\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []App{{1234, "/usr/bin/python3", 2048}, {77, "/opt/a,b/runner", 0}}
	if fmt.Sprint(apps) != fmt.Sprint(want) {
		t.Fatalf("parseApps: %v, want %v", apps, want)
	}
	if _, err := parseApps("garbage\n"); err == nil {
		t.Fatal("a line that is not CSV: want an error")
	}
}

// TestOthers: the daemon does not yield to itself, to its children (the trainer), or to
// Ollama (whose runner keeps the rollouts' model loaded); it yields to anything else.
func TestOthers(t *testing.T) {
	child := exec.Command("sleep", "30")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	apps := []App{
		{os.Getpid(), "/tmp/go-build/daemon.test", 10},
		{child.Process.Pid, "/venv/bin/python3", 4000},
		{4000001, "/usr/local/bin/ollama", 3000},
		{4000002, "ollama_llama_server", 3000},
		{4000003, "/usr/bin/python3 train_other.py", 9000},
		{1, "/sbin/init", 1},
	}
	got := Others(apps, os.Getpid())
	if want := []App{apps[4], apps[5]}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Others: %v, want %v", got, want)
	}
}

// fakeSMI puts a fake nvidia-smi first on PATH: it checks that it is asked for the
// compute processes and prints the returned file, which the test rewrites. This machine
// has no GPU: the decision logic is what is tested, with nvidia-smi's real output format.
func fakeSMI(t *testing.T) (apps string) {
	bin := t.TempDir()
	apps = filepath.Join(bin, "apps.csv")
	os.WriteFile(apps, nil, 0o644)
	script := fmt.Sprintf("#!/bin/sh\n[ \"$1 $2\" = \"%s\" ] || { echo \"unexpected arguments: $*\" >&2; exit 2; }\ncat %q\n", strings.Join(smiArgs, " "), apps)
	if err := os.WriteFile(filepath.Join(bin, "nvidia-smi"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return apps
}

// TestYield: before training the daemon waits for the machine's GPU lock and for the other
// programs on the GPU to finish; while training it cancels the iteration (errYield) when
// one starts; the lock is released when the phase ends. Other phases never wait for it.
func TestYield(t *testing.T) {
	apps := fakeSMI(t)
	smi := FindSMI()
	if filepath.Base(smi) != "nvidia-smi" || !strings.HasPrefix(smi, filepath.Dir(apps)) {
		t.Fatalf("FindSMI: %q, want the fake", smi)
	}
	dir := t.TempDir()
	var logMu sync.Mutex
	d := &daemon{dir: dir, o: Options{SMI: smi, GPUPoll: 20 * time.Millisecond, GPULock: filepath.Join(dir, "gpu.lock"),
		Logf: func(f string, a ...any) { logMu.Lock(); defer logMu.Unlock(); t.Logf(f, a...) }}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if leave, err := d.enter(ctx, loop.PhaseRollouts); err != nil || leave != nil {
		t.Fatalf("rollouts: %v, leave %v; want no wait, nothing to release", err, leave != nil)
	}

	other, err := tryLock(d.o.GPULock) // another frognano trainer
	if err != nil {
		t.Fatal(err)
	}
	writePID(other)
	os.WriteFile(apps, []byte("4000003, /usr/bin/python3, 9000\n"), 0o644)
	entered := make(chan func(), 1)
	go func() {
		leave, err := d.enter(ctx, loop.PhaseTrain)
		if err != nil {
			t.Error(err)
		}
		entered <- leave
	}()
	waitFor(t, d, "for the GPU lock")
	other.Close()
	waitFor(t, d, "yielding the GPU to pid 4000003 (/usr/bin/python3, 9000 MiB)")
	select {
	case <-entered:
		t.Fatal("training began while another program used the GPU")
	case <-time.After(100 * time.Millisecond):
	}
	os.WriteFile(apps, []byte(fmt.Sprintf("%d, /venv/bin/python3, 100\n1, /usr/local/bin/ollama, 3000\n", os.Getpid())), 0o644)
	var leave func()
	select {
	case leave = <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("training did not begin once the GPU was free")
	}
	if _, err := tryLock(d.o.GPULock); !errors.Is(err, errHeld) {
		t.Fatalf("the GPU lock while training: %v, want held", err)
	}

	stepCtx, stepCancel := context.WithCancelCause(ctx)
	d.mu.Lock()
	d.cancel = stepCancel
	d.mu.Unlock()
	os.WriteFile(apps, []byte("4000004, /usr/bin/blender, 6000\n"), 0o644)
	select {
	case <-stepCtx.Done():
		if !errors.Is(context.Cause(stepCtx), errYield) {
			t.Fatalf("cancelled with %v, want errYield", context.Cause(stepCtx))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("training was not cancelled when another program took the GPU")
	}
	leave()
	if f, err := tryLock(d.o.GPULock); err != nil {
		t.Fatalf("the GPU lock after the phase: %v, want free", err)
	} else {
		f.Close()
	}
	if d.st.GPUSeconds <= 0 {
		t.Errorf("GPU seconds %v after a training phase", d.st.GPUSeconds)
	}
}

// TestNoSMI: without nvidia-smi the daemon trains at once and says that yielding is off.
func TestNoSMI(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	if FindSMI() != "" {
		t.Fatal("FindSMI found one on an empty PATH")
	}
	dir := t.TempDir()
	d := &daemon{dir: dir, o: Options{GPULock: filepath.Join(dir, "gpu.lock"), Logf: t.Logf}}
	d.begin()
	if !strings.Contains(d.st.GPU, "yielding to other programs on the GPU is off") {
		t.Fatalf("status GPU %q", d.st.GPU)
	}
	leave, err := d.enter(context.Background(), loop.PhaseTrain)
	if err != nil {
		t.Fatal(err)
	}
	leave()
}

// waitFor waits until the daemon's status says it waits for want.
func waitFor(t *testing.T, d *daemon, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		d.mu.Lock()
		w := d.st.Waiting
		d.mu.Unlock()
		if strings.Contains(w, want) {
			if st, err := ReadStatus(d.dir); err != nil || st.Waiting != w {
				t.Fatalf("status file: %+v, %v; want waiting %q", st, err, w)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting %q, want %q", w, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
