// Package sandbox runs the agent's Bash commands confined to its private copy of the
// workspace: no network, writes only to the copy, deny by default (the homes and /run empty
// but for the toolchains, allow.go) with the user's credentials hidden besides (secrets.go),
// as nobody when frognano is root (owner.go), every process of a command killed when it
// ends, resource limits, and a scrubbed environment.
//
// Start with [NewRunner], which probes once what the machine allows ([Detect]), then call
// [Runner.Run] per command. Strongest first, the modes are bubblewrap, util-linux unshare,
// and none; [Isolation] says which one is in use and what it lacks.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"

	"github.com/frognano/frognano/internal/cachedir"
)

// Options configure a Runner.
type Options struct {
	// Limits per command; nil means DefaultLimits(). Zero fields take their default, except
	// Memory, where 0 means unlimited.
	Limits *Limits
	// Writable are directories commands may write to besides the copy and /tmp; nil means
	// GoCache only, empty means none. When frognano runs as root, they are given to the
	// user commands run as (Adopt), once.
	Writable []string
	// GoCache is the Go build cache the commands use (GOCACHE), kept across runs so that
	// builds and tests stay fast. It is theirs alone: the user's own cache, like the module
	// cache, stays read-only to them, since what a command writes there would be trusted by
	// the user's next build outside the sandbox. Pass GoCacheFor(repository): one cache per
	// repository, since a command can plant in it what later runs trust. Default, shared by
	// every caller that sets none: sandbox-go-build in frognano's cache folder
	// ($FROGNANO_CACHE, else $XDG_CACHE_HOME/frognano, else ~/.cache/frognano).
	GoCache string
	// GoCacheProg, when set, is the commands' GOCACHEPROG: a program (with its arguments)
	// that the go command asks instead of reading GOCACHE itself (internal/gocache, whose
	// helper reads a trusted layer and writes to GoCache). Its executable must be visible
	// inside: pass it in ReadOnly.
	GoCacheProg string
	// ReadOnly are more files or directories commands may read, at the same path inside the
	// sandbox: bound read-only in bwrap mode, after the private /tmp, so they may lie under
	// /tmp or in a hidden place (a home directory, /run); in the other modes they are visible
	// already. A path that does not exist is an error. What the secrets table hides stays
	// hidden inside them. The agent lets commands read the git objects of the copy, kept
	// outside it, this way.
	ReadOnly []string
	// Hide are folders or files commands find empty (a folder) or empty of content (a
	// file), wherever they lie: what the homes and /run being hidden does not cover, such as
	// a user's repository kept in /srv or /work (its tests, history and uncommitted work,
	// which the copy does not need) or frognano's own state (the task store, whose patches
	// are the answers). Missing paths are skipped, and checked again at each command;
	// symlinks are resolved; / and the folders that hold the system's (/usr, /etc…) are
	// never hidden. What is bound inside a hidden folder is still bound (the copy, a cache,
	// ReadOnly), except in unshare mode, which cannot bind back over a mask: there a hidden
	// folder that holds one of them is replaced by masks of what it holds beside the way to
	// it (their names show, not their content, and what is made beside them while a
	// command runs shows until the next command). A folder inside a git repository hides
	// the repository with it (see repositories). Without isolation (ModeNone) nothing can
	// be hidden: Isolation says so.
	Hide []string
	// Mode forces one isolation mode instead of the strongest available (tests of the
	// weaker ones); NewRunner fails if it does not work here.
	Mode Mode
}

// Runner runs commands. It is safe for concurrent use; Close it when done.
type Runner struct {
	iso      Isolation
	limits   Limits
	base     string   // private directory holding home and tmp
	home     string   // HOME of the commands
	writable []string // bound read-write in bwrap mode
	readOnly []bind   // Options.ReadOnly, resolved
	hide     []string // Options.Hide, absolute
	env      []string
	secrets  []string // where the secrets would be (secretCandidates); looked up per command
	empty    string   // an empty read-only file, mounted over secret files
	hidden   []string // bwrap mode: the homes and /run, empty inside (hiddenRoots)
	allow    []bind   // what the allowlist binds back into them
	allowed  []Allowed
	// bwrap mode: where the machine's files are out of view (the hidden roots, the private
	// /tmp, /dev and /proc), and what is bound back there (binds); see listeningSockets.
	invisible, bound []string
	adopted          sync.Map // the Cmd.Dirs adopted (Adopt) already
}

