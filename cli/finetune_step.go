package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/frognano/frognano/agent"
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
	repo := fs.String("repo", ".", "the repository (the top of its work tree)")
	model := fs.String("model", e.Getenv("FROGNANO_MODEL"), "the base Ollama model fine-tuning starts from (env FROGNANO_MODEL)")
	weights := fs.String("weights", "", "the base model's weights for the trainer: a safetensors folder or a .gguf file (required)")
	host := fs.String("host", e.Getenv("OLLAMA_HOST"), "Ollama address (env OLLAMA_HOST; default "+ollama.DefaultHost+")")
	g := fs.Int("g", 8, "episodes per task (the group)")
	target := fs.Int("target", 8, "training tasks to keep in the band or unsettled")
	heldOut := fs.Int("held-out", 20, "held-out tasks the gate evaluates on")
	quantize := fs.String("quantize", "", "Ollama's quantization of the imported model (e.g. q4_K_M; default: the export's float16/bfloat16)")
	asJSON := fs.Bool("json", false, "print the loop's state as JSON at the end")
	if code, done := parse(fs, args); done {
		return code
	}
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(e.Stderr, "frognano finetune step: "+format+"\n", a...)
		return code
	}
	if *model == "" {
		return fail(exitUsage, "name the base model: --model NAME (an Ollama model) or FROGNANO_MODEL.")
	}
	if *weights == "" {
		return fail(exitUsage, "name the base model's weights for the trainer: --weights DIR (safetensors) or --weights FILE.gguf.")
	}
	abs, err := filepath.Abs(*repo)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return fail(exitUsage, "%v", err)
	}
	w := trainer.Load{}
	if st, err := os.Stat(*weights); err != nil {
		return fail(exitUsage, "--weights: %v", err)
	} else if st.IsDir() {
		w.Model = *weights
	} else {
		w.GGUF = *weights
	}
	oc := ollama.Config{Host: *host, Model: *model}.WithDefaults()
	u, err := oc.BaseURL()
	if err != nil {
		return fail(exitUsage, "%v", err)
	}
	client, err := oc.Client()
	if err != nil {
		return fail(exitFailed, "%v", err)
	}
	var mu sync.Mutex
	last := ""
	cfg := loop.Config{Repo: abs, Base: *model, Weights: w, Client: client, Host: u.String(), Target: *target, HeldOut: *heldOut,
		Quantize: *quantize,
		Rollout: rollout.Options{Group: *g, Hosts: []rollout.Host{{Name: u.String(), Model: client}},
			Agent: agent.Options{NumCtx: oc.NumCtx, Explain: func(err error) string { return ollama.Explain(err, oc).Error() }}},
		Progress: func(p loop.Progress) {
			mu.Lock() // from several rollout workers at once
			defer mu.Unlock()
			line := fmt.Sprintf("iteration %d: %-8s %3.0f%%  %s", p.Iteration, p.Phase, 100*p.Fraction, p.Detail)
			if line != last {
				last = line
				fmt.Fprintf(e.Stderr, "%s\n", visible(e.Stderr, strings.TrimSpace(line)))
			}
		}}
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
