package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/frognano/frognano/agent/workspace/keeper"
	"github.com/frognano/frognano/finetune/loop"
	"github.com/frognano/frognano/finetune/registry"
	"github.com/frognano/frognano/watch"
)

// ErrRunning says another daemon of the repository holds its lock.
var ErrRunning = errors.New("fine-tuning is already running for this repository")

// errYield cancels an iteration's training when another program takes the GPU.
var errYield = errors.New("another program uses the GPU")

// Options configure Run. Loop is required; its Progress and Enter are the daemon's (a
// Progress set here hears the events too).
type Options struct {
	// Dir is the daemon's folder (default Dir(Loop.Repo)).
	Dir  string
	Loop loop.Config
	// Hours is the schedule: outside it the daemon waits, between phases.
	Hours Hours
	// Pause is the rest between iterations (0: none); a new commit ends it early, so that
	// the next iteration works on the new code at once. Retry is the wait after a failed
	// iteration (default a minute: a failure repeated at once would spin).
	Pause, Retry time.Duration
	// SMI is nvidia-smi's path, "" when there is none: then the daemon cannot see other
	// programs on the GPU and never yields (it says so in its log and status). Callers
	// pass FindSMI(); tests a fake script.
	SMI string
	// GPUPoll is how often nvidia-smi is asked while training or waiting for the GPU
	// (default 10s).
	GPUPoll time.Duration
	// GPULock is the machine's GPU lock (default GPULockPath()).
	GPULock string
	// Logf writes the daemon's log (default stderr, with the time).
	Logf func(format string, args ...any)
}

// daemon is one Run.
type daemon struct {
	o    Options
	dir  string
	lock *os.File
	// heads hears new HEADs from the keeper (buffered: the keeper must not block).
	heads chan string

	mu     sync.Mutex
	st     Status                  // guarded by mu: written to status.json by save
	saved  time.Time               // guarded by mu: when st was last written
	cancel context.CancelCauseFunc // guarded by mu: the running Step's
	head   string                  // guarded by mu: HEAD when the running iteration began
}

// Run is the background process's body: it takes the daemon's lock (ErrRunning when
// another daemon has it), then runs loop.Step again and again until ctx ends. A failed
// iteration is recorded in the status file and tried again after Retry: the loop resumes
// it where it stopped.
func Run(ctx context.Context, o Options) error {
	if o.Loop.Repo == "" {
		return errors.New("daemon: the repository is required")
	}
	if o.Dir == "" {
		o.Dir = Dir(o.Loop.Repo)
	}
	if o.Loop.Dir == "" {
		o.Loop.Dir = loop.DefaultDir(o.Loop.Repo)
	}
	if o.Retry <= 0 {
		o.Retry = time.Minute
	}
	if o.GPUPoll <= 0 {
		o.GPUPoll = 10 * time.Second
	}
	if o.GPULock == "" {
		o.GPULock = GPULockPath()
	}
	if o.Logf == nil {
		o.Logf = func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, time.Now().Format("2006-01-02 15:04:05 ")+format+"\n", args...)
		}
	}
	d := &daemon{o: o, dir: o.Dir, heads: make(chan string, 1)}
	if err := d.takeLock(ctx); err != nil {
		return err
	}
	defer d.lock.Close()
	d.begin()
	k, err := keeper.Start(o.Loop.Repo, keeper.Options{Parent: filepath.Join(d.dir, "ready"), Logf: o.Logf, OnHead: d.onHead})
	if err != nil {
		o.Logf("not watching %s (%v): a new commit is seen when the next iteration begins", o.Loop.Repo, err)
	} else {
		defer k.Close()
	}
	cfg := o.Loop
	cfg.Progress, cfg.Enter = d.progress, d.enter
	for ctx.Err() == nil {
		if err := d.waitHours(ctx); err != nil {
			break
		}
		cfg.Fresh = d.fresh(ctx)
		stepCtx, cancel := context.WithCancelCause(ctx)
		d.mu.Lock()
		d.cancel = cancel
		d.mu.Unlock()
		st, err := loop.Step(stepCtx, cfg)
		cause := context.Cause(stepCtx)
		cancel(nil)
		if ctx.Err() != nil {
			break
		}
		if errors.Is(cause, errYield) {
			continue // the next Step resumes the training once the GPU is free (enter)
		}
		d.finished(st, err)
		wait, why := o.Pause, "pausing between iterations"
		if err != nil {
			wait, why = o.Retry, "to try again after the error,"
		}
		if d.wait(ctx, wait, why) != nil {
			break
		}
	}
	d.end(ctx)
	return nil
}

