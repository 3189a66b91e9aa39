package sandbox

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/frognano/frognano/internal/procgroup"
	"golang.org/x/sys/unix"
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
	// Started, when set, is called once the command runs, with its processes: the disk
	// guard looks at the files they hold open, and holds them still while it measures.
	Started func(p *Procs)
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
	procs := &Procs{list: func() []int {
		select {
		case <-waited: // its pid may be another process's by now
			return nil
		default:
			return r.members(cmd.Process.Pid, cg)
		}
	}}
	if c.Started != nil {
		c.Started(procs)
	}

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
	procs.end() // after a Hold in progress: what it stopped is killed next
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

// Procs are a running command's processes, for the disk guard: it counts the removed files
// they hold open, and holds them still while it measures, so that a command cannot write on
// through a look that takes seconds (40,000 new folders to walk under a loaded race build)
// and end before it is judged.
type Procs struct {
	list func() []int
	mu   sync.Mutex  // held by Hold, so that Run's kill and reaping wait for it to end
	over atomic.Bool // Run is ending: no more signals (a pid may be reused once reaped)
}

// ListedProcs is Procs over processes its caller lists: Hold stops and continues those.
func ListedProcs(list func() []int) *Procs { return &Procs{list: list} }

// List returns the command's live processes, nil once it is ending. It may be called from
// Hold's f.
func (p *Procs) List() []int {
	if p.over.Load() {
		return nil
	}
	return p.list()
}

// holdPatience is how long Hold tries to have every process of the command stopped at once.
const holdPatience = 2 * time.Second

// Hold stops every process of the command and calls f while they are all stopped; it lets
// them go on after unless f returns true (they are about to be killed: Run's kill comes
// after Hold returns). It reports false, with them let go, when it could not have them all
// stopped at once within holdPatience (f is not called then), or when one of them ran while
// f did (f's figures cannot be trusted then). One not stopped yet can continue the others
// (kill -CONT -1 in a loop did, in review), so SIGSTOP is sent again to each process /proc
// does not show stopped, until one pass finds every listed process
// stopped and no process it had not seen (a stopped process cannot fork or signal). Each
// process is signalled through a pidfd, so that a pid reused by another process once the
// command's had died is never stopped or continued. SIGSTOP cannot be caught or ignored, and
// a sandbox's namespace init takes it from an ancestor namespace. A process the command had
// stopped itself (job control, a test of it) stays stopped: it was let go with the rest, and
// ran on (found in review).
//
// giveUp, when set, is asked at each pass while Hold waits for the processes to stop: when
// it says so, Hold gives up at once (false, f not called). A thread inside one long system
// call is not stopped until the call returns, and may do much meanwhile.
func (p *Procs) Hold(f func() (keep bool), giveUp func() bool) (held bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.over.Load() {
		f()
		return true
	}
	// A stopped process can still be woken without any other running: a POSIX timer of
	// its own whose signal is SIGCONT does it (found in review). Every thread's count of
	// context switches, the same before and after f, shows that none ran meanwhile; before
	// f it must hold still over two passes (a thread shows T a moment before it is off its
	// CPU).
	var s stopper
	defer s.close()
	var before map[int]procgroup.Thread
	for deadline := time.Now().Add(holdPatience); ; {
		// One listing serves both: with all of it stopped, none can have forked since.
		if pids := p.list(); s.pass(pids) {
			now := s.switches(pids)
			if before != nil && maps.Equal(before, now) {
				break
			}
			before = now
		} else {
			before = nil
		}
		if time.Now().After(deadline) || giveUp != nil && giveUp() {
			s.cont()
			return false
		}
		time.Sleep(time.Millisecond) // let the SIGSTOPs sent take effect
	}
	keep := f()
	held = stillSince(before, s.switches(p.list()))
	if keep && held {
		return true
	}
	s.cont()
	return held
}

// stopper stops a set of processes through pidfds.
type stopper struct {
	fds     map[int]int  // pid: pidfd (-1 where pidfd_open is missing: plain kill)
	already map[int]bool // stopped when first seen, and not by the stopper: never continued
}

// pass sends SIGSTOP to each of pids that /proc does not show stopped, and reports whether
// all were stopped already and none was new.
func (s *stopper) pass(pids []int) (all bool) {
	if s.fds == nil {
		s.fds, s.already = map[int]int{}, map[int]bool{}
	}
	all = true
	for _, pid := range pids {
		fd, seen := s.fds[pid]
		if !seen {
			all = false
			var err error
			if fd, err = unix.PidfdOpen(pid, 0); err != nil {
				if errors.Is(err, syscall.ESRCH) {
					continue // gone already
				}
				fd = -1 // before Linux 5.3
			}
			s.fds[pid] = fd
			s.already[pid] = procgroup.SignalStopped(pid)
		}
		if !procgroup.Stopped(pid) {
			all = false
			s.already[pid] = false // running after all (a sibling continued it): the stopper's to continue
			s.send(pid, fd, syscall.SIGSTOP)
		}
	}
	return all
}

// switches reads every thread of pids, and notes any process the stopper had not seen (it
// was not stopped: the readings then differ).
func (s *stopper) switches(pids []int) map[int]procgroup.Thread {
	m := map[int]procgroup.Thread{}
	for _, pid := range pids {
		if _, seen := s.fds[pid]; !seen {
			m[-pid] = procgroup.Thread{}
		}
		procgroup.Threads(pid, m)
	}
	return m
}

// stillSince reports whether no thread ran between two readings: the same threads, each
// switched off a CPU as often, except one that was waiting in the kernel (D), finished its
// system call and stopped at its return (T): it ran no code of its own (a vfork parent, a
// write to a slow disk; one that wrote much is caught by the look's write_bytes).
func stillSince(before, after map[int]procgroup.Thread) bool {
	if len(before) != len(after) {
		return false
	}
	for tid, b := range before {
		a, ok := after[tid]
		if !ok || a.Switches != b.Switches && (b.State != 'D' || a.State != 'T' && a.State != 't') {
			return false
		}
	}
	return true
}

// cont continues every process the stopper has stopped.
func (s *stopper) cont() {
	for pid, fd := range s.fds {
		if !s.already[pid] {
			s.send(pid, fd, syscall.SIGCONT)
		}
	}
}

func (s *stopper) send(pid, fd int, sig syscall.Signal) {
	if fd >= 0 {
		unix.PidfdSendSignal(fd, sig, nil, 0)
	} else {
		syscall.Kill(pid, sig)
	}
}

func (s *stopper) close() {
	for _, fd := range s.fds {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// end marks the command as ending, waiting for a Hold in progress to finish.
func (p *Procs) end() {
	p.mu.Lock()
	p.over.Store(true)
	p.mu.Unlock()
}

// members lists the command's live processes: the cgroup's when there is one, and the
// descendants of the process Run started (in the namespace modes, orphans are reparented to
// the namespace's init, so every process of the namespace is one).
func (r *Runner) members(root int, cg *cgroup) []int {
	pids := procgroup.Descendants(root)
	if cg != nil {
		for _, p := range cg.members() {
			if !slices.Contains(pids, p) {
				pids = append(pids, p)
			}
		}
	}
	return pids
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
