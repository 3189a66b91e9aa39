package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/frognano/frognano/finetune/daemon"
)

// finetuneCommands are the steps of fine-tuning, each a row filled in by the package that
// does the work (finetune_*.go); a step not built yet says so and exits with exitNotReady.
// The order is the order of `frognano finetune --help`.
var finetuneCommands = []command{
	{"setup", "create the trainer's Python environment and check CUDA", runFinetuneSetup},
	{"synth", "synthesize verified training tasks from a repository's tests (Go, Python with pytest, JS/TS with node --test, vitest or jest)", runFinetuneSynth},
	{"rollouts", "run the agent on the tasks, a group of episodes each, and reward them with the hidden tests", runFinetuneRollouts},
	{"step", "run one iteration of the online loop: synth, rollouts, train, import, held-out gate, switch (resumable)", runFinetuneStep},
	{"start", "start fine-tuning in the background: step after step, within --hours, yielding the GPU (crash-safe)", runFinetuneStart},
	{"stop", "stop background fine-tuning (its iteration resumes at the next start)", runFinetuneStop},
	{"status", "show background fine-tuning's phase, progress and headline numbers", runFinetuneStatus},
	{"report", "write an HTML report with plots: held-out pass rate per checkpoint, reward, the band, task mix, time", runFinetuneReport},
	{"models", "list the models fine-tuning made for a repository, marking the one in use", runFinetuneModels},
	{"rollback", "switch the language server back to the previous fine-tuned model (or the base)", runFinetuneRollback},
}

func runFinetune(ctx context.Context, env Env, args []string) int {
	if len(args) > 0 && args[0] == daemon.RunStep { // hidden: the process `start` detaches
		return runFinetuneDaemonRun(ctx, env, args[1:])
	}
	return dispatch(ctx, env, args, finetuneCommands, finetuneUsage, "frognano finetune: unknown step %q; run `frognano finetune --help` for the list\n")
}

func finetuneUsage(w io.Writer) {
	fmt.Fprintf(w, "Usage: frognano finetune STEP [flags]\n\nFine-tunes the agent's model on your repository, on your GPU, offline.\n\nSteps:\n")
	listCommands(w, finetuneCommands)
	fmt.Fprintf(w, "\nRun `frognano finetune STEP --help` for a step's flags.\n")
}
