package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Deny by default (bwrap mode). Hiding credentials one by one (secrets.go) misses whatever
// the table does not name: a token in ~/work/.env, a socket in /run/postgresql. So commands
// find every home directory and /run empty (hiddenRoots), and what they need from there is
// bound back read-only: the table below, which is the allowlist. The secrets table stays as
// a second layer, for what lies outside the hidden places (/etc/shadow, host keys) and for
// credentials inside what is bound back (~/.cargo/credentials.toml). Writable directories
// (the copy, the Go build cache) are bound read-write even inside a hidden place.

// allowed lists what is bound back, with why. A path is one of
//   - "$PATH": each entry of frognano's PATH (see installation);
//   - "$VAR" or "$VAR/rel": under the variable's value when it is an absolute path (the Go
//     variables as `go env` reports them), else under allowDefaults[VAR] in frognano's HOME;
//   - "/abs": that path.
//
// Only what lies in a hidden place and exists when the Runner starts is bound (and only what
// still exists when a command starts). Symlinks are followed: the target is bound at its own
// path and at the link's. Nothing that is, or holds, a whole hidden place or a home directory
// is bound back: for ~/bin (on PATH in Debian's default ~/.profile) the bin folder alone is
// bound, not the home around it, and so when ~/bin links to ~/dotfiles/bin.
var allowed = []struct{ path, why string }{
	{"$PATH", "the commands the user runs; for an entry named bin, the installation around it (~/miniconda3/bin: ~/miniconda3)"},
	{"$GOROOT", "the Go toolchain"},
	{"$GOMODCACHE", "Go modules, for builds offline (read-only: the user's next build trusts them)"},
	{"$CARGO_HOME", "Rust: cargo, rustup's proxies and the crates downloaded (its credentials stay hidden)"},
	{"$RUSTUP_HOME", "Rust toolchains"},
	{"$PYENV_ROOT", "pyenv's Pythons, shims and virtual environments"},
	{"$VIRTUAL_ENV", "the user's active virtual environment"},
	{"$VIRTUAL_ENV/bin/python", "the Python that environment was made from (the installation around it)"},
	{"$CONDA_PREFIX", "the active conda environment"},
	{"$NVM_DIR", "nvm's Node versions"},
	{"$FNM_DIR", "fnm's Node versions (its per-shell links under XDG_RUNTIME_DIR come through PATH)"},
	{"$XDG_DATA_HOME/fnm", "fnm's Node versions, XDG location"},
	{"~/.fnm", "fnm's Node versions, older location"},
	{"$VOLTA_HOME", "Volta's Node tools"},
	{"$SDKMAN_DIR", "SDKMAN!'s JDKs, Gradle and Maven"},
	{"$XDG_DATA_HOME/uv", "uv's Pythons and tools, which its virtual environments link to"},
	{"$XDG_DATA_HOME/pipx", "pipx's tool environments, which ~/.local/bin links to"},
	{"~/.local/pipx", "pipx's tool environments, older location"},
	{"$XDG_DATA_HOME/pypoetry", "Poetry itself"},
	{"$XDG_CACHE_HOME/pypoetry/virtualenvs", "Poetry's project virtual environments"},
	{"/run/current-system", "NixOS: the system's software (a link into /nix/store, which stays visible)"},
	{"/run/opengl-driver", "NixOS: GPU drivers and CUDA libraries"},
}

// allowDefaults are where the variables in allowed point when unset, under frognano's HOME.
var allowDefaults = map[string]string{
	"CARGO_HOME":     ".cargo",
	"RUSTUP_HOME":    ".rustup",
	"PYENV_ROOT":     ".pyenv",
	"NVM_DIR":        ".nvm",
	"FNM_DIR":        ".local/share/fnm",
	"VOLTA_HOME":     ".volta",
	"SDKMAN_DIR":     ".sdkman",
	"XDG_DATA_HOME":  ".local/share",
	"XDG_CACHE_HOME": ".cache",
}

// Allowed is one path bound back read-only into a hidden place, and why.
type Allowed struct {
	Path, Why string
}

