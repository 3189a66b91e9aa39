package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/frognano/frognano/demo"
)

func runDemo(ctx context.Context, env Env, args []string) int {
	fs := newFlags(env, "demo", "", "Run the agent on a sample Go project with a failing test and print the diff and\nthe test result. Uses your Ollama when it has the configured model; otherwise\nstarts a private Ollama with a scripted demo model (which only shows the pipeline).")
	cfg := configFlags(fs, env)
	keep := fs.Bool("keep", false, "keep the sample project and logs instead of deleting them")
	if code, done := parse(fs, args); done {
		return code
	}
	c, err := cfg()
	if err != nil {
		fmt.Fprintf(env.Stderr, "frognano demo: %v\n", err)
		return exitUsage
	}
	dir, err := os.MkdirTemp("", "frognano-demo-")
	if err != nil {
		fmt.Fprintf(env.Stderr, "frognano demo: %v\n", err)
		return exitFailed
	}
	if *keep {
		fmt.Fprintf(env.Stdout, "Keeping everything in %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	if err := demo.Run(ctx, demo.Options{Config: c, Out: env.Stdout, Err: env.Stderr, WorkDir: dir, Keep: *keep}); err != nil {
		fmt.Fprintf(env.Stderr, "frognano demo: %v\n", err)
		return exitFailed
	}
	return exitOK
}
