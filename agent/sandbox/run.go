package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"

	"github.com/frognano/frognano/internal/procgroup"
)

// DefaultTimeout applies when Cmd.Timeout is zero.
const DefaultTimeout = 10 * time.Minute

// Cmd is one command to run.
type Cmd struct {
	// Dir is the working directory: the agent's private copy of the workspace, and in
	// bwrap mode the only place it may write besides /tmp and the Runner's caches.
	Dir     string
	Command string        // run as `bash -lc COMMAND`
	Timeout time.Duration // every process the command started is killed after this (zero: DefaultTimeout)
}

// Output is what a command did.
type Output struct {
	ExitCode                     int // 124 on timeout (like coreutils timeout), 128+signal when killed by one
	Stdout, Stderr               string
	StdoutDropped, StderrDropped int64 // bytes beyond Limits.Output
	TimedOut                     bool
	Flooded                      bool // killed for printing more than 64 MiB
	// ProcessCap: a fork failed because the command reached Limits.Processes (known where a
	// pids cgroup caps it).
	ProcessCap bool
	Duration   time.Duration
}

// Run runs c and returns once every process it started is gone. The error is only for a
// command that could not start, or a cancelled ctx (then ctx.Err(), with the command killed).
func (r *Runner) Run(ctx context.Context, c Cmd) (Output, error) {
	if err := ctx.Err(); err != nil {
		return Output{}, err
	}
	if c.Dir == "" {
		return Output{}, errors.New("sandbox: Cmd.Dir is empty")
	}
	dir, err := realDir(c.Dir)
	if err != nil {
		return Output{}, fmt.Errorf("sandbox: %w", err)
	}
	if _, done := r.adopted.LoadOrStore(dir, true); !done {
		if err := r.Adopt(dir); err != nil {
			r.adopted.Delete(dir)
			return Output{}, err
		}
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	var cg *cgroup
	if r.iso.cgroup != "" {
		if cg, err = newCgroup(r.iso.cgroup, r.limits.Processes); err != nil {
			return Output{}, fmt.Errorf("sandbox: %w", err)
		}
		defer cg.remove()
	}
	argv := r.argv(dir, c.Command, cg)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = r.env
	cmd.Dir = dir
	// Pdeathsig (privateMounts) takes the sandbox down if frognano dies; it fires when the
	// starting thread exits, hence the locked thread until Run returns.
	cmd.SysProcAttr = privateMounts(r.iso.Mode == ModeBwrap && r.iso.PrivateMounts)
	outR, outW, err := os.Pipe()
	if err != nil {
		return Output{}, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return Output{}, err
	}
	defer outR.Close()
	defer errR.Close()
	cmd.Stdout, cmd.Stderr = outW, errW
	if r.iso.Mode == ModeBwrap && r.iso.SyscallFilter {
		f, err := seccompFile()
		if err != nil {
			outW.Close()
			errW.Close()
			return Output{}, fmt.Errorf("sandbox: %w", err)
		}
		defer f.Close()
		cmd.ExtraFiles = []*os.File{f} // fd 3, seccompFD
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := time.Now()
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		return Output{}, fmt.Errorf("sandbox: %w", err)
	}
	outs := newOutputs(r.limits.Output)
	outs.drain(outR, &outs.stdout)
	outs.drain(errR, &outs.stderr)
	waited := make(chan struct{})
	go func() { cmd.Wait(); close(waited) }()

	var o Output
	var ctxErr error
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-waited:
	case <-timer.C:
		o.TimedOut = true
	case <-outs.flooded:
		o.Flooded = true
	case <-ctx.Done():
		ctxErr = ctx.Err()
	}
	pgid := cmd.Process.Pid
	syscall.Kill(-pgid, syscall.SIGKILL)
	<-waited
	gone := r.killAll(pgid, cg)
	o.ProcessCap = cg != nil && cg.capHit()
	finish(outs, outR, errR)
	o.Duration = time.Since(start)
	o.Stdout, o.Stderr = string(outs.stdout.buf), string(outs.stderr.buf)
	o.StdoutDropped, o.StderrDropped = outs.stdout.dropped, outs.stderr.dropped
	o.ExitCode = exitCode(cmd.ProcessState)
	if o.TimedOut {
		o.ExitCode = 124
	}
	if ctxErr == nil && !gone {
		return o, errors.New("sandbox: some processes of the command survived SIGKILL")
	}
	return o, ctxErr
}

// killAll kills what is left of the command, whether or not it ended on its own (it may
// have left processes in the background), and reports whether all are gone. In the
// namespace modes the process group holds the namespace's init, which dies only after
// every process in it; the cgroup, when there is one, holds them all directly.
//
// The bounds only matter when something lingers: each wait ends as soon as the last process
// is gone. They are seconds, not milliseconds, because a fork bomb being reaped on a loaded
// machine (two cores, load 15) outlasted 300 ms and a clean kill was reported as survivors.
func (r *Runner) killAll(pgid int, cg *cgroup) bool {
	gone := procgroup.Kill(pgid, 3*time.Second)
	if cg != nil {
		gone = cg.kill(3*time.Second) && gone
	}
	return gone
}

// finish waits for the readers to reach the end of the pipes. A process that escaped
// (ModeNone without a cgroup) may hold them open, so the wait is bounded, after which the
// pipes are closed under it.
func finish(outs *outputs, pipes ...*os.File) {
	done := make(chan struct{})
	go func() { outs.wg.Wait(); close(done) }()
	select {
	case <-done:
		return
	case <-time.After(100 * time.Millisecond):
	}
	for _, p := range pipes {
		p.Close()
	}
	<-done
}

func exitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
