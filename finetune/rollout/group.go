package rollout

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/frognano/frognano/finetune/trainer"
)

// BuildGroup turns a finished group's episodes (a Summary of Run's output folder out) into
// the trainer's rollouts with [Build], each with its episode's reward and the task's id as
// group. Failed episodes (Record.Error) are left out, and so is an episode that is not
// token-exact: its *Mismatch is returned in dropped, so that the caller can say how many
// and why. Other errors (a record or trajectory that cannot be read, the tokenizer) end it.
func BuildGroup(ctx context.Context, tok Tokenizer, f *Format, out string, s *Summary) (rollouts []trainer.Rollout, dropped []error, err error) {
	for i := range s.Episodes {
		rec, err := ReadRecord(out, s.Task, i)
		if err != nil {
			return nil, nil, err
		}
		if !rec.Trainable() {
			continue
		}
		ep, err := Read(filepath.Join(out, rec.Trajectory))
		if err != nil {
			return nil, nil, err
		}
		rs, _, err := Build(ctx, tok, f, ep, *rec.Reward, s.Task)
		var mm *Mismatch
		if errors.As(err, &mm) {
			dropped = append(dropped, fmt.Errorf("task %s episode %d: %w", s.Task, i, mm))
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		rollouts = append(rollouts, rs...)
	}
	return rollouts, dropped, nil
}
