// Package gocache is a Go build cache in two layers that commands cannot poison for one
// another: a trusted layer, built by frognano from a base commit and read-only to every
// command, and a scratch layer that each run (an agent's episode, a reward's test run)
// gets fresh and throws away. The go command reaches both through GOCACHEPROG (Go 1.24+):
// it starts frognano's hidden helper ([Subcommand], served by [Serve]) inside the sandbox,
// which reads the trusted layer first and writes only to the scratch one. The trusted
// layer holds the commit's compiled dependencies only, the standard library and the
// module cache's packages: every command can read it, and nothing of the repository's own
// (the hidden tests above all) may be there (see [BuildCommand]).
//
// Why: go trusts what it finds in its build cache. With one cache per repository (what
// the editor uses, sandbox.GoCacheFor), a command of one episode can plant a build result
// (a std `testing` whose tests never fail, a package compiled from other source) that a
// later episode's tests, and so the reward computed from them, would use. Here nothing a
// command writes outlives its run: a reward run sees only what frognano built and what it
// builds itself.
//
// Entry points: [Build] makes the trusted layer of a checkout, [Layers.Sandbox] sets a
// sandbox's options to use the layers, [HelperMain] is the helper's main.
package gocache

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/frognano/frognano/agent/sandbox"
)

// Subcommand is the hidden first argument that makes frognano (or a test binary, through
// HelperMain in its TestMain) the GOCACHEPROG helper.
const Subcommand = "__gocacheprog"

// Layers are the two layers of one run's cache.
type Layers struct {
	// Trusted is read first; only Build writes it, before any command can see it. Empty:
	// none.
	Trusted string
	// Scratch receives everything the run's go commands build; it is also their GOCACHE
	// (go keeps fuzzing inputs there). Give each run a new one.
	Scratch string
}

// Sandbox sets opts so that the runner's commands build with l: Scratch is their writable
// GOCACHE, the trusted layer and the helper's executable (exe, this program: os.Executable)
// are bound read-only, and GOCACHEPROG starts the helper. Scratch must be new or empty, and
// Trusted made by Build (sealed). Writes to the trusted layer are refused where the sandbox
// confines writes (Isolation.WriteConfined, bubblewrap) or where commands run as another
// user than frognano (root: nobody), whose files they are not; with neither (unshare or no
// sandbox, frognano not root) a command can rewrite it: callers that compute rewards must
// check Isolation.WriteConfined.
func (l Layers) Sandbox(opts *sandbox.Options, exe string) error {
	prog, err := l.prog(exe)
	if err != nil {
		return err
	}
	// A scratch layer that holds something already would serve it to this run: a reward
	// run given the episode's scratch, or one at a path a command could make first, would
	// trust what a command wrote.
	if ents, err := os.ReadDir(l.Scratch); err == nil && len(ents) > 0 {
		return fmt.Errorf("gocache: the scratch layer %s is not empty: give each run a new one", l.Scratch)
	}
	if err := os.MkdirAll(l.Scratch, 0o755); err != nil {
		return err
	}
	opts.GoCache = l.Scratch
	opts.GoCacheProg = prog
	opts.ReadOnly = append(opts.ReadOnly, exe)
	if l.Trusted != "" {
		if err := current(l.Trusted); err != nil {
			return fmt.Errorf("gocache: trusted layer: %w (make it with Build)", err)
		}
		opts.ReadOnly = append(opts.ReadOnly, l.Trusted)
	}
	return nil
}

// prog is the GOCACHEPROG value: the go command splits it into words, with single or
// double quotes around a word that has spaces (cmd/internal/quoted), and no escapes.
func (l Layers) prog(exe string) (string, error) {
	words := []string{exe, Subcommand, "-scratch", l.Scratch}
	if l.Trusted != "" {
		words = append(words, "-trusted", l.Trusted)
	}
	for i, w := range words {
		switch {
		case w == "":
			return "", errors.New("gocache: an empty path")
		case strings.ContainsAny(w, "'\"\n"):
			return "", fmt.Errorf("gocache: %q has a quote or a newline, which GOCACHEPROG cannot carry", w)
		case strings.ContainsAny(w, " \t"):
			words[i] = "'" + w + "'"
		}
	}
	return strings.Join(words, " "), nil
}

// HelperMain serves the protocol and exits when os.Args name the helper (Subcommand);
// otherwise it returns at once. frognano's main calls it first, and so does the TestMain
// of every package whose tests run go through the layers (there the test binary is the
// executable).
func HelperMain() {
	if len(os.Args) < 2 || os.Args[1] != Subcommand {
		return
	}
	fs := flag.NewFlagSet(Subcommand, flag.ContinueOnError)
	var l Layers
	fs.StringVar(&l.Scratch, "scratch", "", "the writable layer")
	fs.StringVar(&l.Trusted, "trusted", "", "the read-only layer, read first")
	if err := fs.Parse(os.Args[2:]); err != nil {
		os.Exit(2)
	}
	if err := Serve(os.Stdin, os.Stdout, l); err != nil {
		fmt.Fprintf(os.Stderr, "frognano %s: %v\n", Subcommand, err)
		os.Exit(1)
	}
	os.Exit(0)
}
