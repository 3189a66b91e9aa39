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

// BuildCommand compiles what the repository's packages and their tests import from outside
// the repository, and nothing of the repository's own: the trusted layer is visible to every
// command of an episode (the GOCACHEPROG helper reads it), so whatever it holds of the
// repository an agent can read, and the hidden tests' compiled packages, the generated test
// main (their names) and go's index of their files (their imports) would hand it what the
// tests assert. They would buy nothing either: go keys a package outside GOROOT and the
// module cache by its folder too, and every copy of the repository lies at a new path.
//
// In the folder of every Go module (finetune/env.Modules' rule: no vendor, testdata,
// node_modules or hidden folders; with the go.work at the top when there is one, since ./...
// at the top is the top's module only, and nothing when the top has none; without one, with
// the nearest go.work at or above the module's folder, as a go command run there would
// find it: finetune/env ties a module to that one too, or, in rarer layouts, to none or
// another, and then only this layer's hits are lost), it lists with
// `go list -e -deps -test ./...` the packages that the module's packages and tests import,
// keeps those of the standard library and those whose folder lies in the module cache (of a
// module that is not a main one), and compiles them with `go build`, in the environment test
// runs use (finetune/env Copy.Run) so that their action IDs are those a later `go test` asks
// for. So a vendored package (-mod=vendor: it lies in the repository's vendor folder) or a
// module the go.mod replaces by a folder of the tree is left out like the repository's own:
// both lie at a path of the copy. The list is made with a throwaway GOCACHE of its own and no
// GOCACHEPROG: go list -test writes the generated test main and the index of the module's
// files into the build cache. (An empty GOCACHEPROG lets go fall back to one the user's go
// env file sets: that cache is the user's, not the layer.)
//
// What is left out otherwise: a package go list reports broken, since go build refuses its
// whole list when one of them does not load (one that loads but does not compile fails
// alone, the others are kept, as under go test), and the test variants (a package compiled
// again for one package's test: keyed by the repository's). A module with nothing to build
// builds nothing (go build with no package would build the module's own). Vet's facts are
// not built: a go test that vets computes them on its run's scratch layer.
const BuildCommand = `export GOTOOLCHAIN=local GOFLAGS="$GOFLAGS -buildvcs=false"; top=$PWD; topwork=; [ -f go.work ] && topwork=1 || export GOWORK=off
set -f
modcache=$(go env GOMODCACHE </dev/null) && [ -n "$modcache" ] || exit 1
find . \( -name vendor -o -name testdata -o -name node_modules -o -name '.?*' \) -prune -o -name go.mod -type f -print | while read -r m; do
	(cd "$(dirname "$m")" || exit
	if [ -z "$topwork" ]; then
		w=$PWD
		while [ "$w" != "$top" ] && [ "$w" != / ] && [ ! -f "$w/go.work" ]; do w=$(dirname "$w"); done
		[ "$w" = "$top" ] || [ "$w" = / ] || export GOWORK="$w/go.work"
	fi
	listcache=$(mktemp -d) || exit
	pkgs=$(GOCACHEPROG= GOCACHE="$listcache" go list -e -deps -test -f '` + depsTemplate + `' ./... </dev/null |
		while read -r p d; do case $d in std|"$modcache"/*) echo "$p";; esac; done)
	rm -rf "$listcache"
	[ -z "$pkgs" ] || go build $pkgs </dev/null)
done`

// depsTemplate prints, for each package go list -deps -test finds that loaded and is not a
// test variant, its import path and "std" for the standard library, its folder for a
// package of another module; nothing for the main modules' packages (tests included).
const depsTemplate = `{{if not (or .ForTest .Error .DepsErrors)}}{{if .Standard}}{{.ImportPath}} std{{else if and .Module (not .Module.Main)}}{{.ImportPath}} {{.Dir}}{{end}}{{end}}`

// Build makes the trusted layer of the checkout in dir (the base commit, as frognano
// exported it: finetune/env.Export) at dst, unless dst exists already. It runs BuildCommand
// in the sandbox on a private copy of dir, with the helper (exe: this program) writing into
// a new folder that becomes dst only once the build is over: no command sees it before,
// and none can write it after (where writes are confined, see Layers.Sandbox).
//
// The layer holds compiled dependencies only (see BuildCommand): the standard library and
// the packages of other modules in the module cache, what lies at fixed paths and so can be
// served to a copy at another path; never the repository's own packages or its tests,
// which every run compiles again on its copy (the cheap part). A package that does not
// compile is left out; Build fails only when nothing was built at all.
//
// The layer is sealed (seal) before it is renamed into place: frognano's own, its files
// read-only, with a file that says its format (formatFile). A folder at dst that is not
// sealed (one a command put there where it could write) or not of this format (an older
// frognano's, which held the repository's compiled tests too) is removed and built again.
func Build(ctx context.Context, dir, dst, exe string) error {
	if why := current(dst); why == nil {
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
	// Frognano's, written after the command ended (replacing whatever it left there).
	if err := os.RemoveAll(filepath.Join(layer, formatFile)); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(layer, formatFile), []byte(format), 0o644); err != nil {
		return err
	}
	if err := seal(layer); err != nil {
		return err
	}
	if err := os.Rename(layer, dst); err != nil {
		if current(dst) == nil {
			return nil // another Build finished first; both built the same
		}
		return err
	}
	return nil
}

// formatFile, at the top of a trusted layer, holds format, the version of what Build puts
// in a layer; Build writes it last. A layer of another format (none: a frognano that built
// the repository's tests into it) is built again, and Layers.Sandbox refuses it.
const (
	formatFile = "FORMAT"
	format     = "frognano trusted Go build cache layer 2: dependencies only\n"
)

// errOutdated: a sealed layer of another format than this frognano's.
var errOutdated = errors.New("of an older format")

// current checks that the layer at dir is sealed and of this format.
func current(dir string) error {
	if err := sealed(dir); err != nil {
		return err
	}
	b, err := os.ReadFile(filepath.Join(dir, formatFile))
	if err != nil || string(b) != format {
		// Not wrapping err: Build reads fs.ErrNotExist as "no layer yet".
		return fmt.Errorf("%w: %s (built by an older frognano)", errOutdated, dir)
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
