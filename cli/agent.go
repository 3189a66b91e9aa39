package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/frognano/frognano/agent"
	"github.com/frognano/frognano/agent/workspace"
	"github.com/frognano/frognano/ollama"
)

func runAgent(ctx context.Context, env Env, args []string) int {
	fs := newFlags(env, "agent", "", "Run the coding agent on a private copy of a folder and print the diff it made.\nThe folder itself changes only with --apply, and only if its files did not change meanwhile.")
	cfg := configFlags(fs, env)
	dir := fs.String("dir", ".", "the folder to work on")
	task := fs.String("task", "", "what the agent should do (required)")
	apply := fs.Bool("apply", false, "apply the changes to --dir when the episode ends with an answer (exit done)")
	applyIncomplete := fs.Bool("apply-incomplete", false, "with --apply: apply the partial changes of an episode that did not finish (a limit, an error, a cancel) too")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	traj := fs.String("trajectory", "", "where to write the trajectory, a new file (default: a new file under the cache folder's trajectories/)")
	maxSteps := fs.Int("max-steps", 100, "most model turns")
	maxTime := fs.Duration("max-time", 30*time.Minute, "time limit for the whole episode")
	quiet := fs.Bool("quiet", false, "do not print progress")
	if code, done := parse(fs, args); done {
		return code
	}
	if strings.TrimSpace(*task) == "" {
		fmt.Fprintln(env.Stderr, "frognano agent: --task is required, e.g. --task \"fix the failing test in calc_test.go\"")
		return exitUsage
	}
	if st, err := os.Stat(*dir); err != nil || !st.IsDir() {
		fmt.Fprintf(env.Stderr, "frognano agent: --dir %s is not a folder; give the project folder the agent should work on\n", *dir)
		return exitUsage
	}
	c, err := cfg()
	if err != nil {
		fmt.Fprintf(env.Stderr, "frognano agent: %v\n", err)
		return exitUsage
	}
	trajDir := ""
	if *traj == "" {
		trajDir = filepath.Join(ollama.CacheDir(), "trajectories")
	}
	client, _ := c.Client()
	res, err := agent.Run(ctx, client, agent.Task{Dir: *dir, Instruction: *task}, agent.Options{
		Model: c.Model, NumCtx: c.NumCtx, MaxSteps: *maxSteps, MaxTime: *maxTime, Trajectory: *traj, TrajectoryDir: trajDir,
		Explain: func(err error) string { return ollama.Explain(err, c).Error() },
		OnEvent: func(ev agent.Event) {
			if !*quiet {
				printEvent(env, ev)
			}
		},
	})
	if err != nil {
		if errors.Is(err, agent.ErrNoTools) {
			fmt.Fprintf(env.Stderr, "frognano agent: %v. Import FrogNano with `frognano model import FILE.gguf` or pick a model with tool support.\n", err)
		} else {
			fmt.Fprintf(env.Stderr, "frognano agent: %v\n", ollama.Explain(err, c))
		}
		return exitFailed
	}
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(res)
	} else if res.Changes != nil && res.Changes.Diff != "" {
		fmt.Fprint(env.Stdout, visible(env.Stdout, res.Changes.Diff))
	}
	nfiles := 0
	if res.Changes != nil {
		nfiles = len(res.Changes.Files)
	}
	summary := fmt.Sprintf("%s after %d steps, %d files changed", res.Exit, res.Steps, nfiles)
	if res.Error != "" {
		summary += ": " + res.Error
	}
	fmt.Fprintf(env.Stderr, "\n%s\n", summary)
	if res.Answer != "" && !*asJSON {
		fmt.Fprintf(env.Stderr, "answer: %s\n", visible(env.Stderr, res.Answer))
	}
	fmt.Fprintf(env.Stderr, "trajectory: %s\n", res.Trajectory)
	if res.TrajectoryError != "" {
		fmt.Fprintf(env.Stderr, "frognano agent: %s\n", res.TrajectoryError)
	}
	if res.Changes != nil {
		for _, s := range res.Changes.Skipped {
			fmt.Fprintf(env.Stderr, "left out: %s: %s\n", visible(env.Stderr, s.Path), s.Why)
		}
		if tools := res.Changes.ToolSettings(); len(tools) > 0 {
			fmt.Fprintf(env.Stderr, "note: the change touches files that configure tools which may run code on their own (%s): read them before you apply\n", visible(env.Stderr, strings.Join(tools, ", ")))
		}
	}
	if *apply && res.Changes != nil && len(res.Changes.Files) > 0 {
		// Work cut short is shown, but applied only on request: the model did not say it
		// was finished, and its half-done edit may break the user's build.
		if res.Exit != agent.ExitDone && !*applyIncomplete {
			fmt.Fprintf(env.Stderr, "frognano agent: not applied: the episode ended with %s, not an answer. Review the diff above; pass --apply-incomplete as well to apply partial work.\n", res.Exit)
			return exitFailed
		}
		if err := workspace.Apply(*dir, res.Changes); err != nil {
			fmt.Fprintf(env.Stderr, "frognano agent: %v\n", err)
			return exitFailed
		}
		fmt.Fprintf(env.Stderr, "applied %d files to %s\n", nfiles, *dir)
	}
	if res.Exit != agent.ExitDone {
		return exitFailed
	}
	return exitOK
}

func printEvent(env Env, ev agent.Event) {
	switch ev.Kind {
	case agent.EventToolStart:
		fmt.Fprintf(env.Stderr, "[%d] %s\n", ev.Step, ev.Title)
	case agent.EventToolEnd:
		if ev.Failed {
			fmt.Fprintf(env.Stderr, "[%d] %s: failed\n", ev.Step, ev.Title)
		}
	case agent.EventNotice:
		fmt.Fprintf(env.Stderr, "note: %s\n", ev.Text)
	}
}
