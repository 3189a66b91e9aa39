package env

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPythonInstallation: a virtual environment's interpreter is bound with the
// installation around it, but never a whole home (pyvenv.cfg's home = ~/bin bound all of
// the home before) nor a folder holding the repository; then only its bin folder.
func TestPythonInstallation(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "home")
	t.Setenv("HOME", home)
	for _, d := range []string{"home/bin", "home/.pyenv/versions/3.12/bin", "opt/python/bin", "src/bin", "src/repo"} {
		os.MkdirAll(filepath.Join(base, d), 0o755)
	}
	for _, c := range []struct{ bin, want string }{
		{"home/bin", "home/bin"},
		{"home/.pyenv/versions/3.12/bin", "home/.pyenv/versions/3.12"},
		{"opt/python/bin", "opt/python"},
		{"src/bin", "src/bin"}, // src holds the repository
	} {
		got := pythonInstallation(filepath.Join(base, c.bin), filepath.Join(base, "src", "repo"))
		if want := filepath.Join(base, c.want); got != want {
			t.Errorf("home %s: bound %s, want %s", c.bin, got, want)
		}
	}
	if got := pythonInstallation("/usr/bin", "/x"); got != "" {
		t.Errorf("/usr/bin: bound %q, want nothing (the system's)", got)
	}
}
