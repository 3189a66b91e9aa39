package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// What the allowlist binds back, case by case, in a made-up layout: home and run stand for a
// hidden home and /run.
func TestAllowBinds(t *testing.T) {
	root := t.TempDir()
	root, _ = filepath.EvalSymlinks(root)
	home, run, store := filepath.Join(root, "home"), filepath.Join(root, "run"), filepath.Join(root, "store")
	for _, d := range []string{
		"home/miniconda3/bin", "home/.local/bin", "home/.local/share/fnm/v20/installation/bin", "home/bin",
		"home/go/bin", "home/go/pkg/mod", "home/.pyenv/versions/3.12/bin", "home/venv/bin", "store/system/sw/bin",
		"home/.aws/bin", "run/user/0/fnm_multishells",
	} {
		os.MkdirAll(filepath.Join(root, d), 0o755)
	}
	os.WriteFile(filepath.Join(home, ".pyenv/versions/3.12/bin/python3.12"), nil, 0o755)
	os.Symlink(filepath.Join(home, ".pyenv/versions/3.12/bin/python3.12"), filepath.Join(home, "venv/bin/python"))
	os.Symlink(filepath.Join(home, ".local/share/fnm/v20/installation"), filepath.Join(run, "user/0/fnm_multishells/1_2"))
	os.Symlink(filepath.Join(store, "system"), filepath.Join(run, "current-system"))
	path := func(rel ...string) allowCandidate {
		return allowCandidate{path: filepath.Join(append([]string{root}, rel...)...), install: true}
	}
	cands := []allowCandidate{
		path("home/miniconda3/bin"),                      // the installation around bin
		path("home/.local/bin"),                          // not ~/.local whole
		path("home/bin"),                                 // not the home whole
		path("home/go/bin"),                              // not GOPATH whole
		path("run/user/0/fnm_multishells/1_2/bin"),       // a link's target, bound at the link's path too
		path("home/venv/bin/python"),                     // an interpreter: its installation
		path("home/.aws/bin"),                            // inside a secret's folder
		{path: filepath.Join(run, "current-system")},     // a link recreated
		{path: home},                                     // a whole home: never
		{path: filepath.Join(home, "missing")},           // missing: skipped
		{path: filepath.Join(store, "system", "sw/bin")}, // visible already
	}
	binds, list := allowBinds(cands, []string{home, run}, nil, []string{home}, []string{filepath.Join(home, ".aws")}, []string{filepath.Join(home, "go")})
	var got []string
	for _, b := range binds {
		s := strings.ReplaceAll(b.path, root, "")
		if b.link {
			s = "link " + s + " -> " + strings.ReplaceAll(b.src, root, "")
		} else if b.src != b.path {
			s += " from " + strings.ReplaceAll(b.src, root, "")
		}
		got = append(got, s)
	}
	want := []string{
		"/home/miniconda3", "/home/miniconda3/bin", "/home/.local/bin", "/home/bin", "/home/go/bin",
		"/home/.local/share/fnm/v20/installation", "/home/.local/share/fnm/v20/installation/bin",
		"/run/user/0/fnm_multishells/1_2/bin from /home/.local/share/fnm/v20/installation/bin",
		"/home/.pyenv/versions/3.12", "/home/.aws", "/home/.aws/bin", "link /run/current-system -> " + "/store/system",
	}
	if !slices.Equal(got, want) {
		t.Errorf("binds:\n got %q\nwant %q", got, want)
	}
	for _, b := range binds {
		if !b.link && (!b.ro || !b.try) {
			t.Errorf("%s must be read-only, and skipped when gone", b.path)
		}
	}
	var listed []string
	for _, a := range list {
		listed = append(listed, strings.ReplaceAll(a.Path, root, ""))
	}
	if want := []string{"/home/miniconda3", "/home/.local/bin", "/home/bin", "/home/go/bin", "/home/.local/share/fnm/v20/installation",
		"/run/user/0/fnm_multishells/1_2/bin", "/home/.pyenv/versions/3.12", "/home/.aws"}; !slices.Equal(listed, want) {
		t.Errorf("listed (the outermost, not links):\n got %q\nwant %q", listed, want)
	}
}

// The homes are hidden, /home as a whole when they lie there, but never a system directory.
func TestHiddenRoots(t *testing.T) {
	got := hiddenRoots([]string{"/", "/usr/games", "/bin", "/nonexistent"})
	if slices.ContainsFunc(got, func(p string) bool { return p == "/" || p == "/usr/games" || p == "/bin" || p == "/usr/bin" }) {
		t.Errorf("hiddenRoots hides a system directory: %q", got)
	}
	if isDir("/run") && !slices.Contains(got, "/run") {
		t.Errorf("hiddenRoots lacks /run: %q", got)
	}
	homes := homeDirs(os.Getenv)
	roots := hiddenRoots(homes)
	for _, h := range homes {
		if filepath.Dir(h) == "/home" && !slices.Contains(roots, "/home") {
			t.Errorf("%s lies in /home, which is not hidden whole: %q", h, roots)
		}
		if !containedBy(h, roots, false) && !systemDir(h) {
			t.Errorf("home %s is not hidden: %q", h, roots)
		}
	}
}

// ~/bin on PATH (Debian's default ~/.profile) when the homes are hidden as /home whole: only
// the bin folder is bound, never the home around it, nor ~/dotfiles when ~/bin links into it.
// Before the fix the home itself was bound back.
func TestAllowBindsHomeBin(t *testing.T) {
	root := t.TempDir()
	root, _ = filepath.EvalSymlinks(root)
	homes := filepath.Join(root, "home")
	u, v := filepath.Join(homes, "u"), filepath.Join(homes, "v")
	for _, d := range []string{"home/u/bin", "home/v/dotfiles/bin", "home/u/miniconda3/bin"} {
		os.MkdirAll(filepath.Join(root, d), 0o755)
	}
	os.Symlink("dotfiles/bin", filepath.Join(v, "bin"))
	cands := []allowCandidate{
		{path: filepath.Join(u, "bin"), install: true},
		{path: filepath.Join(v, "bin"), install: true},
		{path: filepath.Join(u, "miniconda3/bin"), install: true}, // still the installation around it
		{path: u, install: true},                                  // a home: never
	}
	binds, _ := allowBinds(cands, []string{homes}, nil, []string{u, v}, nil, nil)
	var got []string
	for _, b := range binds {
		s := strings.ReplaceAll(b.path, root, "")
		if b.link {
			s = "link " + s + " -> " + b.src
		}
		got = append(got, s)
	}
	want := []string{"/home/u/bin", "/home/v/dotfiles/bin", "link /home/v/bin -> dotfiles/bin", "/home/u/miniconda3", "/home/u/miniconda3/bin"}
	if !slices.Equal(got, want) {
		t.Errorf("binds:\n got %q\nwant %q", got, want)
	}
}