// takeLock takes the daemon's lock, trying for two seconds: `status` and `start` take it
// for an instant to see whether a daemon runs.
func (d *daemon) takeLock(ctx context.Context) error {
	p := filepath.Join(d.dir, lockFile)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	f, err := lockWait(ctx, p, 100*time.Millisecond, nil)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("%w (pid %d; `frognano finetune stop` ends it)", ErrRunning, readPID(p))
		}
		return err
	}
	if err := writePID(f); err != nil {
		f.Close()
		return err
	}
	d.lock = f
	return nil
}

// begin writes the status of a new run, keeping what the last run knew that outlives it
// (GPU time, the commit synthesis last worked on).
func (d *daemon) begin() {
	st := Status{PID: os.Getpid(), Started: time.Now().UTC(), Model: d.model()}
	if old, err := ReadStatus(d.dir); err == nil {
		st.GPUSeconds, st.Head, st.Iteration = old.GPUSeconds, old.Head, old.Iteration
	} else if !errors.Is(err, os.ErrNotExist) {
		d.o.Logf("%v; starting a new one", err)
	}
	if d.o.SMI == "" {
		st.GPU = "no nvidia-smi on PATH: yielding to other programs on the GPU is off"
	} else {
		st.GPU = "yields the GPU to other programs (asks " + d.o.SMI + " every " + d.o.GPUPoll.String() + ")"
	}
	d.mu.Lock()
	d.st = st
	d.mu.Unlock()
	d.o.Logf("fine-tuning %s (pid %d); the GPU: %s; hours %s", d.o.Loop.Repo, st.PID, st.GPU, d.o.Hours)
	d.save(true)
}

// model is the registry's model in use ("" when unknown).
func (d *daemon) model() string {
	st, err := registry.Load(registry.Path(d.o.Loop.RegistryDir, d.o.Loop.Repo))
	if err != nil {
		return d.o.Loop.Base
	}
	return st.Serving()
}

// save writes the status file when force is set or a second has passed since the last
// write (progress comes from several rollout workers, often).
func (d *daemon) save(force bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.saveLocked(force)
}

func (d *daemon) saveLocked(force bool) {
	now := time.Now()
	if !force && now.Sub(d.saved) < time.Second {
		return
	}
	d.st.Updated, d.saved = now.UTC(), now
	if err := d.st.write(d.dir); err != nil {
		d.o.Logf("writing the status: %v", err)
	}
}

// progress hears the loop's progress.
func (d *daemon) progress(p loop.Progress) {
	if d.o.Loop.Progress != nil {
		d.o.Loop.Progress(p)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	changed := p.Phase != d.st.Phase || p.Iteration != d.st.Iteration
	if changed {
		d.o.Logf("iteration %d: %s", p.Iteration, p.Phase)
	}
	if p.Phase == loop.PhaseSynth && p.Fraction == 1 && p.Detail == "" && d.head != "" {
		d.st.Head = d.head // synthesis is done with this commit
	}
	d.st.Iteration, d.st.Phase, d.st.Fraction, d.st.Detail = p.Iteration, p.Phase, p.Fraction, p.Detail
	d.saveLocked(changed || p.Fraction == 1)
}

// setWaiting says what the daemon waits for ("" when it no longer waits).
func (d *daemon) setWaiting(why string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.st.Waiting != why {
		if why != "" {
			d.o.Logf("waiting: %s", why)
		}
		d.st.Waiting = why
		d.saveLocked(true)
	}
}

// fresh reads HEAD and says whether the next Step should synthesize new tasks: it starts a
// new iteration and HEAD is not the commit synthesis last worked on. The first run has no
// last commit, and its synthesis fills the empty frontier anyway.
func (d *daemon) fresh(ctx context.Context) bool {
	h, err := watch.Head(ctx, d.o.Loop.Repo)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.head = h.New
	if err != nil || d.st.Head == "" || h.New == d.st.Head {
		return false
	}
	s, err := loop.Load(loop.StatePath(d.o.Loop.Dir))
	return errors.Is(err, os.ErrNotExist) || (err == nil && s.Phase == loop.PhaseDone)
}

// onHead hears the keeper's new HEADs; it must not block.
func (d *daemon) onHead(h watch.HeadChange) {
	select {
	case d.heads <- h.New:
	default: // one pending commit is enough to wake a pause
	}
}

// finished records an iteration's end (st may be nil when it failed early).
func (d *daemon) finished(st *loop.State, err error) {
	model := d.model()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.st.Model = model
	if err != nil {
		d.st.LastError, d.st.ErrorAt = err.Error(), time.Now().UTC()
		d.o.Logf("iteration failed: %v (trying again in %v)", err, d.o.Retry)
	} else {
		d.st.Iterations++
		d.st.Outcome = fmt.Sprintf("iteration %d: %s", st.Iteration, st.Outcome)
		d.o.Logf("%s", d.st.Outcome)
	}
	d.saveLocked(true)
}

// wait waits for dur, or until a new commit, saying why in the status.
func (d *daemon) wait(ctx context.Context, dur time.Duration, why string) error {
	if dur <= 0 {
		return ctx.Err()
	}
	d.setWaiting(fmt.Sprintf("%s until %s (a new commit ends it)", why, time.Now().Add(dur).Format("15:04:05")))
	defer d.setWaiting("")
	t := time.NewTimer(dur)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	case h := <-d.heads:
		d.o.Logf("new commit %.12s: the next iteration synthesizes tasks on it", h)
	}
	return nil
}

