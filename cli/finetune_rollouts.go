package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/frognano/frognano/agent"
	"github.com/frognano/frognano/finetune/rollout"
	"github.com/frognano/frognano/finetune/task"
	"github.com/frognano/frognano/internal/cachedir"
	"github.com/frognano/frognano/ollama"
)

// runFinetuneRollouts is `frognano finetune rollouts`: finetune/rollout.Run on the tasks
// of a repository's store, with a line per episode on a terminal and a table (or JSON) of
// the groups.
func runFinetuneRollouts(ctx context.Context, e Env, args []string) int {
	fs := newFlags(e, "finetune rollouts", "", "Run the agent on the repository's synthesized tasks (`frognano finetune synth`), a group\n"+
		"of episodes per task, and reward each with the task's hidden tests. Records and trajectories\n"+
		"go to --out; a second run with the same --out resumes (finished episodes are kept).")
	repo := fs.String("repo", ".", "the repository whose tasks to run")
	store := fs.String("store", "", "the task store folder (default: the repository's, as synth writes it)")
	model := fs.String("model", e.Getenv("FROGNANO_MODEL"), "the Ollama model (the checkpoint) to run (env FROGNANO_MODEL)")
	hosts := fs.String("host", e.Getenv("OLLAMA_HOST"), "Ollama address, or several separated by commas (env OLLAMA_HOST; default "+ollama.DefaultHost+")")
	g := fs.Int("g", 8, "episodes per task (the group)")
	workers := fs.Int("workers", 0, "episodes at once per host (default OLLAMA_NUM_PARALLEL, else 1)")
	limit := fs.Int("tasks", 0, "run the first N tasks only (0: all)")
	out := fs.String("out", "", "the output folder (default: finetune/rollouts/<repository hash>/<model> in frognano's cache folder)")
	temp := fs.Float64("temperature", 1, "sampling temperature")
	maxSteps := fs.Int("max-steps", 0, "model turns per episode (default 100)")
	asJSON := fs.Bool("json", false, "print the group summaries as JSON instead of the table")
	if code, done := parse(fs, args); done {
		return code
	}
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(e.Stderr, "frognano finetune rollouts: "+format+"\n", a...)
		return code
	}
	if *model == "" {
		return fail(exitUsage, "name the model to run: --model NAME (an Ollama model) or FROGNANO_MODEL.")
	}
	abs, err := filepath.Abs(*repo)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return fail(exitUsage, "%v", err)
	}
	if *store == "" {
		*store = task.DefaultDir(abs)
	}
	tasks, err := (&task.Store{Dir: *store}).List()
	if err != nil || len(tasks) == 0 {
		return fail(exitFailed, "no tasks in %s (%v): make some with `frognano finetune synth --repo %s`", *store, err, *repo)
	}
	if *limit > 0 && *limit < len(tasks) {
		tasks = tasks[:*limit]
	}
	if *out == "" {
		sum := sha256.Sum256([]byte(abs))
		*out = filepath.Join(cachedir.Dir(), "finetune", "rollouts", hex.EncodeToString(sum[:8]), strings.NewReplacer("/", "_", ":", "_").Replace(*model))
	}
	cfg := ollama.Config{Model: *model}.WithDefaults()
	opts := rollout.Options{Model: *model, Out: *out, Group: *g, Workers: *workers,
		Agent: agent.Options{NumCtx: cfg.NumCtx, MaxSteps: *maxSteps, Temperature: agent.Temp(*temp),
			Explain: func(err error) string { return ollama.Explain(err, cfg).Error() }}}
	for _, h := range strings.Split(*hosts, ",") {
		c := ollama.Config{Host: strings.TrimSpace(h)}
		u, err := c.BaseURL()
		if err != nil {
			return fail(exitUsage, "%v", err)
		}
		client, _ := c.Client()
		opts.Hosts = append(opts.Hosts, rollout.Host{Name: u.String(), Model: client})
	}
	if !*asJSON {
		var mu sync.Mutex
		done, total := 0, len(tasks)**g
		opts.OnRecord = func(r *rollout.Record) {
			mu.Lock()
			defer mu.Unlock()
			done++
			what := "error: " + r.Error
			if r.Trainable() {
				what = fmt.Sprintf("reward %g", *r.Reward)
			}
			fmt.Fprintf(e.Stderr, "%s\n", visible(e.Stderr, fmt.Sprintf("[%d/%d at most] task %s episode %d on %s: %s (%.1f s)", done, total, r.Task, r.Episode, r.Host, what, r.Timings.Total)))
		}
	}
	sums, err := rollout.Run(ctx, tasks, opts)
	if err != nil {
		return fail(exitFailed, "%v (finished episodes are kept in %s; run again to resume)", err, *out)
	}
	if *asJSON {
		b, _ := json.MarshalIndent(sums, "", "  ")
		fmt.Fprintf(e.Stdout, "%s\n", b)
		return exitOK
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tREWARDS\tMEAN\tERRORS")
	for _, s := range sums {
		var rs []string
		for _, r := range s.Rewards {
			if r == nil {
				rs = append(rs, "err")
			} else {
				rs = append(rs, fmt.Sprintf("%g", *r))
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%d\n", s.Task, strings.Join(rs, " "), s.Mean, s.Errors)
	}
	tw.Flush()
	fmt.Fprintf(e.Stdout, "\nRecords and trajectories: %s\n", *out)
	return exitOK
}
