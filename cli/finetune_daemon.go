package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/frognano/frognano/finetune/daemon"
	"github.com/frognano/frognano/finetune/report"
)

// daemonSettings are the flags only the daemon has, next to step's.
type daemonSettings struct {
	hours *string
	pause *time.Duration
}

func addDaemonFlags(fs *flag.FlagSet) *daemonSettings {
	return &daemonSettings{
		hours: fs.String("hours", "", "work only between these hours of local time, FROM-TO (e.g. 22-7 for nights; default any hour)"),
		pause: fs.Duration("pause", time.Minute, "rest between iterations (a new commit ends it)"),
	}
}

// runFinetuneStart is `frognano finetune start`: the daemon in the background, with the
// flags saved for its next starts (flags given now replace the saved ones).
func runFinetuneStart(_ context.Context, e Env, args []string) int {
	fs := newFlags(e, "finetune start", "", "Start fine-tuning in the background: iterations of `frognano finetune step` one after the\n"+
		"other, within --hours, training only when no other program uses the GPU. The flags are saved:\n"+
		"a later `start` (after a crash, a reboot) reuses them; flags given then replace the saved ones.\n"+
		"`frognano finetune status` shows its progress, `frognano finetune stop` ends it.")
	settings := addStepFlags(fs, e)
	ds := addDaemonFlags(fs)
	if code, done := parse(fs, args); done {
		return code
	}
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(e.Stderr, "frognano finetune start: "+format+"\n", a...)
		return code
	}
	repo, err := repoPath(*settings.repo)
	if err != nil {
		return fail(exitUsage, "%v", err)
	}
	dir := daemon.Dir(repo)
	if pid, running, err := daemon.Running(dir); err != nil {
		return fail(exitFailed, "%v", err)
	} else if running {
		fmt.Fprintf(e.Stdout, "fine-tuning of %s is already running (pid %d); `frognano finetune stop --repo %s` first to change its settings\n", repo, pid, repo)
		return exitOK
	}
	saved, err := daemon.LoadConfig(dir)
	if err != nil && !errors.Is(err, iofs.ErrNotExist) {
		return fail(exitFailed, "%v", err)
	}
	if err := withSaved(fs, saved.Flags); err != nil {
		return fail(exitUsage, "%v", err)
	}
	if _, code, err := settings.config(); err != nil {
		return fail(code, "%v", err)
	}
	if _, err := daemon.ParseHours(*ds.hours); err != nil {
		return fail(exitUsage, "--%v", err)
	}
	c := daemon.Config{Flags: map[string]string{}}
	fs.VisitAll(func(f *flag.Flag) { c.Flags[f.Name] = f.Value.String() })
	if err := daemon.SaveConfig(dir, c); err != nil {
		return fail(exitFailed, "%v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return fail(exitFailed, "%v", err)
	}
	pid, already, err := daemon.Start(dir, daemon.Argv(exe, repo), os.Environ())
	switch {
	case err != nil:
		return fail(exitFailed, "%v", err)
	case already:
		fmt.Fprintf(e.Stdout, "fine-tuning of %s is already running (pid %d)\n", repo, pid)
	default:
		fmt.Fprintf(e.Stdout, "fine-tuning of %s started in the background (pid %d); log: %s\n`frognano finetune status --repo %s` shows its progress\n",
			repo, pid, filepath.Join(dir, daemon.LogFile), repo)
	}
	return exitOK
}

// withSaved sets the flags not given on the command line to their saved values.
func withSaved(fs *flag.FlagSet, saved map[string]string) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for name, v := range saved {
		if !given[name] && fs.Lookup(name) != nil {
			if err := fs.Set(name, v); err != nil {
				return fmt.Errorf("the saved --%s %q: %v (give --%s again)", name, v, err, name)
			}
		}
	}
	return nil
}

