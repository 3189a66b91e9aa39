package demo

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/frognano/frognano/agent"
	"github.com/frognano/frognano/agent/workspace"
)

// Instruction is the task the demo gives the agent.
const Instruction = "The test TestAdd fails. Find the bug and fix it so that `go test ./...` passes."

// runAgent hands the task to the agent through agent.Run, the entry point the language
// server uses too, then applies the result to the sample project and runs its tests.
func runAgent(ctx context.Context, o Options, m *modelChoice, project string) error {
	res, err := agent.Run(ctx, m.client, agent.Task{Dir: project, Instruction: Instruction}, agent.Options{
		Model: m.cfg.Model, NumCtx: m.cfg.NumCtx, MaxSteps: 30,
		WorkDir:    filepath.Join(o.WorkDir, "agent"),
		Trajectory: filepath.Join(o.WorkDir, "trajectory.jsonl"),
		OnEvent: func(ev agent.Event) {
			switch ev.Kind {
			case agent.EventToolStart:
				fmt.Fprintf(o.Out, "  [step %d] %s\n", ev.Step, ev.Title)
			case agent.EventNotice:
				fmt.Fprintf(o.Out, "  note: %s\n", ev.Text)
			}
		},
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "\nAgent finished: %s after %d steps.\n", res.Exit, res.Steps)
	if res.Error != "" {
		fmt.Fprintf(o.Out, "  %s\n", res.Error)
	}
	if res.Answer != "" {
		fmt.Fprintf(o.Out, "Answer: %s\n", res.Answer)
	}
	if res.Changes == nil || len(res.Changes.Files) == 0 {
		fmt.Fprintf(o.Out, "The agent changed no files.\n")
		return nil
	}
	fmt.Fprintf(o.Out, "\nDiff:\n%s\n", indent(res.Changes.Diff))
	if err := workspace.Apply(project, res.Changes); err != nil {
		return err
	}
	out, terr := goTest(ctx, project)
	verdict := "PASS"
	if terr != nil {
		verdict = "still FAILING"
	}
	fmt.Fprintf(o.Out, "$ go test ./...  (after applying the diff: %s)\n%s", verdict, indent(out))
	if o.Keep {
		fmt.Fprintf(o.Out, "\nTrajectory: %s\n", res.Trajectory)
	} else {
		fmt.Fprintf(o.Out, "\nRun `frognano demo --keep` to keep the project and the agent's trajectory.\n")
	}
	return nil
}
