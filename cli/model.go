package cli

import (
	"context"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/frognano/frognano/ollama"
)

func runModel(ctx context.Context, env Env, args []string) int {
	help := "Subcommands:\n  import FILE.gguf   register a FrogNano GGUF in Ollama with its chat format and settings\n  list               list the models in Ollama, marking the one frognano uses"
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintf(env.Stdout, "Usage: frognano model SUBCOMMAND [flags]\n\n%s\n", help)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	switch args[0] {
	case "import":
		return runModelImport(ctx, env, args[1:])
	case "list":
		return runModelList(ctx, env, args[1:])
	}
	fmt.Fprintf(env.Stderr, "frognano model: unknown subcommand %q\n\n%s\n", args[0], help)
	return exitUsage
}

func runModelImport(ctx context.Context, env Env, args []string) int {
	fs := newFlags(env, "model import", "FILE.gguf",
		"Register a FrogNano GGUF in Ollama under a stable name, with FrogNano's chat format\n(renderer and parser "+ollama.FrogNanoRenderer+"), stop tokens, sampling defaults and num_ctx.\nAn existing model of that name is kept unless --force is given.")
	cfg := configFlags(fs, env)
	name := fs.String("name", "", "name to register (default: --model, i.e. "+ollama.DefaultModel+")")
	force := fs.Bool("force", false, "replace a model that already has this name")
	if code, done := parse(fs, args); done {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(env.Stderr, "frognano model import: give exactly one GGUF file\n")
		return exitUsage
	}
	file := fs.Arg(0)
	c, err := cfg()
	if err != nil {
		fmt.Fprintf(env.Stderr, "frognano model import: %v\n", err)
		return exitUsage
	}
	if *name == "" {
		*name = c.Model
	}
	if _, err := os.Stat(file); err != nil {
		fmt.Fprintf(env.Stderr, "frognano model import: %v\n", err)
		return exitFailed
	}
	client, _ := c.Client()
	c.Model = *name
	if !*force {
		_, err := client.Show(ctx, &api.ShowRequest{Model: *name})
		if err == nil {
			fmt.Fprintf(env.Stderr, "frognano model import: Ollama already has a model named %s; choose another with --name, or replace it with --force\n", *name)
			return exitFailed
		}
		if p := ollama.Explain(err, c); p.Kind != ollama.KindModelMissing {
			fmt.Fprintf(env.Stderr, "frognano model import: %v\n", p)
			return exitFailed
		}
	}

	last := ""
	err = ollama.Create(ctx, client, ollama.FrogNanoRequest(*name, file, c.NumCtx), func(p ollama.Progress) {
		line := p.Status
		if p.Total > 0 {
			line = fmt.Sprintf("%s %3d%%", p.Status, p.Completed*100/p.Total)
		}
		if line != last {
			fmt.Fprintln(env.Stderr, line)
			last = line
		}
	})
	if err != nil {
		fmt.Fprintf(env.Stderr, "frognano model import: %v\n", ollama.Explain(err, c))
		return exitFailed
	}
	fmt.Fprintf(env.Stdout, "imported %s as %s (num_ctx %d). Use it with FROGNANO_MODEL=%s, or check it with `frognano doctor`.\n", file, *name, c.NumCtx, *name)
	return exitOK
}

func runModelList(ctx context.Context, env Env, args []string) int {
	fs := newFlags(env, "model list", "", "List the models in Ollama; * marks the one frognano is configured to use.")
	cfg := configFlags(fs, env)
	if code, done := parse(fs, args); done {
		return code
	}
	c, err := cfg()
	if err != nil {
		fmt.Fprintf(env.Stderr, "frognano model list: %v\n", err)
		return exitUsage
	}
	client, _ := c.Client()
	list, err := client.List(ctx)
	if err != nil {
		fmt.Fprintf(env.Stderr, "frognano model list: %v\n", ollama.Explain(err, c))
		return exitFailed
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\tNAME\tFAMILY\tPARAMETERS\tQUANTIZATION\tSIZE\tMODIFIED")
	found := false
	for _, m := range list.Models {
		mark := ""
		if sameModel(m.Name, c.Model) {
			mark, found = "*", true
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", mark, m.Name, m.Details.Family, m.Details.ParameterSize,
			m.Details.QuantizationLevel, humanBytes(m.Size), m.ModifiedAt.Format(time.DateTime))
	}
	tw.Flush()
	if !found {
		p := ollama.Explain(api.StatusError{StatusCode: 404}, c)
		fmt.Fprintf(env.Stderr, "\n%s. %s\n", p.What, p.Fix)
	}
	return exitOK
}

// sameModel compares names as Ollama does: a missing tag means ":latest".
func sameModel(a, b string) bool {
	norm := func(s string) string {
		if !strings.Contains(s[strings.LastIndex(s, "/")+1:], ":") {
			s += ":latest"
		}
		return s
	}
	return norm(a) == norm(b)
}

func humanBytes(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "kMGT"[exp])
}
