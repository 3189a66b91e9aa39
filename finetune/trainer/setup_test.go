package trainer

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestProgressFromPipsLog(t *testing.T) {
	log := `Collecting accelerate==1.15.0 (from -r /x/requirements.lock (line 5))
  Downloading accelerate-1.15.0-py3-none-any.whl (380 kB)
Requirement already satisfied: numpy==2.4.6 in ./lib/python3.11/site-packages (from -r x (line 9))
  Using cached torch-2.11.0-cp311-cp311-manylinux_2_28_x86_64.whl (900 MB)
Installing collected packages: numpy, accelerate
Successfully installed accelerate-1.15.0
`
	var out bytes.Buffer
	p := &progress{total: 62, out: &out}
	for _, l := range strings.Split(log, "\n") {
		p.line(l)
	}
	p.end()
	want := `setup: [ 1/62] collecting accelerate==1.15.0
setup: [ 1/62] downloading accelerate-1.15.0-py3-none-any.whl (380 kB)
setup: [ 2/62] already installed: numpy==2.4.6
setup: [ 2/62] installing the downloaded packages (torch and CUDA's libraries take a minute or two)
setup: [ 2/62] installed
`
	if out.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", out.String(), want)
	}
	out.Reset()
	p = &progress{total: 9, out: &out, terminal: true}
	p.line("Collecting torch==2.11.0")
	p.end()
	if out.String() != "\r\033[Ksetup: [1/9] collecting torch==2.11.0\n" {
		t.Fatalf("terminal: %q", out.String())
	}
}

func TestLockPinsEverything(t *testing.T) {
	n := 0
	for _, l := range strings.Split(string(Lock()), "\n") {
		if l = strings.TrimSpace(l); l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		n++
		if !strings.Contains(l, "==") {
			t.Errorf("not an exact pin: %q", l)
		}
	}
	if n != countPins(Lock()) || n < 5 {
		t.Fatalf("%d pins", n)
	}
	for _, want := range []string{"torch==2.11.0", "transformers==5.17.0", "peft==", "safetensors==", "pytest=="} {
		if !strings.Contains(string(Lock()), "\n"+want) {
			t.Errorf("the lock lacks %s", want)
		}
	}
}

// A stamp naming this lock makes setup instant: nothing runs, not even Python.
func TestSetupIsIdempotent(t *testing.T) {
	venv := t.TempDir()
	os.MkdirAll(filepath.Join(venv, "bin"), 0o755)
	os.WriteFile(filepath.Join(venv, "bin", "python"), []byte("#!/bin/sh\nexit 1\n"), 0o755)
	want := Found{LockSHA256: LockHash(), Venv: venv, Hello: Hello{Torch: "2.11.0", Device: "cpu", DType: "float32"}}
	b, _ := json.Marshal(want)
	os.WriteFile(filepath.Join(venv, stampName), b, 0o644)
	start := time.Now()
	f, cached, err := Setup(context.Background(), SetupOptions{Venv: venv, BasePython: "/nonexistent"})
	if err != nil || !cached || f.Torch != "2.11.0" {
		t.Fatalf("%+v %v %v", f, cached, err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("took %v", d)
	}
	// Another lock's stamp is not enough: setup starts over (and fails here, with the
	// base Python missing, saying so).
	want.LockSHA256 = "old"
	b, _ = json.Marshal(want)
	os.WriteFile(filepath.Join(venv, stampName), b, 0o644)
	os.Remove(filepath.Join(venv, "bin", "python"))
	if _, _, err := Setup(context.Background(), SetupOptions{Venv: venv, BasePython: "/nonexistent"}); err == nil || !strings.Contains(err.Error(), "python3-venv") {
		t.Fatalf("err = %v", err)
	}
}

func TestSummary(t *testing.T) {
	f := &Found{Hello: Hello{Python: "3.11.7", Torch: "2.11.0", CUDAVersion: "13.0", Device: "cpu", DType: "float32"}}
	if s := f.Summary(); !strings.Contains(s, "sees no GPU") {
		t.Fatal(s)
	}
	f.CUDAAvailable, f.GPUs, f.Device, f.DType = true, []string{"NVIDIA H200"}, "cuda", "bfloat16"
	if s := f.Summary(); !strings.Contains(s, "NVIDIA H200: trains on cuda in bfloat16") {
		t.Fatal(s)
	}
}
