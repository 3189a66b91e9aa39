package gocache

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/frognano/frognano/agent/sandbox"
	"github.com/frognano/frognano/agent/workspace"
)

// BenchmarkGoTest is the cost of the layers to a reward run: `go test` of the module on a
// fresh copy, with the trusted layer under a new scratch layer per run ("layers") against
// one plain GOCACHE that every run shares and that is warm after the first ("shared", the
// editor's way, which a command can poison). Interleave runs of the two: the machine is
// shared.
func BenchmarkGoTest(b *testing.B) {
	dir := b.TempDir()
	for name, content := range files {
		writeTo(b, filepath.Join(dir, name), content)
	}
	trusted := trustedDst(b, files)
	if err := Build(context.Background(), dir, trusted, executable(b)); err != nil {
		b.Fatal(err)
	}
	shared := b.TempDir()
	run := func(b *testing.B, opts sandbox.Options) {
		ctx := context.Background()
		ws, err := workspace.Prepare(ctx, dir, filepath.Join(b.TempDir(), "copy"), nil)
		if err != nil {
			b.Fatal(err)
		}
		defer ws.Remove()
		opts.ReadOnly = append(opts.ReadOnly, ws.ObjectsDir())
		r, err := sandbox.NewRunner(ctx, opts)
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		if _, err := r.Run(ctx, sandbox.Cmd{Dir: ws.Root, Command: `export GOTOOLCHAIN=local GOFLAGS="$GOFLAGS -buildvcs=false"; go test -count=1 ./...`}); err != nil {
			b.Fatal(err)
		}
	}
	run(b, sandbox.Options{GoCache: shared}) // warm it
	b.Run("layers", func(b *testing.B) {
		for range b.N {
			var opts sandbox.Options
			if err := (Layers{Trusted: trusted, Scratch: filepath.Join(b.TempDir(), "scratch")}).Sandbox(&opts, executable(b)); err != nil {
				b.Fatal(err)
			}
			run(b, opts)
		}
	})
	b.Run("shared", func(b *testing.B) {
		for range b.N {
			run(b, sandbox.Options{GoCache: shared})
		}
	})
}
