package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/frognano/frognano/finetune/env"
	"github.com/frognano/frognano/finetune/synth"
	"github.com/frognano/frognano/finetune/task"
	"github.com/frognano/frognano/ollama"
)

// synthAliases are the short names --synth also takes.
var synthAliases = map[string]string{"mutate": synth.SynthMutation, "remove": synth.SynthRemoval, "combine": synth.SynthCombined}

// runFinetuneSynth is `frognano finetune synth`: finetune/synth on a repository, with
// progress on a terminal and a summary (a table, or JSON).
func runFinetuneSynth(ctx context.Context, e Env, args []string) int {
	fs := newFlags(e, "finetune synth", "", "Synthesize verified training tasks from a repository's own tests: bugs made by\n"+
		"procedural mutations, removed function bodies, reverted past commits, the agent itself\n"+
		"(--model) and pairs of those combined, each kept only if its tests prove it.\n"+
		"The repository is only read; tasks go to frognano's cache folder.")
	repo := fs.String("repo", ".", "the repository (its HEAD commit is used; uncommitted changes are not)")
	n := fs.Int("n", 20, "how many valid tasks to make")
	asJSON := fs.Bool("json", false, "print a machine-readable summary instead of the table")
	seed := fs.Uint64("seed", 1, "orders the candidates; the same seed on the same commit gives the same tasks")
	store := fs.String("store", "", "the task store folder (default: finetune/tasks/<repository hash> in frognano's cache folder)")
	synths := fs.String("synthesizers", "mutation,removal,history,combined", "which synthesizers to use: "+strings.Join(synth.Synthesizers, ", ")+" (model needs --model)")
	fs.StringVar(synths, "synth", "mutation,removal,history,combined", "the same as --synthesizers")
	hint := fs.Int("hint", synth.HintOutput, "the hint level of each task's issue: 0 names file, function and expected behaviour; 1 only the failing tests' output; 2 a user's symptom written by the model (needs --model)")
	symptoms := fs.Bool("symptoms", false, "also write every task's level-2 issue with the model (one model call per task; needs --model)")
	model := fs.String("model", e.Getenv("FROGNANO_MODEL"), "the Ollama model for the model synthesizer and level-2 issues (env FROGNANO_MODEL; none by default)")
	host := fs.String("host", e.Getenv("OLLAMA_HOST"), "Ollama address (env OLLAMA_HOST; default "+ollama.DefaultHost+")")
	modelTries := fs.Int("model-tries", 0, "how many agent episodes the model synthesizer runs at most (default: --n)")
	naive := fs.Bool("compare-naive", false, "validate the same candidates again the naive way (whole suite per candidate) and report the speed-up")
	fresh := fs.Bool("fresh-env", false, "run the test suite again even if this commit's results are cached")
	timeout := fs.Duration("package-timeout", 2*time.Minute, "a package's tests running longer count as hung")
	lazy := fs.Bool("lazy-confirm", false, "leave the candidates the mutation switch accepts unconfirmed (in the store's screened/ folder, not tasks) until --confirm")
	confirm := fs.Bool("confirm", false, "confirm the store's screened candidates of HEAD as plain patches (tasks or rejected), then stop")
	if code, done := parse(fs, args); done {
		return code
	}
	opts := synth.Options{N: *n, Seed: *seed, StoreDir: *store, CompareNaive: *naive, LazyConfirm: *lazy,
		Env: env.Options{Fresh: *fresh, PackageTimeout: *timeout}}
	for _, s := range strings.Split(*synths, ",") {
		s = strings.TrimSpace(s)
		if full, ok := synthAliases[s]; ok {
			s = full
		}
		if !slices.Contains(synth.Synthesizers, s) {
			fmt.Fprintf(e.Stderr, "frognano finetune synth: unknown synthesizer %q (there are %s)\n", s, strings.Join(synth.Synthesizers, ", "))
			return exitUsage
		}
		opts.Synthesizers = append(opts.Synthesizers, s)
	}
	opts.HintLevel, opts.ModelTries = *hint, *modelTries
	if *model != "" {
		cfg := ollama.Config{Host: *host, Model: *model}.WithDefaults()
		client, err := cfg.Client()
		if err != nil {
			fmt.Fprintf(e.Stderr, "frognano finetune synth: %v\n", err)
			return exitUsage
		}
		opts.Model, opts.ModelName, opts.ModelNumCtx = client, cfg.Model, cfg.NumCtx
		if *symptoms || *hint == synth.HintSymptom {
			opts.IssueModel, opts.IssueModelName = client, cfg.Model
		}
	} else if *symptoms {
		fmt.Fprintln(e.Stderr, "frognano finetune synth: --symptoms needs a model to write them: pass --model NAME (an Ollama model) or set FROGNANO_MODEL.")
		return exitUsage
	}
	if isTerminal(e.Stderr) && !*asJSON {
		opts.Progress = progressLine(e.Stderr)
	}
	run := synth.Run
	if *confirm {
		run = func(ctx context.Context, repo string, opts synth.Options) (*synth.Summary, error) {
			return synth.Confirm(ctx, repo, nil, opts)
		}
	}
	sum, err := run(ctx, *repo, opts)
	if isTerminal(e.Stderr) && !*asJSON {
		fmt.Fprint(e.Stderr, "\r\033[K")
	}
	if err != nil {
		fmt.Fprintf(e.Stderr, "frognano finetune synth: %s\n", explainSynth(*repo, err))
		return exitFailed
	}
	if *asJSON {
		b, _ := json.MarshalIndent(sum, "", "  ")
		fmt.Fprintf(e.Stdout, "%s\n", b)
		return exitOK
	}
	printSynthSummary(e.Stdout, sum)
	return exitOK
}

