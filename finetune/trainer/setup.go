package trainer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// SetupOptions say where and how to build the trainer's virtual environment.
type SetupOptions struct {
	Venv       string    // default VenvDir()
	BasePython string    // the Python that creates it; default python3
	Progress   io.Writer // pip's progress, one line per event; nil for none
	Terminal   bool      // Progress is a terminal: redraw one line instead
}

// Found is what setup found, kept as the stamp file in the environment so that a second
// setup, and `frognano doctor`, answer without starting Python.
type Found struct {
	LockSHA256 string    `json:"lock_sha256"`
	Venv       string    `json:"venv"`
	When       time.Time `json:"when"`
	Took       float64   `json:"took_s"`
	Hello
}

const stampName = "frognano-setup.json"

// ReadStamp returns what the last successful setup of venv found; an error when it never
// completed.
func ReadStamp(venv string) (*Found, error) {
	b, err := os.ReadFile(filepath.Join(venv, stampName))
	if err != nil {
		return nil, err
	}
	var f Found
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", stampName, err)
	}
	return &f, nil
}

// Setup creates the virtual environment, installs the embedded lock file into it and
// checks, by starting the trainer, what torch finds. It is idempotent: when the stamp names
// this lock file, it returns the stamp at once (cached true).
func Setup(ctx context.Context, o SetupOptions) (found *Found, cached bool, err error) {
	if o.Venv == "" {
		o.Venv = VenvDir()
	}
	if o.BasePython == "" {
		o.BasePython = "python3"
	}
	py := filepath.Join(o.Venv, "bin", "python")
	if f, err := ReadStamp(o.Venv); err == nil && f.LockSHA256 == LockHash() {
		if _, err := os.Stat(py); err == nil {
			return f, true, nil
		}
	}
	start := time.Now()
	if _, err := os.Stat(py); err != nil {
		if err := os.MkdirAll(filepath.Dir(o.Venv), 0o755); err != nil {
			return nil, false, err
		}
		out, err := exec.CommandContext(ctx, o.BasePython, "-m", "venv", o.Venv).CombinedOutput()
		if err != nil {
			return nil, false, fmt.Errorf("creating the virtual environment with %s: %v\n%s\n(on Debian or Ubuntu: apt-get install python3-venv)", o.BasePython, err, bytes.TrimSpace(out))
		}
	}
	lock := filepath.Join(o.Venv, "requirements.lock")
	if err := os.WriteFile(lock, Lock(), 0o644); err != nil {
		return nil, false, err
	}
	if err := pipInstall(ctx, py, lock, o); err != nil {
		return nil, false, err
	}
	p, hello, err := Start(ctx, Options{Python: py})
	if err != nil {
		return nil, false, fmt.Errorf("the trainer does not start in the new environment: %w", err)
	}
	if err := p.Close(); err != nil {
		return nil, false, err
	}
	f := &Found{LockSHA256: LockHash(), Venv: o.Venv, When: time.Now().UTC(), Took: time.Since(start).Seconds(), Hello: *hello}
	b, _ := json.MarshalIndent(f, "", "  ")
	tmp := filepath.Join(o.Venv, stampName+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return nil, false, err
	}
	return f, false, os.Rename(tmp, filepath.Join(o.Venv, stampName))
}

// pipInstall installs the lock, turning pip's output into progress lines; on failure the
// error carries the end of pip's output.
func pipInstall(ctx context.Context, py, lock string, o SetupOptions) error {
	cmd := exec.CommandContext(ctx, py, "-m", "pip", "install", "--disable-pip-version-check",
		"--no-input", "--progress-bar", "off", "-r", lock)
	// pip 23's progress bar needs a terminal, and newer pips' "raw" mode is missing from
	// the one a Python 3.11 venv starts with: progress comes from its log lines instead.
	r, w := io.Pipe()
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); w.Close() }()
	pr := &progress{total: countPins(Lock()), out: o.Progress, terminal: o.Terminal}
	var last []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		last = append(last, line)
		if len(last) > 30 {
			last = last[1:]
		}
		pr.line(line)
	}
	pr.end()
	if err := <-done; err != nil {
		return fmt.Errorf("pip install -r %s: %v\n%s", lock, err, strings.Join(last, "\n"))
	}
	return nil
}

func countPins(lock []byte) int {
	n := 0
	for _, l := range strings.Split(string(lock), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			n++
		}
	}
	return n
}

// progress turns pip's log into "[12/62] downloading torch-…whl (…)" lines.
type progress struct {
	total, seen int
	out         io.Writer
	terminal    bool
	drawn       bool
}

func (p *progress) line(l string) {
	var msg string
	switch t := strings.TrimSpace(l); {
	case strings.HasPrefix(t, "Collecting "):
		p.seen++
		msg = "collecting " + firstField(strings.TrimPrefix(t, "Collecting "))
	case strings.HasPrefix(t, "Requirement already satisfied: "):
		p.seen++
		msg = "already installed: " + firstField(strings.TrimPrefix(t, "Requirement already satisfied: "))
	case strings.HasPrefix(t, "Downloading "):
		msg = "downloading " + strings.TrimPrefix(t, "Downloading ")
	case strings.HasPrefix(t, "Installing collected packages"):
		msg = "installing the downloaded packages (torch and CUDA's libraries take a minute or two)"
	case strings.HasPrefix(t, "Successfully installed"):
		msg = "installed"
	case strings.HasPrefix(t, "ERROR") || strings.HasPrefix(t, "WARNING"):
		msg = t
	default:
		return
	}
	if p.out == nil {
		return
	}
	s := fmt.Sprintf("setup: [%*d/%d] %s", len(fmt.Sprint(p.total)), min(p.seen, p.total), p.total, msg)
	if p.terminal {
		fmt.Fprintf(p.out, "\r\033[K%s", s)
		p.drawn = true
		return
	}
	fmt.Fprintln(p.out, s)
}

func (p *progress) end() {
	if p.drawn {
		fmt.Fprintln(p.out)
	}
}

func firstField(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return s
}

// Summary says in words what a setup found, for the command line and the doctor.
func (f *Found) Summary() string {
	s := fmt.Sprintf("Python %s, torch %s, transformers %s, peft %s; ", f.Python, f.Torch, f.Transformers, f.Peft)
	switch {
	case f.CUDAAvailable:
		s += fmt.Sprintf("CUDA %s with %s: trains on %s in %s", f.CUDAVersion, strings.Join(f.GPUs, ", "), f.Device, f.DType)
	case f.CUDAVersion != "":
		s += fmt.Sprintf("torch is built for CUDA %s but sees no GPU: trains on the CPU in %s (tiny models only)", f.CUDAVersion, f.DType)
	default:
		s += fmt.Sprintf("no CUDA in this torch: trains on the CPU in %s (tiny models only)", f.DType)
	}
	return s
}
