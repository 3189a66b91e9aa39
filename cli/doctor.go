package cli

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/frognano/frognano/doctor"
)

func runDoctor(ctx context.Context, env Env, args []string) int {
	fs := newFlags(env, "doctor", "", "Check Ollama, the model, num_ctx, git, the sandbox and the fine-tuning\nenvironment. Exits 1 when the agent cannot run.")
	cfg := configFlags(fs, env)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if code, done := parse(fs, args); done {
		return code
	}
	c, err := cfg()
	if err != nil {
		fmt.Fprintf(env.Stderr, "frognano doctor: %v\n", err)
		return exitUsage
	}
	report := doctor.Run(ctx, c)
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(report)
	} else {
		doctor.Print(env.Stdout, report)
	}
	if report.Failed() {
		return exitFailed
	}
	return exitOK
}