// hiddenRoots are the directories commands find empty under bubblewrap: every home directory
// (homeDirs), or /home as a whole when they lie there, and /run (with /var/run when it is a
// directory of its own rather than a link to /run). A "home" that is a system directory or
// lies in one (an account whose home is / or /usr) is not hidden: that would hide the system.
func hiddenRoots(homes []string) []string {
	var roots []string
	add := func(p string) {
		real, err := filepath.EvalSymlinks(p)
		if err != nil || !isDir(real) || systemDir(real) || slices.Contains(roots, real) {
			return
		}
		roots = append(roots, real)
	}
	for _, h := range homes {
		if real, err := filepath.EvalSymlinks(h); err == nil && filepath.Base(filepath.Dir(real)) == "home" {
			h = filepath.Dir(real)
		}
		add(h)
	}
	add("/run")
	add("/var/run")
	// One inside another needs no mount of its own.
	var out []string
	for _, r := range roots {
		if !slices.ContainsFunc(roots, func(o string) bool { return o != r && within(r, o) }) {
			out = append(out, r)
		}
	}
	return out
}

// systemDirs must stay visible whatever /etc/passwd says about homes.
var systemDirs = []string{"/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/nix", "/opt", "/proc", "/sbin", "/sys", "/tmp", "/usr", "/var"}

// systemDir reports whether p is /, a system directory, above one, or inside one of those
// that hold no home (/var/lib/postgresql is a home; /usr/games is not).
func systemDir(p string) bool {
	if p == "/" || holds(p, systemDirs) {
		return true
	}
	for _, d := range systemDirs {
		if d != "/var" && d != "/opt" && d != "/tmp" && within(p, d) {
			return true
		}
	}
	return false
}

// allowCandidate is one path of the table expanded, not yet resolved.
type allowCandidate struct {
	path, why string
	install   bool // $PATH and interpreters: bind the installation around it too
}

// allowCandidates expands the table for home (frognano's HOME), the environment and goEnv
// (`go env` answers, which win for the Go variables).
func allowCandidates(home string, getenv func(string) string, goEnv map[string]string) []allowCandidate {
	value := func(name string) []string {
		v := getenv(name)
		if g, ok := goEnv[name]; ok && g != "" {
			v = g
		}
		var abs []string
		for _, p := range filepath.SplitList(v) {
			if filepath.IsAbs(p) {
				abs = append(abs, p)
			}
		}
		if len(abs) == 0 && allowDefaults[name] != "" && filepath.IsAbs(home) {
			abs = []string{filepath.Join(home, allowDefaults[name])}
		}
		return abs
	}
	var out []allowCandidate
	for _, a := range allowed {
		install := strings.HasSuffix(a.path, "/bin/python")
		switch {
		case a.path == "$PATH":
			for _, p := range value("PATH") {
				out = append(out, allowCandidate{p, a.why, true})
			}
		case strings.HasPrefix(a.path, "~/"):
			if filepath.IsAbs(home) {
				out = append(out, allowCandidate{filepath.Join(home, a.path[2:]), a.why, false})
			}
		case strings.HasPrefix(a.path, "$"):
			name, rest, _ := strings.Cut(a.path[1:], "/")
			for _, v := range value(name) {
				out = append(out, allowCandidate{filepath.Join(v, rest), a.why, install})
			}
		default:
			out = append(out, allowCandidate{a.path, a.why, false})
		}
	}
	return out
}

