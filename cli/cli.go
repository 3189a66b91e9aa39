// Package cli is the frognano command line: one table of subcommands, each parsing its
// own flags and calling into the package that does the work. Entry point: [Main].
package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/frognano/frognano/internal/buildinfo"
)

// Env is what a subcommand may touch of the outside world; tests supply their own.
type Env struct {
	Stdout, Stderr io.Writer
	// Getenv reads configuration variables (OLLAMA_HOST, FROGNANO_*).
	Getenv func(string) string
}

// command is one row of the table.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env Env, args []string) int
}

// commands is the table, in the order `frognano --help` lists them.
var commands []command

func init() {
	commands = []command{
		{"lsp", "serve the language server over stdio", runLSP},
		{"agent", "run the coding agent on a folder and print its diff", runAgent},
		{"finetune", "fine-tune the model on this repository (partly built: see its --help)", runFinetune},
		{"model", "import and list the models frognano uses", runModel},
		{"doctor", "check that this machine can run frognano", runDoctor},
		{"demo", "run the agent on a sample project with a failing test", runDemo},
		{"version", "print the version", runVersion},
	}
}

// Exit codes.
const (
	exitOK       = 0
	exitFailed   = 1
	exitUsage    = 2
	exitNotReady = 3 // a subcommand that is not built yet
)

// Main runs frognano with args (without the program name) and returns the exit code.
func Main(ctx context.Context, env Env, args []string) int {
	return dispatch(ctx, env, args, commands, usage, "frognano: unknown command %q; run `frognano --help` for the list\n")
}

// dispatch runs the row of table that args[0] names; no name or a help flag prints usage
// (an error without a name), and an unknown name gets unknown (a format for the name).
func dispatch(ctx context.Context, env Env, args []string, table []command, usage func(io.Writer), unknown string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(env.Stdout)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	for _, c := range table {
		if c.name == args[0] {
			return c.run(ctx, env, args[1:])
		}
	}
	fmt.Fprintf(env.Stderr, unknown, args[0])
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "frognano: a language server that puts a local coding agent behind your editor's code actions.\n\nUsage: frognano COMMAND [flags]\n\nCommands:\n")
	listCommands(w, commands)
	fmt.Fprintf(w, "\nRun `frognano COMMAND --help` for a command's flags.\n")
}

// listCommands writes one line per row of table: its name and summary.
func listCommands(w io.Writer, table []command) {
	for _, c := range table {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
}

// notYet is a subcommand that is planned but not built: it says so plainly.
func notYet(name, what string) func(context.Context, Env, []string) int {
	return func(_ context.Context, env Env, args []string) int {
		fs := newFlags(env, name, "", what+" is not available yet in this build of frognano.")
		if code, done := parse(fs, args); done {
			return code
		}
		fmt.Fprintf(env.Stderr, "frognano %s: %s is not available yet in this build of frognano (version %s).\n", name, what, version())
		return exitNotReady
	}
}

func runVersion(_ context.Context, env Env, args []string) int {
	fs := newFlags(env, "version", "", "Print frognano's version and the Ollama version it is tested with.")
	if code, done := parse(fs, args); done {
		return code
	}
	fmt.Fprintf(env.Stdout, "frognano %s (tested with Ollama %s)\n", version(), ollamaVersion)
	return exitOK
}

func version() string { return buildinfo.String() }
