// Package trainer drives the Python GRPO trainer (frognano_trainer, in this folder) as a
// subprocess over its JSON-lines protocol (README.md), and builds its virtual environment
// ([Setup]). Entry point: [Start], then the typed requests on [*Process].
package trainer

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/frognano/frognano/internal/procgroup"
)

// Options configure a trainer process; the zero value works once setup has run.
type Options struct {
	// Python runs the trainer; default [Python]().
	Python string
	// Timeout bounds each request (default 10 minutes: loading a 4B model from disk, or a
	// step at 8k tokens, takes minutes on a slow disk or GPU). A request that overruns it
	// kills the trainer, whose stream cannot be trusted after an abandoned request.
	Timeout time.Duration
	// Stderr, when set, receives the trainer's log as it comes; the last part of it is
	// also kept for error messages.
	Stderr io.Writer
	// Procs > 1, or a Distributed mode, runs the trainer as that many ranks under torchrun
	// (PyTorch's launcher, `python -m torch.distributed.run`), one per GPU; rank 0 speaks
	// the protocol. Distributed is "ddp" (default: the adapter's gradients averaged over
	// whole model copies) or "fsdp" (the base model sharded over the ranks, for a model that
	// does not fit one GPU). A failure on any rank ends the whole trainer after an error.
	Procs       int
	Distributed string
}

// command returns the trainer's arguments after the interpreter.
func (o Options) command() ([]string, error) {
	if o.Procs <= 1 && o.Distributed == "" {
		return []string{"-m", "frognano_trainer"}, nil
	}
	mode := cmp.Or(o.Distributed, "ddp")
	if mode != "ddp" && mode != "fsdp" {
		return nil, fmt.Errorf("trainer: Distributed must be ddp or fsdp, not %q", mode)
	}
	// --standalone: a private rendezvous on a free local port, so that two trainers on one
	// machine do not meet each other
	return []string{"-m", "torch.distributed.run", "--standalone", fmt.Sprintf("--nproc_per_node=%d", max(o.Procs, 1)),
		"-m", "frognano_trainer", "--distributed", mode}, nil
}

// Process is a running trainer. Requests are serialized: the protocol answers in order.
type Process struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	lines   chan []byte   // response lines, closed at the end of stdout
	exited  chan struct{} // closed once the process is reaped; then exitErr is set
	exitErr error
	stderr  *tail
	timeout time.Duration
	stop    func() bool           // ends the context watch
	killed  atomic.Pointer[error] // why the trainer was killed from outside a request

	mu     sync.Mutex // guards nextID, broken and the stdin/lines pairing
	nextID int
	broken error // why no further request can be sent
}

// Start starts the trainer and checks with hello that it speaks this protocol. Cancelling
// ctx kills the trainer at any time.
func Start(ctx context.Context, opts Options) (*Process, *Hello, error) {
	src, err := sourceDir()
	if err != nil {
		return nil, nil, fmt.Errorf("trainer: writing its Python sources to the cache: %w", err)
	}
	python := opts.Python
	if python == "" {
		python = Python()
	}
	if _, err := exec.LookPath(python); err != nil {
		return nil, nil, fmt.Errorf("trainer: no Python at %s (run `frognano finetune setup`, or set FROGNANO_TRAINER_PYTHON): %w", python, err)
	}
	args, err := opts.command()
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(python, args...)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+src, "PYTHONUNBUFFERED=1", "PYTHONDONTWRITEBYTECODE=1")
	// Its own process group, so that killing it also ends whatever torch started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &Process{
		cmd: cmd, lines: make(chan []byte, 1), exited: make(chan struct{}),
		stderr: &tail{max: 64 << 10}, timeout: opts.Timeout,
	}
	if p.timeout <= 0 {
		p.timeout = 10 * time.Minute
	}
	cmd.Stderr = p.stderr
	if opts.Stderr != nil {
		cmd.Stderr = io.MultiWriter(p.stderr, opts.Stderr)
	}
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("trainer: starting %s: %w", python, err)
	}
	go p.read(stdout)
	p.stop = context.AfterFunc(ctx, func() { p.killFor(fmt.Errorf("trainer killed: %w", context.Cause(ctx))) })
	var h Hello
	if err := p.Call(ctx, "hello", nil, &h); err != nil {
		p.stop()
		p.Kill()
		return nil, nil, err
	}
	if h.Protocol != ProtocolVersion {
		p.stop()
		p.Kill()
		return nil, nil, fmt.Errorf("trainer speaks protocol %d, this frognano speaks %d: the Python sources and the binary disagree", h.Protocol, ProtocolVersion)
	}
	return p, &h, nil
}

// read forwards stdout's lines, then reaps the process.
func (p *Process) read(stdout io.Reader) {
	r := bufio.NewReaderSize(stdout, 1<<16)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 && err == nil {
			p.lines <- line
		}
		if err != nil {
			break
		}
	}
	close(p.lines)
	p.exitErr = p.cmd.Wait()
	close(p.exited)
}

