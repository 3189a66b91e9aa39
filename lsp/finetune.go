package lsp

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/frognano/frognano/finetune/daemon"
	"github.com/frognano/frognano/finetune/loop"
	"github.com/frognano/frognano/finetune/registry"
	"github.com/frognano/frognano/finetune/report"
)

// This file is fine-tuning as the editors see it: its part of frognano/status and what the
// fine-tuning commands do. Each function takes explicit inputs and never sees the
// connection; command.go's handlers deliver the results.

// FineTuning is frognano/status's fineTuning part: the fine-tuning daemon of the
// workspace's repository (finetune/daemon), read from its lock and status file, and the
// headline numbers of the report's Summary (finetune/report).
type FineTuning struct {
	// State is "off" (never started for this repository), "running", or "stopped" (it ran
	// and is not running now; Ended says why, empty when it ended without a word: killed).
	State string `json:"state"`
	// Repo is the repository fine-tuning works on: the top of the workspace's work tree.
	Repo string `json:"repo"`
	PID  int    `json:"pid,omitempty"`
	// Iteration, Phase, Fraction (0 to 1) and Detail are the loop's progress as the daemon
	// last wrote it; Waiting what a running daemon waits for (the schedule, the GPU).
	Iteration int     `json:"iteration,omitempty"`
	Phase     string  `json:"phase,omitempty"`
	Fraction  float64 `json:"fraction"`
	Detail    string  `json:"detail,omitempty"`
	Waiting   string  `json:"waiting,omitempty"`
	// LastError is the latest iteration's failure (the daemon tries again after a pause).
	LastError string `json:"lastError,omitempty"`
	Ended     string `json:"ended,omitempty"`
	// Outcome is the latest finished iteration's.
	Outcome string `json:"outcome,omitempty"`
	// HeldOutNow and HeldOutStart are the held-out pass rates (0 to 1) of the model in use
	// and of the base; absent before the gate first ran.
	HeldOutNow   *float64 `json:"heldOutNow,omitempty"`
	HeldOutStart *float64 `json:"heldOutStart,omitempty"`
	// InBand and Tasks count the training tasks in the frontier's band and all of them;
	// Iterations the finished iterations, Accepted those whose model the gate took.
	InBand     int `json:"inBand"`
	Tasks      int `json:"tasks"`
	Iterations int `json:"iterations"`
	Accepted   int `json:"accepted"`
	// Problems are state files that could not be read, each saying what to do.
	Problems []string `json:"problems,omitempty"`
}

// Fine-tuning's states (FineTuning.State).
const (
	FineTuningOff     = "off"
	FineTuningRunning = "running"
	FineTuningStopped = "stopped"
)

// fineTuningStatus reads fine-tuning's state for repo, what `frognano finetune status`
// shows (daemon.Look), per status request: the editors ask every 10 s while fine-tuning
// runs. The daemon's lock and status file are read each time (they are small, and the
// progress is in them); the report's Summary comes from sums, which collects it again only
// when the loop's state or the registry changed.
func fineTuningStatus(repo, registryDir string, sums *summaryCache) *FineTuning {
	o := &daemon.Overview{Repo: repo}
	problem := func(err error) {
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			o.Problems = append(o.Problems, err.Error())
		}
	}
	dir := daemon.Dir(repo)
	var err error
	o.PID, o.Running, err = daemon.Running(dir)
	problem(err)
	o.Status, err = daemon.ReadStatus(dir)
	problem(err)
	sum, err := sums.get(repo, registryDir)
	problem(err)
	if sum != nil && sum.Started {
		o.Summary = sum
	}
	return fineTuningOf(o)
}

// fineTuningOf is the status part of an overview.
func fineTuningOf(o *daemon.Overview) *FineTuning {
	ft := &FineTuning{Repo: o.Repo, State: FineTuningOff, Problems: o.Problems}
	if o.Running {
		ft.State, ft.PID = FineTuningRunning, o.PID
	} else if o.Status != nil {
		ft.State = FineTuningStopped
	}
	if st := o.Status; st != nil {
		ft.Iteration, ft.Phase, ft.Fraction, ft.Detail = st.Iteration, string(st.Phase), st.Fraction, st.Detail
		ft.LastError, ft.Ended, ft.Outcome = st.LastError, st.Ended, st.Outcome
		if o.Running {
			// A status file outlives its daemon: what it waited for is only true while it runs.
			ft.Waiting = st.Waiting
		}
	}
	if sum := o.Summary; sum != nil {
		rate := func(p *report.PassRate) *float64 {
			if p == nil {
				return nil
			}
			return &p.Rate
		}
		ft.HeldOutNow, ft.HeldOutStart = rate(sum.HeldOutNow), rate(sum.HeldOutStart)
		ft.InBand, ft.Tasks = sum.Tasks.InBand, sum.Tasks.Training
		ft.Iterations, ft.Accepted = sum.Iterations.Done, sum.Iterations.Accepted
	}
	return ft
}

// summaryCache keeps the report's Summary of one repository between status requests.
// report.Collect reads every iteration's rollout records, which grow with the run; the
// Summary changes only when the loop's state file or the registry is replaced (both are
// written atomically, so a new file has a new modification time or size).
type summaryCache struct {
	mu  sync.Mutex // guards the fields below
	key string     // the repository and its two files' sizes and times
	sum *report.Summary
}

