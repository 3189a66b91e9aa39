package sandbox

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// The command sees an allowlist of variables only: whatever else frognano inherited
// (tokens, cloud keys, the editor's variables) stays out. What is passed keeps toolchains
// working offline with a private HOME: their caches and installs are named explicitly,
// since the defaults derive from HOME.

// passed are copied from frognano's environment when set.
var passed = []string{"PATH", "LANG", "LANGUAGE", "TZ", "USER", "LOGNAME", "GOFLAGS", "GOROOT"}

// fixed are set whatever frognano's environment says.
var fixed = map[string]string{
	"TERM":              "dumb",
	"SHELL":             "/bin/bash",
	"GOTOOLCHAIN":       "local", // never download a toolchain
	"GOPROXY":           "off",   // nor modules: only the module cache
	"CARGO_NET_OFFLINE": "true",
}

// homeTools are passed when set, else pointed at their default under the real HOME when
// that exists: rustup's proxies and pyenv's shims on PATH find nothing without them.
var homeTools = map[string]string{"CARGO_HOME": ".cargo", "RUSTUP_HOME": ".rustup", "PYENV_ROOT": ".pyenv", "VOLTA_HOME": ".volta"}

// environment builds the command's variables from the parent's (os.Environ form), the
// private home and tmp, and goEnv (GOPATH, GOMODCACHE, GOCACHE, GOENV as `go env` sees them;
// GOCACHEPROG when the runner sets one).
func environment(parent []string, home, tmp string, goEnv map[string]string) []string {
	in := map[string]string{}
	for _, kv := range parent {
		if k, v, ok := strings.Cut(kv, "="); ok {
			in[k] = v
		}
	}
	out := map[string]string{"HOME": home, "TMPDIR": tmp}
	for _, k := range passed {
		if v, ok := in[k]; ok {
			out[k] = v
		}
	}
	for k, v := range in {
		if strings.HasPrefix(k, "LC_") {
			out[k] = v
		}
	}
	if out["PATH"] == "" {
		out["PATH"] = "/usr/local/bin:/usr/bin:/bin"
	}
	if out["USER"] == "" {
		if u, err := user.Current(); err == nil {
			out["USER"] = u.Username
		}
	}
	for k, sub := range homeTools {
		if v, ok := in[k]; ok {
			out[k] = v
		} else if d := filepath.Join(in["HOME"], sub); in["HOME"] != "" && isDir(d) {
			out[k] = d
		}
	}
	for _, k := range []string{"GOPATH", "GOMODCACHE", "GOCACHE", "GOCACHEPROG", "GOENV"} {
		if v := goEnv[k]; v != "" {
			out[k] = v
		}
	}
	for k, v := range fixed {
		out[k] = v
	}
	env := make([]string, 0, len(out))
	for k, v := range out {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	return env
}

// goEnvironment asks the go command where its caches and itself are, which also honours
// settings made with `go env -w`; nil when go is not installed.
func goEnvironment(ctx context.Context) map[string]string {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "env", "-json", "GOPATH", "GOMODCACHE", "GOCACHE", "GOENV", "GOROOT", "GOCACHEPROG").Output()
	if err != nil {
		return nil
	}
	var m map[string]string
	if json.Unmarshal(out, &m) != nil {
		return nil
	}
	return m
}

// withoutSetting is the go env file at path (none: empty) without its lines setting key.
func withoutSetting(path, key string) []byte {
	b, _ := os.ReadFile(path)
	var out []byte
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if k, _, _ := strings.Cut(line, "="); strings.TrimSpace(k) != key {
			out = append(out, line...)
		}
	}
	if out == nil {
		out = []byte{}
	}
	return out
}

// bashProfile restores PATH in login shells: Debian's /etc/profile resets it, which would
// hide toolchains that frognano finds on its own PATH (/usr/local/go/bin, say).
func bashProfile(path string) string {
	return "# Written by frognano: /etc/profile resets PATH; this restores the one frognano runs with.\n" +
		"PATH='" + strings.ReplaceAll(path, "'", `'\''`) + "'\nexport PATH\n"
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// setEnv sets key in env (os.Environ form).
func setEnv(env []string, key, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k != key {
			out = append(out, kv)
		}
	}
	return append(out, key+"="+value)
}

func lookup(env []string, key string) string {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	return ""
}
