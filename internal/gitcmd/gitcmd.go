// Package gitcmd is the one way frognano runs git. Every git command of the project goes
// through [Repo.Run], so that one policy covers them all:
//
//   - nothing of the caller's environment points git elsewhere: every GIT_* variable is
//     dropped (a git hook exports GIT_DIR and GIT_INDEX_FILE, and with them a command meant
//     for a private copy would commit into the user's repository);
//   - no system configuration, and for a repository the agent could have written
//     ([Hostile]) no global configuration either;
//   - nothing git would execute on its own: no fsmonitor daemon, no hooks, no external
//     diff, no textconv, no pager, no credential prompts, no replace objects.
//
// What git can execute is chosen by its configuration and by .gitattributes, and in a copy
// the agent worked in both are written by the model. The settings below are given on the
// command line, which outranks every configuration file. Filters and diff drivers are named
// by attributes and take their command from configuration; for a hostile repository the
// caller keeps the configuration out of the agent's reach (see agent/workspace) and
// neutralises the attributes with [NeutralAttributes].
package gitcmd

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Trust says whose repository git is run on.
type Trust int

const (
	// User: the user's own repository, as they configured it. Their global configuration
	// still counts (core.excludesFile decides what is ignored), the system's does not.
	User Trust = iota
	// Hostile: a repository a model-written command could have touched. No configuration
	// outside the repository is read, and the repository's own must be kept out of the
	// model's reach by the caller.
	Hostile
)

// Repo names where git runs.
type Repo struct {
	// Dir is where git starts (-C); with GitDir empty, git finds the repository from there.
	Dir string
	// GitDir and WorkTree, when set, are passed explicitly (--git-dir, --work-tree): git then
	// neither searches for a repository nor honours a core.worktree setting.
	GitDir, WorkTree string
	Trust            Trust
	// Config are more settings (name=value), given after the hardening with -c.
	Config []string
	// Env is added to the scrubbed environment (author names, say); GIT_* entries in it are
	// the caller's own choice and kept.
	Env []string
	// WaitDelay is how long Run waits, once git has exited or ctx has ended, for its output
	// to be read (a child that keeps the pipes open must not keep Run waiting); 0 means
	// DefaultWaitDelay. Tests on a heavily loaded machine give more.
	WaitDelay time.Duration
}

// DefaultWaitDelay is Repo.WaitDelay's default.
const DefaultWaitDelay = 5 * time.Second

// hardening is given on every command line, where it outranks any configuration file.
var hardening = []string{
	"-c", "core.fsmonitor=false", // else git starts the configured command (a daemon) itself
	"-c", "core.hooksPath=/dev/null", // no hook can exist below a file
	"-c", "core.untrackedCache=false",
	"-c", "core.pager=cat",
	"-c", "core.askPass=",
	"-c", "credential.helper=",
	"-c", "submodule.recurse=false",
	"-c", "protocol.allow=never", // nothing frognano asks git does any transport
	"-c", "gc.auto=0", "-c", "maintenance.auto=false", // no detached gc racing the copy's removal
	"-c", "core.quotepath=false",
	"-c", "core.autocrlf=false", // content as it is on disk
}

// Args is the whole argument list of git for args: the place, the hardening, then args.
func (r Repo) Args(args ...string) []string {
	var a []string
	if r.Dir != "" {
		a = append(a, "-C", r.Dir)
	}
	if r.GitDir != "" {
		a = append(a, "--git-dir="+r.GitDir)
	}
	if r.WorkTree != "" {
		a = append(a, "--work-tree="+r.WorkTree)
	}
	a = append(a, hardening...)
	for _, c := range r.Config {
		a = append(a, "-c", c)
	}
	if len(args) > 0 && diffing[args[0]] {
		// diff.external cannot be unset from the command line (an empty value is run as a
		// program), so the porcelain that would honour it is told not to.
		return append(append(append(a, args[0]), "--no-ext-diff", "--no-textconv"), args[1:]...)
	}
	return append(a, args...)
}

// diffing are the commands that honour diff.external and textconv.
var diffing = map[string]bool{"diff": true, "log": true, "show": true, "format-patch": true}

// Environ is the environment git runs with: the caller's without any GIT_* variable, plus
// the policy's own, plus r.Env.
func (r Repo) Environ() []string {
	env := make([]string, 0, 64)
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "GIT_") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_ATTR_NOSYSTEM=1",
		"GIT_NO_REPLACE_OBJECTS=1", // refs/replace would let a repository show other content
		"GIT_TERMINAL_PROMPT=0",
		"GIT_PAGER=cat",
		"GIT_NO_LAZY_FETCH=1",
		"GIT_PROTOCOL_FROM_USER=0",
	)
	if r.Trust == Hostile {
		env = append(env, "GIT_CONFIG_GLOBAL=/dev/null")
	}
	return append(env, r.Env...)
}

// Command is the exec.Cmd for args, for callers that need to stream.
func (r Repo) Command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "git", r.Args(args...)...)
	cmd.Env = r.Environ()
	cmd.Dir = "/" // never the caller's working directory: git would look for a repository there
	// Once ctx ends git is killed; a child it started that keeps the pipes open must not
	// keep Run waiting.
	cmd.WaitDelay = r.WaitDelay
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = DefaultWaitDelay
	}
	return cmd
}

// Run runs git with args, stdin (nil: none), and returns its standard output. An error
// carries git's own message.
func (r Repo) Run(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	cmd := r.Command(ctx, args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		name := "git"
		if len(args) > 0 {
			name += " " + args[0]
		}
		return out, &Error{Args: args, Err: err, Stderr: strings.TrimSpace(stderr.String()), name: name}
	}
	return out, nil
}

// Error is a git command that failed.
type Error struct {
	Args   []string
	Err    error // *exec.ExitError, or why it could not start (exec.ErrNotFound)
	Stderr string
	name   string
}

func (e *Error) Error() string {
	if e.Stderr == "" {
		return fmt.Sprintf("%s: %v", e.name, e.Err)
	}
	return fmt.Sprintf("%s: %v: %s", e.name, e.Err, e.Stderr)
}

func (e *Error) Unwrap() error { return e.Err }

// NeutralAttributes is the content of an info/attributes file that overrides every
// .gitattributes in a work tree (info/attributes takes precedence over them): no filter
// (their commands would run), no diff driver (textconv), no end-of-line or encoding
// conversion (the recorded content is then byte for byte the file's), no ident expansion.
const NeutralAttributes = "* -filter !diff !merge -text !eol -ident !working-tree-encoding\n"