// get returns repo's Summary, collected again when its files changed since the last call.
func (c *summaryCache) get(repo, registryDir string) (*report.Summary, error) {
	key := repo
	for _, p := range []string{loop.StatePath(loop.DefaultDir(repo)), registry.Path(registryDir, repo)} {
		if fi, err := os.Stat(p); err == nil {
			key += fmt.Sprintf("|%d %d", fi.Size(), fi.ModTime().UnixNano())
		} else {
			key += "|-"
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sum != nil && c.key == key {
		return c.sum, nil
	}
	sum, err := report.Collect(report.Options{Repo: repo, RegistryDir: registryDir})
	if err != nil {
		return nil, err
	}
	c.key, c.sum = key, sum
	return sum, nil
}

// workspaceRepo is the repository of the workspace folder root: the top of its git work
// tree (the folder with .git), with links resolved, as `frognano finetune --repo` keys it;
// root itself when it is in no repository.
func workspaceRepo(root string) (string, error) {
	abs, err := filepath.Abs(root)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return "", err
	}
	for d := abs; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d, nil
		}
		if d == filepath.Dir(d) {
			return abs, nil
		}
	}
}

// SettingError is a setting the user must set or fix. The message begins with what to do
// and the setting's name: editors cut a long notification short, and this is what must show.
type SettingError struct {
	Setting string // the full name, e.g. frognano.finetune.weights
	To      string // what to set it to, and why
}

func (e *SettingError) Error() string { return fmt.Sprintf("set %q to %s", e.Setting, e.To) }

// startRequest is what starting fine-tuning needs: the settings that become the flags of
// `frognano finetune start`, and how to run the daemon.
type startRequest struct {
	Repo, Model, Host, Weights, Hours string
	// Frognano is the binary whose hidden `finetune daemon-run` is the daemon; Env its
	// environment (frognano's cache folder included: the daemon's folder is found there).
	Frognano string
	Env      []string
}

// startFineTuning does what `frognano finetune start` does with the editor's settings: the
// saved flags of the repository's last start (-g, --target, ...), overlaid with the model,
// host, weights and hours of the editor's settings, saved for
// the daemon's restarts, then the daemon detached (daemon.Start). The daemon checks the
// rest of the settings itself; one that is wrong makes it exit at once, and daemon.Start
// returns that with the end of its log.
func startFineTuning(r startRequest) (pid int, already bool, err error) {
	dir := daemon.Dir(r.Repo)
	if pid, running, err := daemon.Running(dir); err != nil || running {
		return pid, running, err // as the CLI: a running daemon keeps its settings
	}
	saved, err := daemon.LoadConfig(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, false, err
	}
	flags := map[string]string{}
	for k, v := range saved.Flags {
		flags[k] = v
	}
	set := func(name, v string) {
		if v != "" {
			flags[name] = v
		}
	}
	set("model", r.Model)
	set("host", r.Host)
	set("hours", r.Hours)
	// The weights are the editor's setting, never the saved ones: a start from the editor
	// trains what its settings say, and a missing setting is named rather than guessed.
	if r.Weights == "" {
		return 0, false, &SettingError{Setting: "frognano.finetune.weights",
			To: fmt.Sprintf("the weights of %s for fine-tuning's trainer (a safetensors folder or a .gguf file)", flags["model"])}
	}
	w, err := filepath.Abs(r.Weights)
	if err != nil {
		return 0, false, err
	}
	if _, err := os.Stat(w); err != nil {
		return 0, false, &SettingError{Setting: "frognano.finetune.weights", To: fmt.Sprintf("weights that can be read: %s: %v", w, errors.Unwrap(err))}
	}
	flags["weights"] = w
	if _, err := daemon.ParseHours(flags["hours"]); err != nil {
		return 0, false, &SettingError{Setting: "frognano.finetune.hours", To: "FROM-TO or nothing: " + err.Error()}
	}
	flags["repo"] = r.Repo
	if err := daemon.SaveConfig(dir, daemon.Config{Flags: flags}); err != nil {
		return 0, false, err
	}
	return daemon.Start(dir, daemon.Argv(r.Frognano, r.Repo), r.Env)
}

// stopGrace is how long Stop waits after SIGTERM before SIGKILL, as the CLI's default: the
// daemon cancels its iteration at once, and a trainer may take a while to exit.
const stopGrace = time.Minute

// stopFineTuning ends repo's daemon (daemon.Stop); PID 0 says none ran.
func stopFineTuning(ctx context.Context, repo string) (daemon.Stopped, error) {
	return daemon.Stop(ctx, daemon.Dir(repo), stopGrace)
}

// writeReport writes repo's report page (finetune/report) where `frognano finetune report`
// writes it, and returns the page's path; started is false when fine-tuning never ran
// (the page then says how to start).
func writeReport(repo, registryDir string) (path string, started bool, err error) {
	s, err := report.Collect(report.Options{Repo: repo, RegistryDir: registryDir})
	if err != nil {
		return "", false, err
	}
	path, err = report.Write(filepath.Join(loop.DefaultDir(repo), "report"), s)
	return path, s.Started, err
}
