// Command frognano is the single binary: language server, agent, fine-tuning, model
// management and diagnostics. All logic lives in package cli and below.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/frognano/frognano/cli"
	"github.com/frognano/frognano/internal/gocache"
)

func main() {
	gocache.HelperMain() // when the go command starts frognano as its GOCACHEPROG
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, cli.Env{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}, os.Args[1:])
	stop()
	os.Exit(code)
}