// NewRunner probes the isolation (once) and makes the private HOME.
func NewRunner(ctx context.Context, opts Options) (*Runner, error) {
	if _, err := exec.LookPath("prlimit"); err != nil {
		return nil, errors.New("sandbox: prlimit (util-linux) is needed to apply resource limits")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		return nil, errors.New("sandbox: bash is needed to run commands")
	}
	iso, err := detectCached(ctx, opts.Mode)
	if err != nil {
		return nil, err
	}
	r := &Runner{iso: iso, limits: DefaultLimits()}
	if opts.Limits != nil {
		r.limits = opts.Limits.withDefaults()
	}
	goEnv := maps.Clone(goEnvironmentCached(ctx))
	if goEnv == nil {
		goEnv = map[string]string{}
	}
	goCache := opts.GoCache
	if goCache == "" {
		goCache = filepath.Join(cachedir.Dir(), "sandbox-go-build")
	}
	goEnv["GOCACHE"] = goCache
	// The user's own GOCACHEPROG (`go env -w`, read through GOENV) would take the place of
	// GOCACHE: the commands' builds would go to the user's cache, or a trusted layer be
	// skipped. Without one of ours, GOENV becomes a copy of the user's file without it.
	userProg := goEnv["GOCACHEPROG"]
	delete(goEnv, "GOCACHEPROG")
	if opts.GoCacheProg != "" {
		goEnv["GOCACHEPROG"] = opts.GoCacheProg
	}
	writable := opts.Writable
	if writable == nil {
		writable = []string{goCache}
	}
	for _, w := range writable {
		// Caches may not exist yet on a fresh machine; bwrap can only bind what does.
		if err := os.MkdirAll(w, 0o755); err != nil {
			return nil, fmt.Errorf("sandbox: writable directory: %w", err)
		}
		d, err := realDir(w)
		if err != nil {
			return nil, fmt.Errorf("sandbox: writable directory: %w", err)
		}
		r.writable = append(r.writable, d)
	}
	for _, p := range opts.ReadOnly {
		b, err := readOnlyBind(p)
		if err != nil {
			return nil, fmt.Errorf("sandbox: read-only path: %w", err)
		}
		r.readOnly = append(r.readOnly, b...)
	}
	for _, p := range opts.Hide {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, fmt.Errorf("sandbox: hidden path: %w", err)
		}
		// A folder inside a repository takes the repository with it (its top, its git
		// directories, its worktrees, what it borrows objects from).
		r.hide = append(append(r.hide, abs), repositories(abs)...)
	}
	// Other runners' private homes and the rewards' evaluation trees lie in the temp folder:
	// bubblewrap's /tmp is private, but a TMPDIR elsewhere is shared by every command the
	// user runs. (What this runner needs there, its home and a copy, is bound back.)
	if t := filepath.Clean(os.TempDir()); t != "/tmp" && len(opts.Hide) > 0 {
		r.hide = append(r.hide, t)
	}
	// Each is looked up at every command: once is enough (a copy's source and the task's
	// repository bring the same repository).
	slices.Sort(r.hide)
	r.hide = slices.Compact(r.hide)
	base, err := os.MkdirTemp("", "frognano-sandbox-")
	if err != nil {
		return nil, fmt.Errorf("sandbox: private home: %w", err)
	}
	r.base = base
	if r.base, err = filepath.EvalSymlinks(base); err != nil { // bwrap binds need the real path
		os.RemoveAll(base)
		return nil, err
	}
	r.home = filepath.Join(r.base, "home")
	var goEnvFile []byte // written into the home once it exists
	if userProg != "" && opts.GoCacheProg == "" {
		goEnvFile = withoutSetting(goEnv["GOENV"], "GOCACHEPROG")
		goEnv["GOENV"] = filepath.Join(r.home, ".config", "go", "env")
	}
	tmp := filepath.Join(r.base, "tmp")
	if iso.Mode == ModeBwrap {
		tmp = "/tmp" // a private tmpfs there
	}
	r.env = environment(os.Environ(), r.home, tmp, goEnv)
	if iso.UID == nobody && iso.Mode == ModeBwrap {
		r.env = setEnv(r.env, "USER", "nobody")
		r.env = setEnv(r.env, "LOGNAME", "nobody")
	}
	// From the environment now, not at the probe, which is once per process.
	homes := homeDirs(os.Getenv)
	if iso.SecretsHidden {
		r.secrets = secretCandidates(homes, os.Getenv)
	}
	if iso.DenyByDefault {
		r.hidden = hiddenRoots(homes)
		cands := allowCandidates(os.Getenv("HOME"), os.Getenv, goEnv)
		// What the allowlist names inside a hidden path (a PATH entry or GOMODCACHE in a
		// folder the user opened) is bound back as it is in the homes.
		var opaque []string
		for _, m := range presentHidden(r.hide) {
			if m.dir {
				opaque = append(opaque, m.path)
			}
		}
		inHidden := append(slices.Clone(r.hidden), opaque...)
		r.allow, r.allowed = allowBinds(cands, inHidden, opaque, homes, r.secrets, filepath.SplitList(goEnv["GOPATH"]))
	}
	if iso.Mode == ModeBwrap {
		r.invisible = append(slices.Clone(bwrapPrivate), r.hidden...)
		for _, b := range append(slices.Clone(r.readOnly), r.allow...) {
			if !b.link {
				r.bound = append(r.bound, b.path)
			}
		}
	}
	for _, d := range []string{r.home, filepath.Join(r.base, "tmp")} {
		if err := os.Mkdir(d, 0o700); err != nil {
			r.Close()
			return nil, fmt.Errorf("sandbox: private home: %w", err)
		}
	}
	if goEnvFile != nil {
		if err := os.MkdirAll(filepath.Dir(goEnv["GOENV"]), 0o755); err == nil {
			err = os.WriteFile(goEnv["GOENV"], goEnvFile, 0o644)
		}
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("sandbox: private home: %w", err)
		}
	}
	r.empty = filepath.Join(r.base, "empty")
	if err := os.WriteFile(r.empty, nil, 0o444); err != nil {
		r.Close()
		return nil, fmt.Errorf("sandbox: private home: %w", err)
	}
	if err := os.WriteFile(filepath.Join(r.home, ".bash_profile"), []byte(bashProfile(lookup(r.env, "PATH"))), 0o644); err != nil {
		r.Close()
		return nil, fmt.Errorf("sandbox: private home: %w", err)
	}
	// Commands that run as nobody write there; the base stays root's, searchable only. A
	// writable directory whose top nobody owns was adopted whole already (adopt does the top
	// last), and only commands write there since: caches hold thousands of files.
	for _, d := range append([]string{r.home, filepath.Join(r.base, "tmp")}, r.writable...) {
		if st, err := os.Stat(d); err == nil && ownedBy(st, nobody) {
			continue
		}
		if err := r.Adopt(d); err != nil {
			r.Close()
			return nil, err
		}
	}
	if r.iso.UID == nobody {
		os.Chmod(r.base, 0o711)
	}
	return r, nil
}

