package doctor

import (
	"context"
	"fmt"
	"os"

	"github.com/frognano/frognano/finetune/trainer"
)

// checkTrainer reports the trainer's environment from the stamp `frognano finetune setup`
// leaves in it: no Python is started (importing torch takes seconds), nothing is fetched.
func checkTrainer(_ context.Context, _ *state) Result {
	if p := os.Getenv("FROGNANO_TRAINER_PYTHON"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return Result{Status: Warn, Verdict: "FROGNANO_TRAINER_PYTHON=" + p + " does not exist",
				Fix: "point it at a Python with torch, transformers and peft, or unset it and run `frognano finetune setup`"}
		}
		return Result{Status: Info, Verdict: "the trainer runs " + p + " (FROGNANO_TRAINER_PYTHON; not checked)"}
	}
	venv := trainer.VenvDir()
	f, err := trainer.ReadStamp(venv)
	if err != nil {
		return Result{Status: Info, Verdict: "the trainer's environment is not set up (only fine-tuning needs it)",
			Fix: "run `frognano finetune setup`"}
	}
	if _, err := os.Stat(trainer.Python()); err != nil {
		return Result{Status: Warn, Verdict: fmt.Sprintf("the trainer's environment %s has lost its Python", venv),
			Fix: "run `frognano finetune setup` again"}
	}
	if f.LockSHA256 != trainer.LockHash() {
		return Result{Status: Warn, Verdict: fmt.Sprintf("the trainer's environment %s was set up for other pins than this frognano's", venv),
			Fix: "run `frognano finetune setup` again"}
	}
	return Result{Status: OK, Verdict: fmt.Sprintf("%s: %s", venv, f.Summary())}
}
