// Command devserver starts what the VS Code end-to-end test needs from the Go side, for
// manual runs of editors/vscode/test/run-e2e.sh: a private Ollama serving the scripted demo
// model, and the demo's sample project (a failing TestAdd). It prints the environment for
// the e2e script as KEY=VALUE lines, then stays up until interrupted.
//
//	cd /work/main && go run ./editors/vscode/test/devserver -dir /tmp/fn-dev
//
// The Go test that runs the e2e under CI sets the same variables itself.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/frognano/frognano/demo"
	"github.com/frognano/frognano/ollama"
	"github.com/frognano/frognano/ollama/modelgen"
)

func main() {
	dir := flag.String("dir", "", "folder for the server's state and the sample project (default: a new temporary folder)")
	model := flag.String("model", "fixer", "name of the scripted model")
	flag.Parse()
	if *dir == "" {
		d, err := os.MkdirTemp("", "frognano-devserver-")
		if err != nil {
			log.Fatal(err)
		}
		*dir = d
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	bin, err := ollama.FindBinary()
	if err != nil {
		log.Fatal(err)
	}
	srv, err := ollama.StartServer(ctx, bin, filepath.Join(*dir, "ollama"))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Stop()
	m, err := modelgen.Scripted(filepath.Join(*dir, "scripted.gguf"), modelgen.Qwen3, demo.Script())
	if err != nil {
		log.Fatal(err)
	}
	err = ollama.Create(ctx, srv.Client, ollama.CreateRequest{
		Name: *model, GGUF: m.Path, Template: m.Template, Renderer: m.Renderer, Parser: m.Parser, Parameters: m.Parameters,
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	project := filepath.Join(*dir, "project")
	if err := demo.WriteSample(ctx, project); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("OLLAMA_HOST=%s\nFROGNANO_MODEL=%s\nFROGNANO_NUM_CTX=16384\nFROGNANO_E2E_PROJECT=%s\n", srv.Host, *model, project)
	fmt.Println("ready")

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
}
