package cli

import (
	"errors"
	"flag"
	"fmt"
	"strconv"

	"github.com/frognano/frognano/ollama"
)

const ollamaVersion = ollama.Version

func newFlags(env Env, name, argsUsage, help string) *flag.FlagSet {
	fs := flag.NewFlagSet("frognano "+name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.Usage = func() {
		fmt.Fprintf(env.Stdout, "Usage: frognano %s [flags] %s\n\n%s\n", name, argsUsage, help)
		hasFlags := false
		fs.VisitAll(func(*flag.Flag) { hasFlags = true })
		if hasFlags {
			fmt.Fprintf(env.Stdout, "\nFlags:\n")
			fs.SetOutput(env.Stdout)
			fs.PrintDefaults()
			fs.SetOutput(env.Stderr)
		}
	}
	return fs
}

// parse parses args; done says the command should return code now (help or a bad flag).
func parse(fs *flag.FlagSet, args []string) (code int, done bool) {
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return exitOK, true
	case err != nil:
		return exitUsage, true
	}
	return 0, false
}

// configFlags adds --host, --model and --num-ctx, whose defaults come from the
// environment; call get after parsing.
func configFlags(fs *flag.FlagSet, env Env) (get func() (ollama.Config, error)) {
	host := fs.String("host", env.Getenv("OLLAMA_HOST"), "Ollama address (env OLLAMA_HOST; default "+ollama.DefaultHost+")")
	model := fs.String("model", env.Getenv("FROGNANO_MODEL"), "model name (env FROGNANO_MODEL; default "+ollama.DefaultModel+")")
	numCtx := fs.String("num-ctx", env.Getenv("FROGNANO_NUM_CTX"), "context window in tokens, sent on every request (env FROGNANO_NUM_CTX; default "+strconv.Itoa(ollama.DefaultNumCtx)+")")
	return func() (ollama.Config, error) {
		c := ollama.Config{Host: *host, Model: *model}
		if *numCtx != "" {
			n, err := strconv.Atoi(*numCtx)
			if err != nil || n <= 0 {
				return c, fmt.Errorf("num_ctx %q is not a positive number of tokens", *numCtx)
			}
			c.NumCtx = n
		}
		c = c.WithDefaults()
		_, err := c.BaseURL()
		return c, err
	}
}
