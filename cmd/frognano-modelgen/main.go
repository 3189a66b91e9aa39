// Command frognano-modelgen writes a scripted GGUF model (package modelgen) for
// `frognano demo`: it reads a script.Script as JSON on stdin, writes the model to -out and
// prints the modelgen.Model (file, template, parameters) as JSON on stdout.
//
// It is a binary of its own because the GGUF writer links Ollama's ggml packages, whose
// package initialisation touches the filesystem: in frognano they made every start of
// `frognano lsp` (what an editor runs) slower and bigger for a command users run once.
// `make build` puts it next to frognano, where the demo looks for it.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/frognano/frognano/ollama/modelgen"
	"github.com/frognano/frognano/ollama/modelgen/script"
)

func main() {
	out := flag.String("out", "", "the GGUF file to write (required)")
	arch := flag.String("arch", string(script.Qwen3), "the architecture: llama or qwen3")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: frognano-modelgen -out FILE.gguf [-arch qwen3] < script.json\n\n"+
			"Writes a scripted model that replays the script (package script's Script, as JSON)\n"+
			"and prints the model's file, template and parameters as JSON.\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *out == "" || flag.NArg() != 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*out, script.Arch(*arch)); err != nil {
		fmt.Fprintf(os.Stderr, "frognano-modelgen: %v\n", err)
		os.Exit(1)
	}
}

func run(out string, arch script.Arch) error {
	var s script.Script
	dec := json.NewDecoder(os.Stdin)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return fmt.Errorf("reading the script from stdin: %w", err)
	}
	m, err := modelgen.Scripted(out, arch, s)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(m)
}