// allowBinds resolves the candidates into read-only binds into the hidden roots, and the list
// of what is bound for people. A PATH entry inside a place the secrets table may hide
// (secrets, its candidates) is bound too, after the mask, which stays. gopath (GOPATH's
// entries) is never bound whole: it holds the user's sources besides the module cache. Nor is
// anything that is, or holds, one of homes (the home directories, homeDirs): hidden may be
// /home as a whole, which a home does not hold.
//
// opaque are hidden places (Options.Hide: the user's repository, frognano's cache folder)
// inside which an entry's installation is never bound, only the entry: <repo>/tools/bin
// on PATH would otherwise bind <repo>/tools.
func allowBinds(cands []allowCandidate, hidden, opaque, homes, secrets, gopath []string) ([]bind, []Allowed) {
	var binds []bind
	var list []Allowed
	seen := map[string]bool{}
	homes = withReal(homes)
	inHidden := func(p string) bool { return containedBy(p, hidden, false) && !holds(p, hidden) }
	add := func(b bind, why string, path bool) {
		if seen[b.path] || !(inHidden(b.path) || path && containedBy(b.path, secrets, false) && !holds(b.path, secrets)) {
			return
		}
		if holds(b.path, homes) || !b.link && holds(b.src, homes) {
			return // a whole home, never
		}
		seen[b.path] = true
		b.ro, b.try = !b.link, true
		binds = append(binds, b)
		if !b.link {
			list = append(list, Allowed{b.path, why})
		}
	}
	for _, c := range cands {
		p := filepath.Clean(c.path)
		real, err := filepath.EvalSymlinks(p)
		if err != nil || holds(real, hidden) || holds(p, hidden) || holds(real, homes) || holds(p, homes) {
			continue // missing, or a whole home
		}
		// ~/bin linking to ~/dotfiles/bin: the installation around the entry as written is the
		// home, so the one around its target (~/dotfiles, the user's files) is not bound either.
		if c.install && !homeInstall(p, homes) {
			if inst := installation(real, hidden, homes, gopath); inst != real && !containedBy(inst, opaque, false) {
				add(bind{path: inst, src: inst}, c.why, false)
			}
		}
		if !isDir(real) && c.install {
			continue // an interpreter: its installation is bound, the venv's link stays as it is
		}
		add(bind{path: real, src: real}, c.why, c.install)
		if p == real {
			continue
		}
		// The path as written goes through a link. Recreate the link when that is all it
		// takes (its directory is real and its target visible or bound); else bind the target
		// there too.
		target, err := os.Readlink(p)
		abs := target
		if err == nil && !filepath.IsAbs(abs) {
			abs = filepath.Join(filepath.Dir(p), target)
		}
		if dir, derr := filepath.EvalSymlinks(filepath.Dir(p)); err == nil && derr == nil && dir == filepath.Dir(p) &&
			(filepath.Clean(abs) == real || !containedBy(filepath.Clean(abs), hidden, false)) {
			add(bind{path: p, src: target, link: true}, c.why, c.install)
		} else {
			add(bind{path: p, src: real}, c.why, c.install)
		}
	}
	// For people, the outermost only: ~/.cargo/bin says nothing that ~/.cargo does not.
	var outer []Allowed
	for _, a := range list {
		if !slices.ContainsFunc(list, func(o Allowed) bool { return o.Path != a.Path && within(a.Path, o.Path) }) {
			outer = append(outer, a)
		}
	}
	return binds, outer
}

// Bound says what bubblewrap mode would hide (hiddenRoots) and bind back read-only (the
// allowlist entries found) for commands started now, for people: frognano doctor.
func Bound(ctx context.Context) (hidden []string, allowed []Allowed) {
	homes := homeDirs(os.Getenv)
	hidden = hiddenRoots(homes)
	goEnv := goEnvironmentCached(ctx)
	cands := allowCandidates(os.Getenv("HOME"), os.Getenv, goEnv)
	_, allowed = allowBinds(cands, hidden, nil, homes, secretCandidates(homes, os.Getenv), filepath.SplitList(goEnv["GOPATH"]))
	return hidden, allowed
}

// installation is the directory to bind for real, an entry of PATH or an interpreter: for a
// bin directory (or a file in one) the installation around it, where its libraries are; real
// itself when that would be a hidden root, a home directory or above one (homes), ~/.local
// (which holds all of ~/.local/share) or GOPATH.
func installation(real string, hidden, homes, gopath []string) string {
	dir := binDir(real)
	if dir == "" {
		return real
	}
	inst := filepath.Dir(dir)
	if holds(inst, hidden) || holds(inst, homes) || filepath.Base(inst) == ".local" || slices.Contains(gopath, inst) {
		return real
	}
	return inst
}

// binDir is the bin (or sbin) directory p is, or the one holding the file p; "" if neither.
func binDir(p string) string {
	dir := p
	if !isDir(p) {
		dir = filepath.Dir(p)
	}
	if b := filepath.Base(dir); b != "bin" && b != "sbin" {
		return ""
	}
	return dir
}

// homeInstall reports whether p, as written, is a bin directory (or a file in one) right in
// a home directory or above one: ~/bin.
func homeInstall(p string, homes []string) bool {
	dir := binDir(p)
	return dir != "" && holds(filepath.Dir(dir), homes)
}

// withReal is paths with, after each, its real path when that differs (/home may be a link
// to /usr/home).
func withReal(paths []string) []string {
	out := slices.Clone(paths)
	for _, p := range paths {
		if real, err := filepath.EvalSymlinks(p); err == nil && real != p && !slices.Contains(out, real) {
			out = append(out, real)
		}
	}
	return out
}