// progressLine redraws one line: the phase, candidates done of all, valid tasks so far.
func progressLine(w io.Writer) func(synth.Progress) {
	return func(p synth.Progress) {
		line := p.Phase
		if p.Total > 0 {
			const width = 20
			fill := p.Done * width / p.Total
			line = fmt.Sprintf("%-11s [%s%s] %d/%d candidates, %d valid", p.Phase,
				strings.Repeat("#", fill), strings.Repeat(".", width-fill), p.Done, p.Total, p.Valid)
		}
		if p.Text != "" {
			line += " · " + p.Text
		}
		if len(line) > 110 {
			line = line[:107] + "..."
		}
		fmt.Fprintf(w, "\r\033[K%s", visible(w, line))
	}
}

// explainSynth is the one sentence a person reads when synthesis cannot run.
func explainSynth(repo string, err error) string {
	switch {
	case errors.Is(err, env.ErrNotRepository):
		return repo + " is not a git repository: every task is a patch on a commit, so run this in a repository with at least one commit."
	case errors.Is(err, env.ErrNoCommit):
		return repo + " has no commit yet: commit your code and its tests first, since every task is a patch on a commit."
	case errors.Is(err, env.ErrUnsupported):
		return "cannot synthesize tasks here: " + strings.TrimPrefix(err.Error(), env.ErrUnsupported.Error()+": ") + "."
	case errors.Is(err, env.ErrNoTests):
		return "no tests found at HEAD of " + repo + ": tasks are verified by the repository's own tests, so add some (go test ./..., pytest or the package's test script must find them) and commit them."
	case errors.Is(err, env.ErrNonePass):
		return "no test passes at HEAD of " + repo + " (" + err.Error() + "): a task must break a passing test, so fix the suite and commit first."
	case errors.Is(err, env.ErrSuiteCrashed):
		return "the test suite did not run in the sandbox (" + err.Error() + "); check that the suite works offline: `go test ./...` with every module in the module cache, pytest from the repository's .venv with its dependencies installed, or the test script with node_modules installed."
	case errors.Is(err, synth.ErrNoModel):
		return "the model synthesizer runs the agent to write bugs, and no model is configured: pass --model NAME (an Ollama model) or set FROGNANO_MODEL, or leave model out of --synth."
	case errors.Is(err, synth.ErrNoIssueModel):
		return "hint level 2 is a symptom the model writes, and no model is configured: pass --model NAME (an Ollama model) or set FROGNANO_MODEL, or choose --hint 0 or 1."
	case errors.Is(err, context.Canceled):
		return "cancelled."
	}
	return err.Error()
}

