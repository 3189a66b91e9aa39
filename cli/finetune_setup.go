package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/frognano/frognano/finetune/trainer"
)

// runFinetuneSetup builds the trainer's private Python environment (finetune/trainer's
// Setup does the work; this only reports it).
func runFinetuneSetup(ctx context.Context, env Env, args []string) int {
	fs := newFlags(env, "finetune setup", "", "Create the trainer's Python environment in "+trainer.VenvDir()+"\n"+
		"(PyTorch, transformers, peft: pinned, about 5 GB; the first run downloads them, a\n"+
		"later run with the same pins returns at once), then check what torch finds: CUDA,\n"+
		"the GPUs, the dtype it will train in.")
	python := fs.String("python", "python3", "the Python 3.11+ that creates the environment")
	if code, done := parse(fs, args); done {
		return code
	}
	start := time.Now()
	found, cached, err := trainer.Setup(ctx, trainer.SetupOptions{
		BasePython: *python, Progress: env.Stderr, Terminal: isTerminal(env.Stderr),
	})
	if err != nil {
		fmt.Fprintf(env.Stderr, "frognano finetune setup: %v\n", err)
		return exitFailed
	}
	how := fmt.Sprintf("set up in %s", time.Since(start).Round(time.Second))
	if cached {
		how = "already set up for these pins"
	}
	fmt.Fprintf(env.Stdout, "trainer environment %s (%s)\n%s\n", found.Venv, how, found.Summary())
	return exitOK
}
