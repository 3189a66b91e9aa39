package gocache

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/frognano/frognano/agent/sandbox"
	"github.com/frognano/frognano/agent/workspace"
)

// BuildCommand compiles every package's tests and what they import, and runs nothing: with
// -exec the test binaries are handed to /bin/true, which also keeps go from caching a test
// result. The environment is the one test runs use (finetune/env Copy.Run). It builds in
// the folder of every Go module (finetune/env.Modules' rule: no vendor, testdata,
// node_modules or hidden folders), with the go.work at the top when there is one, since
// ./... at the top is the top's module only, and nothing when the top has none.
const BuildCommand = `export GOTOOLCHAIN=local GOFLAGS="$GOFLAGS -buildvcs=false"; [ -f go.work ] || export GOWORK=off
find . \( -name vendor -o -name testdata -o -name node_modules -o -name '.?*' \) -prune -o -name go.mod -type f -print | while read -r m; do
	(cd "$(dirname "$m")" && go test -vet=off -exec=/bin/true -run='^$' ./... </dev/null)
done`

// Build makes the trusted layer of the checkout in dir (the base commit, as frognano
// exported it: finetune/env.Export) at dst, unless dst exists already. It runs BuildCommand
// in the sandbox on a private copy of dir, with the helper (exe: this program) writing into
// a new folder that becomes dst only once the build is over: no command sees it before,
// and none can write it after (where writes are confined, see Layers.Sandbox).
//
// What the layer holds is keyed by the files' paths, so it serves what lies at fixed paths
// (the standard library, the module cache) and not the repository's own packages, which
// every run compiles again on its copy; those are the cheap part. A package that does not
// compile is left out; Build fails only when nothing was built at all.
//
// The layer is sealed (seal) before it is renamed into place: frognano's own, its files
// read-only. A folder at dst that is not sealed (an older frognano's, or one a command put
// there where it could write) is removed and built again.
func Build(ctx context.Context, dir, dst, exe string) error {
	if why := sealed(dst); why == nil {
		return nil
	} else if !errors.Is(why, fs.ErrNotExist) {
		if err := os.RemoveAll(dst); err != nil { // a link is removed, not followed
			return fmt.Errorf("gocache: removing the trusted layer to build it again (%v): %w", why, err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dst), ".build-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	ws, err := workspace.Prepare(ctx, dir, filepath.Join(tmp, "copy"), nil)
	if err != nil {
		return err
	}
	defer ws.Remove()
	layer := filepath.Join(tmp, "layer")
	opts := sandbox.Options{ReadOnly: []string{ws.ObjectsDir()}, Limits: &sandbox.Limits{Output: 1 << 20}}
	if err := (Layers{Scratch: layer}).Sandbox(&opts, exe); err != nil {
		return err
	}
	r, err := sandbox.NewRunner(ctx, opts)
	if err != nil {
		return fmt.Errorf("gocache: sandbox: %w", err)
	}
	defer r.Close()
	out, err := r.Run(ctx, sandbox.Cmd{Dir: ws.Root, Command: BuildCommand, Timeout: 30 * time.Minute})
	if err != nil {
		return fmt.Errorf("gocache: %w", err)
	}
	if !hasEntries(layer) {
		return fmt.Errorf("gocache: building the trusted layer built nothing (exit %d): %s", out.ExitCode, tail(out.Stderr+out.Stdout, 2000))
	}
	if err := seal(layer); err != nil {
		return err
	}
	if err := os.Rename(layer, dst); err != nil {
		if sealed(dst) == nil {
			return nil // another Build finished first; both built the same
		}
		return err
	}
	return nil
}

// hasEntries reports whether the layer holds at least one action entry.
func hasEntries(layer string) bool {
	found := errors.New("found")
	err := filepath.WalkDir(filepath.Join(layer, "a"), func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			return found
		}
		return nil
	})
	return err == found
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