// Allowed is what the allowlist binds back read-only into the hidden homes and /run (bwrap
// mode), for people; nil in the other modes.
func (r *Runner) Allowed() []Allowed { return slices.Clone(r.allowed) }

// DiskDirs are the places on disk commands can write to besides the copy: the private home
// and the private /tmp where it is not a tmpfs (the modes other than bwrap), which are the
// runner's own; and the writable directories (the Go build cache), which other runners may
// share. A disk budget must count them all.
func (r *Runner) DiskDirs() (own, shared []string) {
	own = []string{r.home}
	if r.iso.Mode != ModeBwrap {
		own = append(own, filepath.Join(r.base, "tmp"))
	}
	return own, slices.Clone(r.writable)
}

// Isolation is what the runner found at start.
func (r *Runner) Isolation() Isolation { return r.iso }

// Close removes the private HOME and /tmp.
func (r *Runner) Close() error {
	if r.base == "" {
		return nil
	}
	return os.RemoveAll(r.base)
}

// argv is the whole command line of one command: join its cgroup, isolate, limit, run.
func (r *Runner) argv(dir, command string, cg *cgroup) []string {
	var a []string
	if cg != nil {
		// The shell joins the cgroup before anything forks, then becomes the sandbox; from
		// Go the pid could only be written after the start, racing the first forks. It sets
		// the limits too, saving prlimit's exec (the process limit is the cgroup's then).
		a = append(a, "/bin/sh", "-c", `echo $$ > "$0" || exit 125; `+r.limits.ulimit()+` || exit 125; exec "$@"`, cg.procs())
	}
	// Looked up now, not at NewRunner: bwrap fails on a mount point that is gone, and a
	// credential made during the session is hidden from the next command.
	masks := append(presentSecrets(r.secrets), presentHidden(r.hide)...)
	need := append([]string{r.home, dir}, r.writable...)
	switch r.iso.Mode {
	case ModeBwrap:
		// The binds come after the prefix's --tmpfs /tmp: bwrap mounts in order, and the
		// copy, home and caches may well live under /tmp.
		binds := make([]bind, 0, len(need)+len(r.readOnly)+len(r.allow))
		for _, p := range need {
			binds = append(binds, rw(p))
		}
		binds = append(binds, r.readOnly...)
		for _, b := range r.allow {
			// What a command can write is bound writable already; and its contents may have
			// become links (to ~/.ssh, say) that a read-only bind would follow.
			if !containedBy(b.path, need, false) && !containedBy(b.src, need, false) {
				binds = append(binds, b)
			}
		}
		for _, h := range r.hidden {
			masks = append(masks, mask{path: h, dir: true})
		}
		masks = append(masks, listeningSockets(procNetUnix(), need, r.invisible, r.bound)...)
		a = append(a, bwrapPrefix(r.iso.prefix, r.limits.Tmp)...)
		if r.iso.SyscallFilter {
			a = append(a, "--seccomp", seccompFD) // Run passes the filter there
		}
		// nobody cannot write in root's empty tmpfs: remounting them read-only costs time only.
		a = append(a, bwrapMounts(binds, masks, r.empty, r.iso.drop == nil)...)
		a = append(a, "--chdir", dir)
		a = append(a, r.iso.drop...) // after bwrap's set-up, before the limits: nobody may lower them only
	case ModeUnshare:
		a = append(a, r.iso.prefix...)
		a = append(a, "/bin/sh", "-c", unshareInit, "sandbox-init", r.empty)
		for _, b := range r.readOnly {
			need = append(need, b.path)
		}
		a = append(a, unshareMasks(need, masks)...)
		a = append(a, "--")
	}
	if cg == nil {
		a = append(a, r.limits.prlimit(r.iso.ProcessLimit != "" && r.iso.cgroup == "")...)
	}
	if r.iso.Mode == ModeUnshare && r.iso.SecretsHidden {
		a = append(a, dropCaps...) // after prlimit, which may need them to raise a hard limit
	}
	return append(a, "bash", "-lc", command)
}