// runFinetuneDaemonRun is the background process: the saved settings, then daemon.Run
// until SIGTERM (ctx).
func runFinetuneDaemonRun(ctx context.Context, e Env, args []string) int {
	fs := newFlags(e, "finetune "+daemon.RunStep, "", "The fine-tuning daemon itself; `frognano finetune start` runs it.")
	repoFlag := fs.String("repo", ".", "the repository")
	if code, done := parse(fs, args); done {
		return code
	}
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(e.Stderr, "frognano finetune %s: "+format+"\n", append([]any{daemon.RunStep}, a...)...)
		return code
	}
	repo, err := repoPath(*repoFlag)
	if err != nil {
		return fail(exitUsage, "%v", err)
	}
	dir := daemon.Dir(repo)
	saved, err := daemon.LoadConfig(dir)
	if err != nil {
		return fail(exitFailed, "%v (run `frognano finetune start` with the flags)", err)
	}
	sfs := newFlags(e, "finetune "+daemon.RunStep, "", "")
	settings := addStepFlags(sfs, e)
	ds := addDaemonFlags(sfs)
	var flags []string
	for name, v := range saved.Flags {
		if sfs.Lookup(name) != nil {
			flags = append(flags, "--"+name+"="+v)
		}
	}
	if err := sfs.Parse(flags); err != nil {
		return fail(exitUsage, "the saved settings in %s: %v (run `frognano finetune start` with the flags)", dir, err)
	}
	*settings.repo = repo
	cfg, code, err := settings.config()
	if err != nil {
		return fail(code, "%v", err)
	}
	hours, err := daemon.ParseHours(*ds.hours)
	if err != nil {
		return fail(exitUsage, "%v", err)
	}
	err = daemon.Run(ctx, daemon.Options{Dir: dir, Loop: cfg, Hours: hours, Pause: *ds.pause, SMI: daemon.FindSMI()})
	if err != nil {
		return fail(exitFailed, "%v", err)
	}
	return exitOK
}

// runFinetuneStop is `frognano finetune stop`.
func runFinetuneStop(ctx context.Context, e Env, args []string) int {
	fs := newFlags(e, "finetune stop", "", "Stop background fine-tuning: SIGTERM, then SIGKILL if it has not ended after --grace.\n"+
		"The iteration it was in resumes at the next `frognano finetune start`.")
	repoFlag := fs.String("repo", ".", "the repository")
	grace := fs.Duration("grace", time.Minute, "how long to wait after SIGTERM before SIGKILL")
	if code, done := parse(fs, args); done {
		return code
	}
	repo, err := repoPath(*repoFlag)
	if err != nil {
		fmt.Fprintf(e.Stderr, "frognano finetune stop: %v\n", err)
		return exitUsage
	}
	s, err := daemon.Stop(ctx, daemon.Dir(repo), *grace)
	switch {
	case err != nil:
		fmt.Fprintf(e.Stderr, "frognano finetune stop: %v\n", err)
		return exitFailed
	case s.PID == 0:
		fmt.Fprintf(e.Stdout, "fine-tuning of %s is not running\n", repo)
	case s.Killed:
		fmt.Fprintf(e.Stdout, "stopped fine-tuning of %s (pid %d): it did not end within %v of SIGTERM and was killed; the next start resumes its iteration\n", repo, s.PID, *grace)
	default:
		fmt.Fprintf(e.Stdout, "stopped fine-tuning of %s (pid %d) in %v; the next start resumes its iteration\n", repo, s.PID, s.Took.Round(100*time.Millisecond))
	}
	return exitOK
}

// runFinetuneStatus is `frognano finetune status`.
func runFinetuneStatus(_ context.Context, e Env, args []string) int {
	fs := newFlags(e, "finetune status", "", "Show background fine-tuning's progress and headline numbers.")
	repoFlag := fs.String("repo", ".", "the repository")
	asJSON := fs.Bool("json", false, "print it as JSON")
	if code, done := parse(fs, args); done {
		return code
	}
	repo, err := repoPath(*repoFlag)
	if err != nil {
		fmt.Fprintf(e.Stderr, "frognano finetune status: %v\n", err)
		return exitUsage
	}
	o := daemon.Look(repo, "", "", "")
	if *asJSON {
		b, _ := json.MarshalIndent(o, "", "  ")
		fmt.Fprintf(e.Stdout, "%s\n", b)
		return exitOK
	}
	printOverview(e.Stdout, o, time.Now())
	return exitOK
}