// waitHours waits while the schedule says no, looking again each minute (the clock may
// be changed, the machine suspended).
func (d *daemon) waitHours(ctx context.Context) error {
	for now := time.Now(); !d.o.Hours.Allows(now); now = time.Now() {
		next := d.o.Hours.Next(now)
		d.setWaiting(fmt.Sprintf("outside the hours %s: until %s", d.o.Hours, next.Format("Mon 15:04")))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(next.Sub(now), time.Minute)):
		}
	}
	d.setWaiting("")
	return nil
}

// enter runs before each phase: every phase waits for the schedule; training also takes
// the machine's GPU lock, waits until no other program uses the GPU, and is cancelled
// (errYield) when one starts to, until the phase ends.
func (d *daemon) enter(ctx context.Context, p loop.Phase) (func(), error) {
	if err := d.waitHours(ctx); err != nil {
		return nil, err
	}
	if p != loop.PhaseTrain {
		return nil, nil
	}
	gpu, err := lockWait(ctx, d.o.GPULock, time.Second, func(pid int) {
		d.setWaiting(fmt.Sprintf("for the GPU lock %s, held by pid %d (another frognano trainer)", d.o.GPULock, pid))
	})
	if err != nil {
		return nil, err
	}
	if err := d.waitGPU(ctx); err != nil {
		gpu.Close()
		return nil, err
	}
	d.setWaiting("")
	start := time.Now()
	stop := d.watchGPU(ctx)
	return func() {
		stop()
		gpu.Close()
		d.mu.Lock()
		d.st.GPUSeconds += time.Since(start).Seconds()
		d.saveLocked(true)
		d.mu.Unlock()
	}, nil
}

// others asks nvidia-smi who else uses the GPU; a failing nvidia-smi is logged and taken
// as nobody (the daemon must not stop training for good because of it).
func (d *daemon) others(ctx context.Context) []App {
	if d.o.SMI == "" {
		return nil
	}
	apps, err := QueryApps(ctx, d.o.SMI)
	if err != nil {
		if ctx.Err() == nil {
			d.o.Logf("asking who uses the GPU: %v", err)
		}
		return nil
	}
	return Others(apps, os.Getpid())
}

// waitGPU waits until no other program uses the GPU.
func (d *daemon) waitGPU(ctx context.Context) error {
	for {
		others := d.others(ctx)
		if len(others) == 0 {
			return ctx.Err()
		}
		d.setWaiting("yielding the GPU to " + describe(others))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d.o.GPUPoll):
		}
	}
}

// watchGPU cancels the running Step with errYield when another program starts to use
// the GPU; stop ends the watch.
func (d *daemon) watchGPU(ctx context.Context) (stop func()) {
	if d.o.SMI == "" {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-time.After(d.o.GPUPoll):
			}
			if others := d.others(ctx); len(others) > 0 {
				d.o.Logf("yielding: %s uses the GPU; training stops and starts again once it is free", describe(others))
				d.mu.Lock()
				if d.cancel != nil {
					d.cancel(errYield)
				}
				d.mu.Unlock()
				return
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

func describe(apps []App) string {
	var s []string
	for _, a := range apps {
		s = append(s, a.String())
	}
	return strings.Join(s, ", ")
}

// end records why the daemon stops.
func (d *daemon) end(ctx context.Context) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.st.Ended = fmt.Sprintf("stopped at %s: %v", time.Now().Format("15:04:05"), context.Cause(ctx))
	d.st.Waiting = ""
	d.o.Logf("%s", d.st.Ended)
	d.saveLocked(true)
}