func printSynthSummary(w io.Writer, s *synth.Summary) {
	envNote := fmt.Sprintf("%.1f s", s.EnvSeconds)
	if s.EnvCached {
		envNote = "cached"
	}
	fmt.Fprintf(w, "Synthesized %d valid tasks from %s at %.12s in %.1f s (environment: %s).\n", s.Valid, s.Repo, s.Commit, s.Seconds, envNote)
	if s.Dirty {
		fmt.Fprintf(w, "Uncommitted changes were left out: tasks are based on the commit.\n")
	}
	fmt.Fprintf(w, "Tests at that commit: %d passing; left out: %d failing, %d flaky, %d hung.\n\n",
		s.Tests.Passing, s.Tests.Failing, s.Tests.Flaky, s.Tests.Hung)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "synthesizer\tcandidates\tvalidated\tvalid\trejected")
	for _, name := range sortedKeys(s.Candidates) {
		var why []string
		for _, reason := range sortedKeys(s.RejectedBy[name]) {
			why = append(why, fmt.Sprintf("%s %d", reason, s.RejectedBy[name][reason]))
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\n", name, s.Candidates[name], s.ValidatedBy[name], s.ValidBy[name], strings.Join(why, ", "))
	}
	tw.Flush()
	for _, n := range s.Notes {
		fmt.Fprintf(w, "Note: %s.\n", n)
	}
	if s.IssueErrors > 0 {
		fmt.Fprintf(w, "The model could not write the symptom of %d tasks; they got the nearest hint level instead.\n", s.IssueErrors)
	}
	if len(s.Rejected) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(tw, "rejected because\tcandidates")
		for _, reason := range sortedKeys(s.Rejected) {
			fmt.Fprintf(tw, "%s\t%d\n", reason, s.Rejected[reason])
		}
		tw.Flush()
	}
	if s.Screened > 0 {
		fmt.Fprintf(w, "\n%d more candidates passed the switch and wait, unconfirmed, in %s (not tasks until `frognano finetune synth --confirm`).\n",
			s.Screened, filepath.Join(s.Store, task.ScreenedDir))
	}
	fmt.Fprintf(w, "\nMedian validation time %.2f s per candidate; %.1f valid tasks per minute.\n", s.MedianSeconds, s.TasksPerMinute)
	if s.CoverageSeconds > 0 {
		fmt.Fprintf(w, "The coverage run that set aside code no passing test runs took %.1f s (cached by commit).\n", s.CoverageSeconds)
	}
	if nv := s.Naive; nv != nil {
		agree := "same verdicts"
		if !nv.Agree {
			agree = "verdicts differ"
		}
		fmt.Fprintf(w, "Naive validation of the same %d candidates: %.1f s vs %.1f s, %.1fx faster (%s).\n",
			nv.Candidates, nv.NaiveSeconds, nv.SwitchSeconds, nv.Speedup, agree)
		fmt.Fprintf(w, "Of the %.1f s, screening took %.1f s (%.1fx faster than naive) and %d plain confirmations %.1f s.\n",
			nv.SwitchSeconds, nv.ScreenSeconds, nv.ScreenSpeedup, nv.Confirmed, nv.ConfirmSeconds)
	}
	fmt.Fprintf(w, "Tasks: %s\n", s.Store)
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
