// Command frognano-learnbench is the learning benchmark (package finetune/learnbench): it
// runs the online fine-tuning loop for a few iterations and seeds with SmolLM2-135M on CPU
// and writes the held-out pass rate of every checkpoint, with intervals, as JSON and a PNG
// curve. `make bench-learn` runs it with its defaults; a developer command, not one users
// need, so it is a binary of its own and not a `frognano finetune` step. Set
// FROGNANO_SANDBOX_GOCACHE to a warm Go build cache (the tests' one) to spare synthesis a
// build of the standard library per seed.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/frognano/frognano/finetune/learnbench"
	"github.com/frognano/frognano/internal/cachedir"
	"github.com/frognano/frognano/internal/gocache"
)

func main() {
	gocache.HelperMain() // rewards build through the layered Go cache, whose helper is this program
	var o learnbench.Options
	flag.StringVar(&o.GGUF, "gguf", filepath.Join(cachedir.Dir(), "smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"), "SmolLM2-135M-Instruct GGUF (scripts/fetch-smollm2.sh)")
	flag.StringVar(&o.Repo, "repo", "", "git repository to synthesize tasks from (default: the calc fixture)")
	flag.StringVar(&o.Out, "out", "learnbench-out", "output folder (a run with the folder of an interrupted one resumes it)")
	flag.IntVar(&o.Seeds, "seeds", 2, "independent runs of the loop")
	flag.IntVar(&o.Iterations, "iterations", 3, "loop iterations per seed")
	flag.IntVar(&o.Group, "group", 4, "episodes per task (G)")
	flag.IntVar(&o.Tasks, "tasks", 4, "training tasks per iteration")
	flag.IntVar(&o.HeldOut, "held-out", 8, "held-out tasks the gate evaluates on")
	flag.IntVar(&o.MaxSteps, "max-steps", 4, "model turns per episode")
	flag.IntVar(&o.MaxTokensPerTurn, "max-tokens", 96, "tokens per model turn")
	flag.IntVar(&o.NumCtx, "num-ctx", 4096, "the model's context")
	flag.Float64Var(&o.Temperature, "temperature", 1, "sampling temperature of the rollouts")
	flag.Float64Var(&o.LR, "lr", 1e-3, "LoRA learning rate")
	flag.IntVar(&o.Workers, "workers", 2, "episodes at once per seed")
	flag.IntVar(&o.Threads, "threads", 1, "Ollama's num_thread for the model")
	flag.StringVar(&o.Device, "device", "cpu", "the trainer's device: cpu, cuda or auto")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: frognano-learnbench [flags]\n\n"+
			"Runs the online fine-tuning loop (synth, rollouts, train, import, held-out gate) with\n"+
			"SmolLM2-135M on CPU and writes OUT/learnbench.json and OUT/learning-curve.png.\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 0 {
		flag.Usage()
		os.Exit(2)
	}
	o.Log = os.Stderr
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := learnbench.Run(ctx, o)
	if res != nil {
		for _, p := range res.Curve {
			fmt.Printf("iteration %d: held-out pass rate %.3f [%.3f, %.3f] (%d/%d episodes, %d seeds)\n",
				p.Iteration, p.Rate, p.Low, p.High, p.Successes, p.Attempts, p.Seeds)
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "frognano-learnbench: %v\n", err)
		os.Exit(1)
	}
}
