package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/frognano/frognano/agent"
	"github.com/frognano/frognano/finetune/daemon"
	"github.com/frognano/frognano/finetune/loop"
	"github.com/frognano/frognano/finetune/rollout"
	"github.com/frognano/frognano/finetune/trainer"
	"github.com/frognano/frognano/ollama"
)

// runFinetuneStep is `frognano finetune step`: one iteration of the online loop
// (finetune/loop.Step), resumed where a killed run stopped.
func runFinetuneStep(ctx context.Context, e Env, args []string) int {
	fs := newFlags(e, "finetune step", "", "Run one iteration of fine-tuning on the repository: synthesize tasks, run the model in use\n"+
		"on them, train on the groups whose rewards differ, import the result into Ollama and let the\n"+
		"held-out gate decide whether the language server switches to it. A killed run resumes where\n"+
		"it stopped; a finished one starts the next iteration.")
	settings := addStepFlags(fs, e)
	asJSON := fs.Bool("json", false, "print the loop's state as JSON at the end")
	if code, done := parse(fs, args); done {
		return code
	}
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(e.Stderr, "frognano finetune step: "+format+"\n", a...)
		return code
	}
	cfg, code, err := settings.config()
	if err != nil {
		return fail(code, "%v", err)
	}
	release, err := daemon.Exclusive(ctx, daemon.Dir(cfg.Repo))
	if err != nil {
		return fail(exitFailed, "%v", err)
	}
	defer release()
	var mu sync.Mutex
	last := ""
	cfg.Progress = func(p loop.Progress) {
		mu.Lock() // from several rollout workers at once
		defer mu.Unlock()
		line := fmt.Sprintf("iteration %d: %-8s %3.0f%%  %s", p.Iteration, p.Phase, 100*p.Fraction, p.Detail)
		if line != last {
			last = line
			fmt.Fprintf(e.Stderr, "%s\n", visible(e.Stderr, strings.TrimSpace(line)))
		}
	}
	st, err := loop.Step(ctx, cfg)
	if err != nil {
		return fail(exitFailed, "%v (run it again to resume)", err)
	}
	if *asJSON {
		b, _ := json.MarshalIndent(st, "", "  ")
		fmt.Fprintf(e.Stdout, "%s\n", b)
		return exitOK
	}
	fmt.Fprintf(e.Stdout, "iteration %d: %s\n", st.Iteration, st.Outcome)
	return exitOK
}

// stepSettings are the flags of `frognano finetune step`, which `start` shares (and saves,
// by name, for the daemon's restarts).
type stepSettings struct {
	repo, model, weights, host, quantize *string
	g, target, heldOut                   *int
}

func addStepFlags(fs *flag.FlagSet, e Env) *stepSettings {
	return &stepSettings{
		repo:     fs.String("repo", ".", "the repository (the top of its work tree)"),
		model:    fs.String("model", e.Getenv("FROGNANO_MODEL"), "the base Ollama model fine-tuning starts from (env FROGNANO_MODEL)"),
		weights:  fs.String("weights", "", "the base model's weights for the trainer: a safetensors folder or a .gguf file (required)"),
		host:     fs.String("host", e.Getenv("OLLAMA_HOST"), "Ollama address (env OLLAMA_HOST; default "+ollama.DefaultHost+")"),
		g:        fs.Int("g", 8, "episodes per task (the group)"),
		target:   fs.Int("target", 8, "training tasks to keep in the band or unsettled"),
		heldOut:  fs.Int("held-out", 20, "held-out tasks the gate evaluates on"),
		quantize: fs.String("quantize", "", "Ollama's quantization of the imported model (e.g. q4_K_M; default: the export's float16/bfloat16)"),
	}
}

// config checks the settings and makes the loop's configuration (Progress unset); on an
// error, code is the exit code to return. --repo and --weights are made absolute in place.
func (s *stepSettings) config() (cfg loop.Config, code int, err error) {
	if *s.model == "" {
		return cfg, exitUsage, errors.New("name the base model: --model NAME (an Ollama model) or FROGNANO_MODEL.")
	}
	if *s.weights == "" {
		return cfg, exitUsage, errors.New("name the base model's weights for the trainer: --weights DIR (safetensors) or --weights FILE.gguf.")
	}
	abs, err := repoPath(*s.repo)
	if err != nil {
		return cfg, exitUsage, err
	}
	*s.repo = abs
	w := trainer.Load{}
	st, err := os.Stat(*s.weights)
	if err != nil {
		return cfg, exitUsage, fmt.Errorf("--weights: %w", err)
	}
	if *s.weights, err = filepath.Abs(*s.weights); err != nil {
		return cfg, exitUsage, err
	}
	if st.IsDir() {
		w.Model = *s.weights
	} else {
		w.GGUF = *s.weights
	}
	oc := ollama.Config{Host: *s.host, Model: *s.model}.WithDefaults()
	u, err := oc.BaseURL()
	if err != nil {
		return cfg, exitUsage, err
	}
	client, err := oc.Client()
	if err != nil {
		return cfg, exitFailed, err
	}
	return loop.Config{Repo: abs, Base: *s.model, Weights: w, Client: client, Host: u.String(), Target: *s.target, HeldOut: *s.heldOut,
		Quantize: *s.quantize,
		Rollout: rollout.Options{Group: *s.g, Hosts: []rollout.Host{{Name: u.String(), Model: client}},
			Agent: agent.Options{NumCtx: oc.NumCtx, Explain: func(err error) string { return ollama.Explain(err, oc).Error() }}},
	}, 0, nil
}
