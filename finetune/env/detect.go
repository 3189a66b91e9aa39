package env

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ConfigFile is the repository's own say on how its tests run, relative to its top:
//
//	{"version": 1, "command": "go test -json -tags integration ./...", "format": "go-test-json"}
//
// command runs in the sandbox (bash -lc) at the top of a private copy and must print the
// results in format; "go-test-json" (the output of `go test -json`) is the only format of
// this version. It overrides detection for the environment and for confirming each task;
// mutants of a Go module are still screened with go test's own build (see finetune/synth).
const ConfigFile = ".frognano/finetune.json"

// Kinds of test suites.
const (
	KindGo         = "go"         // a Go module: go test -json
	KindPython     = "python"     // pytest: detected, not run yet
	KindJavaScript = "javascript" // the package's test script: detected, not run yet
	KindCommand    = "command"    // ConfigFile's command
)

// FormatGoTestJSON is the output of `go test -json`.
const FormatGoTestJSON = "go-test-json"

// Config is ConfigFile's content.
type Config struct {
	Version int    `json:"version"`
	Command string `json:"command"`
	Format  string `json:"format"`
}

// Detection is how a repository's tests run.
type Detection struct {
	Kind    string // one of the Kind constants
	Command string // what runs the whole suite
	Format  string // how its output reads
	// Unsupported, when not empty, says why this version cannot run the suite and what to
	// do instead, as one sentence for people.
	Unsupported string
}

// ErrUnsupported wraps Detection.Unsupported.
var ErrUnsupported = errors.New("unsupported test suite")

// Detect looks at the tree in dir (a Checkout, never the user's work tree).
func Detect(dir string) (Detection, error) {
	if b, err := readRegular(filepath.Join(dir, ConfigFile)); err == nil {
		var c Config
		if err := json.Unmarshal(b, &c); err != nil {
			return Detection{}, fmt.Errorf("%s: %w", ConfigFile, err)
		}
		if c.Version != 1 || strings.TrimSpace(c.Command) == "" {
			return Detection{}, fmt.Errorf("%s: needs \"version\": 1 and a \"command\"", ConfigFile)
		}
		d := Detection{Kind: KindCommand, Command: c.Command, Format: c.Format}
		if d.Format == "" {
			d.Format = FormatGoTestJSON
		}
		if d.Format != FormatGoTestJSON {
			d.Unsupported = fmt.Sprintf("%s names the format %q, and this version reads only %q; make the command print `go test -json` output", ConfigFile, c.Format, FormatGoTestJSON)
		} else if !exists(filepath.Join(dir, "go.mod")) {
			d.Unsupported = fmt.Sprintf("%s is honoured for Go modules only in this version (no go.mod at the top of the repository)", ConfigFile)
		}
		return d, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return Detection{}, fmt.Errorf("%s: %w", ConfigFile, err)
	}
	switch {
	case exists(filepath.Join(dir, "go.mod")):
		return Detection{Kind: KindGo, Command: "go test -json -count=1 -vet=off ./...", Format: FormatGoTestJSON}, nil
	case exists(filepath.Join(dir, "pyproject.toml")) || exists(filepath.Join(dir, "pytest.ini")) ||
		exists(filepath.Join(dir, "setup.py")) || exists(filepath.Join(dir, "setup.cfg")) || exists(filepath.Join(dir, "tox.ini")):
		return Detection{Kind: KindPython, Command: "pytest",
			Unsupported: "this is a Python project (pytest), and synthesis runs only Go modules so far; Python support is planned"}, nil
	case exists(filepath.Join(dir, "package.json")):
		if hasTestScript(filepath.Join(dir, "package.json")) {
			return Detection{Kind: KindJavaScript, Command: "npm test",
				Unsupported: "this is a JavaScript/TypeScript package (npm test), and synthesis runs only Go modules so far; JS/TS support is planned"}, nil
		}
	}
	return Detection{Unsupported: fmt.Sprintf("no test suite found: synthesis needs a Go module (go.mod at the top) with tests, or a command in %s", ConfigFile)}, nil
}

func hasTestScript(p string) bool {
	b, err := readRegular(p)
	if err != nil {
		return false
	}
	var pkg struct {
		Scripts map[string]string `json:"scripts"`
	}
	return json.Unmarshal(b, &pkg) == nil && strings.TrimSpace(pkg.Scripts["test"]) != ""
}

func exists(p string) bool {
	st, err := os.Lstat(p)
	return err == nil && st.Mode().IsRegular()
}

// readRegular reads p only if it is a regular file (not through a link, not a FIFO).
func readRegular(p string) ([]byte, error) {
	st, err := os.Lstat(p)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", p)
	}
	if st.Size() > 1<<20 {
		return nil, fmt.Errorf("%s is larger than 1 MiB", p)
	}
	return os.ReadFile(p)
}