// presentHidden are the masks of the Options.Hide paths that exist now, at their real
// paths (bwrap mounts on those; a link to a hidden folder then leads to an empty one). A
// path that is / or holds a system folder is left out: hiding it would hide the system.
func presentHidden(paths []string) []mask {
	var out []mask
	for _, p := range paths {
		real, err := filepath.EvalSymlinks(p)
		if err != nil || holds(real, systemDirs) {
			continue
		}
		st, err := os.Stat(real)
		if err != nil {
			continue
		}
		out = append(out, mask{path: real, dir: st.IsDir()})
	}
	return out
}

// realDir resolves p to an absolute path without symlinks (bwrap binds need it) and checks
// that it is a directory.
func realDir(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	abs, err = filepath.EvalSymlinks(abs)
	if err != nil {
		return "", err
	}
	if !isDir(abs) {
		return "", fmt.Errorf("%s is not a directory", abs)
	}
	return abs, nil
}

// readOnlyBind is the read-only bind of p at its own path. When p goes through a symlink,
// its target is bound at the target's path too: what resolves p inside sees the same.
func readOnlyBind(p string) ([]bind, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, err
	}
	b := []bind{{path: real, src: real, ro: true}}
	if abs != real {
		b = append(b, bind{path: abs, src: real, ro: true})
	}
	return b, nil
}

// bwrapPrefix is the probed bubblewrap prefix with the sizes of the private /tmp and
// /dev/shm set to tmp, when this bubblewrap can cap them (--size N before each --tmpfs).
func bwrapPrefix(prefix []string, tmp int64) []string {
	out := slices.Clone(prefix)
	for i := 0; i+1 < len(out); i++ {
		if out[i] == "--size" {
			out[i+1] = strconv.FormatInt(tmp, 10)
		}
	}
	return out
}
