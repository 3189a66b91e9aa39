package env

import (
	"os"
	"path/filepath"
	"slices"
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

// TestInstalledCopies: a `pip install .` of the repository into its virtual environment is
// a copy of the clean code; an editable install (a link to the hidden tree) and other
// distributions are not.
func TestInstalledCopies(t *testing.T) {
	repo := t.TempDir()
	venv := filepath.Join(repo, ".venv")
	site := filepath.Join(venv, "lib", "python3.12", "site-packages")
	for _, d := range []string{"src/calc", "tools", "" + site + "/calc", site + "/calc-1.0.dist-info", site + "/tools-0.1.dist-info", site + "/requests", site + "/requests-2.0.dist-info"} {
		if !filepath.IsAbs(d) {
			d = filepath.Join(repo, d)
		}
		os.MkdirAll(d, 0o755)
	}
	os.WriteFile(filepath.Join(repo, "tools", "__init__.py"), nil, 0o644)
	os.WriteFile(filepath.Join(site, "calc-1.0.dist-info", "RECORD"), []byte("calc/__init__.py,sha256=x,1\ncalc-1.0.dist-info/METADATA,,\n"), 0o644)
	os.WriteFile(filepath.Join(site, "tools-0.1.dist-info", "top_level.txt"), []byte("tools\n"), 0o644)
	os.WriteFile(filepath.Join(site, "tools-0.1.dist-info", "direct_url.json"), []byte(`{"url": "file:///r", "dir_info": {"editable": true}}`), 0o644)
	os.WriteFile(filepath.Join(site, "requests-2.0.dist-info", "top_level.txt"), []byte("requests\n"), 0o644)
	got := installedCopies(venv, repo)
	if want := []string{filepath.Join(site, "calc")}; !slices.Equal(got, want) {
		t.Errorf("installed copies %q, want %q", got, want)
	}
}
