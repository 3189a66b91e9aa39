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
// command runs in the sandbox (bash -lc) at the top of a private copy and reports its
// results in format (a repository of several Go modules without a go.work: the command
// changes into each module's folder itself, e.g. "go test -json ./... && cd tools && go test
// -json ./..."; go runs with GOWORK=off there, and with the go.work at the top when there is
// one; for a go.work below the top the command says so itself, e.g. "cd services && export
// GOWORK=$PWD/go.work && ..."):
//
//	go-test-json  the output of `go test -json` on stdout (a Go module)
//	junit-xml     JUnit XML written to $FROGNANO_RESULTS (pytest: --junitxml=$FROGNANO_RESULTS)
//	jest-json     jest's --json report written to $FROGNANO_RESULTS (vitest's json reporter
//	              writes the same: --reporter=json --outputFile=$FROGNANO_RESULTS)
//
// It overrides detection for the environment and for confirming each task. Mutants of a Go
// module are still screened with go test's own build (see finetune/synth); those of a Python
// or JS/TS repository run under the configured command too.
const ConfigFile = ".frognano/finetune.json"

// Kinds of test suites.
const (
	KindGo         = "go"         // a Go module: go test -json
	KindPython     = "python"     // pytest (python.go)
	KindJavaScript = "javascript" // the package's test script: node --test, vitest or jest (js.go)
	KindCommand    = "command"    // ConfigFile's command on a Go module
)

// Formats of a test run's results.
const (
	FormatGoTestJSON = "go-test-json" // `go test -json` on stdout
	FormatJUnitXML   = "junit-xml"    // JUnit XML on $FROGNANO_RESULTS
	FormatJestJSON   = "jest-json"    // jest's --json (or vitest's json reporter) on $FROGNANO_RESULTS
	FormatNodeEvents = "node-events"  // node --test through frognano's reporter (js.go), on stdout
)

// Runners of Python and JS/TS suites.
const (
	RunnerPytest   = "pytest"
	RunnerNodeTest = "node-test"
	RunnerVitest   = "vitest"
	RunnerJest     = "jest"
	RunnerCommand  = "command" // ConfigFile's command
)

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
	// Runner runs a Python or JS/TS suite (one of the Runner constants).
	Runner string
	// Python is the interpreter pytest runs under: the repository's virtual environment, or
	// python3 from PATH when it has none (locate).
	Python string
	// NodeModules is the user's node_modules folder, linked into every copy (read-only):
	// the sandbox has no network, so nothing gets installed.
	NodeModules string
	// ReadOnly are the user's paths the sandbox binds read-only (the virtual environment,
	// node_modules), and frognano's node --test reporter.
	ReadOnly []string
	// Shadowed are copies of the repository's own code installed in its virtual
	// environment (a `pip install .`, not editable): the clean code of every task, which the
	// sandbox must hide inside the environment it binds.
	Shadowed []string
	// Reporter is the path of frognano's reporter for node --test (js.go).
	Reporter string
	// Modules are the Go modules (a Go suite, or a command on one), and Workspace whether a
	// go.work at the top ties them: see [Modules].
	Modules   []Module
	Workspace bool
	// IgnoredWorkspaces are the go.work files below the top that Modules does not use,
	// and why (a go.work at the top, a use list it cannot read or that leaves the tree).
	IgnoredWorkspaces []IgnoredWorkspace
	// Unsupported, when not empty, says why this version cannot run the suite and what to
	// do instead, as one sentence for people.
	Unsupported string
}

// ErrUnsupported wraps Detection.Unsupported.
var ErrUnsupported = errors.New("unsupported test suite")

// Detect looks at the tree in dir (a Checkout, never the user's work tree). Where a Python
// or JS/TS suite finds its packages is the user's business: see locate.
func Detect(dir string) (Detection, error) {
	d, err := detect(dir)
	if err != nil || d.Unsupported != "" || (d.Kind != KindGo && d.Kind != KindCommand) {
		return d, err
	}
	if d.Modules, d.Workspace, d.IgnoredWorkspaces, err = ModulesAndIgnored(dir); err != nil {
		d.Unsupported = fmt.Sprintf("the Go modules could not be read (%v); fix the go.mod or go.work, or name a command in %s", err, ConfigFile)
	} else if len(d.Modules) == 0 {
		d.Unsupported = "the go.work uses no module"
	}
	return d, nil
}

func detect(dir string) (Detection, error) {
	lang := language(dir)
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
		switch {
		case d.Format == FormatGoTestJSON && lang == KindGo:
		case d.Format == FormatGoTestJSON:
			d.Unsupported = fmt.Sprintf("%s names the format %q, which needs a Go module (a go.mod or go.work at the top of the repository, or go.mod files below it when the top is no Python or JS/TS project); a Python or JS/TS suite reports %q or %q", ConfigFile, d.Format, FormatJUnitXML, FormatJestJSON)
		case d.Format != FormatJUnitXML && d.Format != FormatJestJSON:
			d.Unsupported = fmt.Sprintf("%s names the format %q, and this version reads %q, %q and %q", ConfigFile, c.Format, FormatGoTestJSON, FormatJUnitXML, FormatJestJSON)
		case lang != KindPython && lang != KindJavaScript:
			d.Unsupported = fmt.Sprintf("%s names %q, which frognano honours for Python (pyproject.toml, setup.py…) and JS/TS (package.json) repositories", ConfigFile, d.Format)
		default:
			d.Kind, d.Runner = lang, RunnerCommand
		}
		return d, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return Detection{}, fmt.Errorf("%s: %w", ConfigFile, err)
	}
	switch lang {
	case KindGo:
		return Detection{Kind: KindGo, Command: "go test -json -count=1 -vet=off ./...", Format: FormatGoTestJSON}, nil
	case KindPython:
		return Detection{Kind: KindPython, Runner: RunnerPytest, Command: "python -m pytest", Format: FormatJUnitXML}, nil
	case KindJavaScript:
		return detectJS(dir), nil
	}
	return Detection{Unsupported: fmt.Sprintf("no test suite found: synthesis needs a Go module (go.mod, anywhere but vendor, testdata or hidden folders, or a go.work), a Python project (pyproject.toml, setup.py, setup.cfg, pytest.ini or tox.ini) or a package.json with a test script at the top, or a command in %s", ConfigFile)}, nil
}

// language is what the repository at dir is written in, by the files at its top; Go too
// when the top is none of these but holds Go modules below (tools/go.mod, services/*/go.mod).
func language(dir string) string {
	switch {
	case exists(filepath.Join(dir, "go.mod")) || exists(filepath.Join(dir, "go.work")):
		return KindGo
	case exists(filepath.Join(dir, "pyproject.toml")) || exists(filepath.Join(dir, "pytest.ini")) ||
		exists(filepath.Join(dir, "setup.py")) || exists(filepath.Join(dir, "setup.cfg")) || exists(filepath.Join(dir, "tox.ini")):
		return KindPython
	case exists(filepath.Join(dir, "package.json")) && testScript(filepath.Join(dir, "package.json")) != "":
		return KindJavaScript
	}
	if mods, _, err := Modules(dir); err == nil && len(mods) > 0 {
		return KindGo
	}
	return ""
}

// testScript is package.json's scripts.test ("" when none).
func testScript(p string) string {
	b, err := readRegular(p)
	if err != nil {
		return ""
	}
	var pkg struct {
		Scripts map[string]string `json:"scripts"`
	}
	if json.Unmarshal(b, &pkg) != nil {
		return ""
	}
	return strings.TrimSpace(pkg.Scripts["test"])
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