// Call sends one request and decodes its result into out (which may be nil). It returns
// an [*Error] when the trainer answered with one; any other error means the trainer is
// gone, and later calls fail at once.
func (p *Process) Call(ctx context.Context, method string, params, out any) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.broken != nil {
		return p.broken
	}
	p.nextID++
	req, err := json.Marshal(struct {
		ID     int    `json:"id"`
		Method string `json:"method"`
		Params any    `json:"params,omitempty"`
	}{p.nextID, method, params})
	if err != nil {
		return fmt.Errorf("trainer %s: encoding the request: %w", method, err)
	}
	select {
	case <-p.exited:
		return p.fail(p.gone(method))
	default:
	}
	if _, err := p.stdin.Write(append(req, '\n')); err != nil {
		return p.fail(fmt.Errorf("trainer %s: the trainer is not reading its input (%v)", method, err))
	}
	timer := time.NewTimer(p.timeout)
	defer timer.Stop()
	var line []byte
	select {
	case l, ok := <-p.lines:
		if !ok {
			<-p.exited
			return p.fail(p.gone(method))
		}
		line = l
	case <-ctx.Done():
		return p.fail(fmt.Errorf("trainer %s: %w", method, context.Cause(ctx)))
	case <-timer.C:
		return p.fail(fmt.Errorf("trainer %s: no answer within %s; the trainer was killed", method, p.timeout))
	}
	var resp struct {
		ID     int             `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *Error          `json:"error"`
	}
	if err := json.Unmarshal(line, &resp); err != nil || resp.ID != p.nextID {
		return p.fail(fmt.Errorf("trainer %s: not a response to request %d: %.200q", method, p.nextID, line))
	}
	if resp.Error != nil {
		resp.Error.Method = method
		return resp.Error
	}
	if method == "shutdown" {
		p.broken = errClosed
	}
	if out != nil {
		if err := json.Unmarshal(resp.Result, out); err != nil {
			return fmt.Errorf("trainer %s: decoding the result: %w", method, err)
		}
	}
	return nil
}

var errClosed = errors.New("trainer: closed")

// gone says why the trainer exited; call it once exited is closed.
func (p *Process) gone(method string) error {
	if why := p.killed.Load(); why != nil {
		return fmt.Errorf("trainer %s: %w", method, *why)
	}
	return fmt.Errorf("trainer %s: the trainer exited (%v) without answering", method, p.exitErr)
}

// fail kills the trainer, remembers why, and returns that reason with the end of its log.
// Called with mu held.
func (p *Process) fail(err error) error {
	p.killGroup()
	if p.broken == nil {
		if t := p.stderr.String(); t != "" {
			err = fmt.Errorf("%w\ntrainer log (last lines):\n%s", err, lastLines(t, 20))
		}
		p.broken = err
	}
	return p.broken
}

// killFor kills the trainer from outside a request (a cancelled context, [Process.Kill]);
// it takes no lock, so it also ends a request in flight, which then reports why.
func (p *Process) killFor(why error) {
	p.killed.CompareAndSwap(nil, &why)
	p.killGroup()
}

// killGroup kills the trainer's process group unless the trainer has been reaped: its
// group id may then belong to someone else.
func (p *Process) killGroup() {
	select {
	case <-p.exited:
	default:
		procgroup.Kill(p.cmd.Process.Pid, 5*time.Second)
	}
}

// Load loads a model and its adapter (replacing any loaded before).
func (p *Process) Load(ctx context.Context, req Load) (*Loaded, error) {
	var r Loaded
	return &r, p.Call(ctx, "load", req, &r)
}

// Train runs one GRPO update on a batch.
func (p *Process) Train(ctx context.Context, b Batch) (*Trained, error) {
	var r Trained
	return &r, p.Call(ctx, "train", b, &r)
}

// Save writes the adapter (peft format) into the folder dir.
func (p *Process) Save(ctx context.Context, dir string) (*Saved, error) {
	var r Saved
	return &r, p.Call(ctx, "save", map[string]string{"path": dir}, &r)
}

// MergeExport writes the adapter merged into the base weights as a safetensors folder
// (dtype bfloat16, float16 or float32; empty means bfloat16).
func (p *Process) MergeExport(ctx context.Context, dir, dtype string) (*Exported, error) {
	var r Exported
	return &r, p.Call(ctx, "merge_export", map[string]string{"path": dir, "dtype": cmp.Or(dtype, "bfloat16")}, &r)
}

// Logprobs returns the top next tokens after a sequence under the current weights (the
// adapter included: what a merged export computes), in fp32.
func (p *Process) Logprobs(ctx context.Context, req LogprobsRequest) (*NextTokens, error) {
	var r NextTokens
	return &r, p.Call(ctx, "logprobs", req, &r)
}

// Tokenize turns texts and output pieces into the loaded model's token ids.
func (p *Process) Tokenize(ctx context.Context, req TokenizeRequest) (*Tokenized, error) {
	var r Tokenized
	return &r, p.Call(ctx, "tokenize", req, &r)
}

// Metrics returns the running totals.
func (p *Process) Metrics(ctx context.Context) (*Metrics, error) {
	var r Metrics
	return &r, p.Call(ctx, "metrics", nil, &r)
}

// MetricsDigest returns the running totals with every rank's adapter digest (hashing the
// adapter takes a moment for a real model: not for every step).
func (p *Process) MetricsDigest(ctx context.Context) (*Metrics, error) {
	var r Metrics
	return &r, p.Call(ctx, "metrics", map[string]bool{"adapter_digest": true}, &r)
}

// Close asks the trainer to shut down and waits for it; it kills it after 30 s or when
// the trainer cannot be asked (an error already returned by a request is not repeated).
func (p *Process) Close() error {
	defer p.stop()
	p.mu.Lock()
	wasBroken := p.broken != nil
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.Call(ctx, "shutdown", nil, nil); err != nil {
		p.Kill()
		<-p.exited
		if wasBroken {
			return nil
		}
		return err
	}
	select {
	case <-p.exited:
		return p.exitErr
	case <-ctx.Done():
		p.Kill()
		<-p.exited
		return fmt.Errorf("trainer: still running 30 s after shutdown; killed")
	}
}

// Kill ends the trainer now; a request in flight returns an error.
func (p *Process) Kill() { p.killFor(errors.New("trainer killed")) }

// Log returns the end of the trainer's stderr.
func (p *Process) Log() string { return p.stderr.String() }

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex // guards b
	b   []byte
	max int
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, b...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(b), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