// printOverview writes the status for a person.
func printOverview(w io.Writer, o *daemon.Overview, now time.Time) {
	st := o.Status
	switch {
	case o.Running && st != nil && st.PID == o.PID:
		fmt.Fprintf(w, "fine-tuning %s: running (pid %d) since %s\n", o.Repo, o.PID, st.Started.Local().Format("Jan 2 15:04"))
	case o.Running:
		fmt.Fprintf(w, "fine-tuning %s: running (pid %d)\n", o.Repo, o.PID)
	case st != nil && st.Ended != "":
		fmt.Fprintf(w, "fine-tuning %s: not running (%s); `frognano finetune start` resumes it\n", o.Repo, st.Ended)
	case st != nil:
		fmt.Fprintf(w, "fine-tuning %s: not running (pid %d ended without a word at about %s: killed?); `frognano finetune start` resumes it\n",
			o.Repo, st.PID, st.Updated.Local().Format("Jan 2 15:04"))
	default:
		fmt.Fprintf(w, "fine-tuning %s: not running, never started; `frognano finetune start --repo %s --model M --weights W` starts it\n", o.Repo, o.Repo)
	}
	if st != nil && st.Phase != "" {
		fmt.Fprintf(w, "  iteration %d  %-8s %s %3.0f%%  %s\n", st.Iteration, st.Phase, bar(st.Fraction, 20), 100*st.Fraction, visible(w, st.Detail))
	}
	if o.Running && st != nil && st.Waiting != "" {
		fmt.Fprintf(w, "  waiting: %s\n", st.Waiting)
	}
	rate := func(p *report.PassRate) string {
		if p == nil {
			return "–"
		}
		return fmt.Sprintf("%.0f%% (%d of %d episodes, 95%% %.0f–%.0f%%)", 100*p.Rate, p.Successes, p.Attempts, 100*p.Low, 100*p.High)
	}
	if sum := o.Summary; sum != nil {
		fmt.Fprintf(w, "  held-out pass rate: %s now, %s at the start\n", rate(sum.HeldOutNow), rate(sum.HeldOutStart))
		fmt.Fprintf(w, "  tasks in the band: %d of %d training tasks (%d held out)\n", sum.Tasks.InBand, sum.Tasks.Training, sum.Tasks.HeldOut)
		fmt.Fprintf(w, "  iterations: %d finished, %d accepted\n", sum.Iterations.Done, sum.Iterations.Accepted)
	} else {
		fmt.Fprintf(w, "  no iteration yet: no pass rates, no tasks\n")
	}
	if st != nil {
		fmt.Fprintf(w, "  GPU time: %v\n", (time.Duration(st.GPUSeconds) * time.Second).Round(time.Second))
		if st.GPU != "" {
			fmt.Fprintf(w, "  GPU sharing: %s\n", st.GPU)
		}
	}
	if o.Model != "" {
		fmt.Fprintf(w, "  model in use: %s\n", o.Model)
	}
	if st != nil && st.Outcome != "" {
		fmt.Fprintf(w, "  latest: %s\n", visible(w, st.Outcome))
	}
	if st != nil && st.LastError != "" {
		fmt.Fprintf(w, "  last error (%s ago): %s\n", now.Sub(st.ErrorAt).Round(time.Second), visible(w, st.LastError))
	}
	for _, p := range o.Problems {
		fmt.Fprintf(w, "  problem: %s\n", p)
	}
}

// bar is a progress bar of width cells for a fraction.
func bar(f float64, width int) string {
	n := int(f*float64(width) + 0.5)
	n = max(0, min(n, width))
	return "[" + strings.Repeat("#", n) + strings.Repeat("-", width-n) + "]"
}

// repoPath is a repository flag made absolute with links resolved, as the registry and
// the loop key it.
func repoPath(repo string) (string, error) {
	abs, err := filepath.Abs(repo)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	return abs, err
}
