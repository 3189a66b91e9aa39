package env

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/frognano/frognano/internal/lazyregexp"
)

// Python suites run under pytest, from the repository's own virtual environment: the
// sandbox has no network, so nothing is installed, and the user's environment already holds
// the project's dependencies. It is bound read-only into the sandbox at its own path (it
// lives outside the copy, in the user's tree or their cache), and PYTHONPATH puts the copy
// first, so an editable install of the project, whose paths lead to the user's tree, never
// shadows the copy's code (that tree is hidden in the sandbox anyway).

// locatePython sets d.Python (and what to bind) for the repository at repo: its .venv or
// venv, the active VIRTUAL_ENV, Poetry's environment for it, else python3 from PATH.
func (d *Detection) locatePython(repo string) {
	for _, venv := range pythonEnvs(repo) {
		py := filepath.Join(venv, "bin", "python")
		if st, err := os.Stat(py); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			continue
		}
		d.Python = py
		d.ReadOnly = append(d.ReadOnly, venv)
		d.Shadowed = installedCopies(venv, repo)
		// The interpreter the environment was made from, when it lies where the sandbox's
		// allowlist may not reach (pyvenv.cfg's home is its bin folder).
		if home := venvHome(venv); home != "" {
			if inst := pythonInstallation(home, repo); inst != "" {
				d.ReadOnly = append(d.ReadOnly, inst)
			}
		}
		return
	}
	d.Python = "python3" // from PATH inside the sandbox; pytest must be installed there
}

// installedCopies are the folders and modules in venv's site-packages that a
// distribution installed there (not editable) holds of the repository's own top-level
// packages or modules (found at its top or under src/).
func installedCopies(venv, repo string) []string {
	sites, _ := filepath.Glob(filepath.Join(venv, "lib", "python*", "site-packages"))
	var out []string
	for _, site := range sites {
		infos, _ := filepath.Glob(filepath.Join(site, "*.dist-info"))
		for _, info := range infos {
			if b, err := readRegular(filepath.Join(info, "direct_url.json")); err == nil && editable.Match(b) {
				continue // a link to the user's tree, which is hidden
			}
			for _, top := range topLevel(info) {
				if !ownModule(repo, top) {
					continue
				}
				for _, p := range []string{filepath.Join(site, top), filepath.Join(site, top+".py")} {
					if _, err := os.Lstat(p); err == nil {
						out = append(out, p)
					}
				}
			}
		}
	}
	return out
}

var editable = regexp.MustCompile(`"editable"\s*:\s*true`)

// topLevel are a distribution's top-level import names: top_level.txt, else the first
// elements of the paths its RECORD lists.
func topLevel(info string) []string {
	if b, err := readRegular(filepath.Join(info, "top_level.txt")); err == nil {
		return strings.Fields(string(b))
	}
	b, err := readRegular(filepath.Join(info, "RECORD"))
	if err != nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		p, _, _ := strings.Cut(l, ",")
		first, _, _ := strings.Cut(p, "/")
		first = strings.TrimSuffix(first, ".py")
		if first == "" || strings.HasSuffix(first, ".dist-info") || strings.HasPrefix(first, "..") || strings.HasPrefix(first, "__") || seen[first] {
			continue
		}
		seen[first] = true
		out = append(out, first)
	}
	return out
}

// ownModule: the repository has a package or module named top, at its top or under src/.
func ownModule(repo, top string) bool {
	if top == "" || strings.ContainsAny(top, "/\\") || top == "." || top == ".." {
		return false
	}
	for _, base := range []string{repo, filepath.Join(repo, "src")} {
		if isDirPath(filepath.Join(base, top)) {
			return true
		}
		if _, err := os.Lstat(filepath.Join(base, top+".py")); err == nil {
			return true
		}
	}
	return false
}

// pythonInstallation is the folder to bind for the interpreter a virtual environment was
// made from (pyvenv.cfg's home, its bin folder): the installation around it, or the bin
// folder alone when the installation would be a home directory, hold one or hold the
// repository (home = ~/bin would bind the whole home, its secrets but the masked ones
// included); "" when the system's folders have it already or it is missing.
func pythonInstallation(home, repo string) string {
	inst := filepath.Dir(home)
	if inst == "/" || inst == "/usr" || inst == "/usr/local" || !isDirPath(inst) {
		return ""
	}
	holds := []string{repo}
	if h, err := os.UserHomeDir(); err == nil { // $HOME
		holds = append(holds, h)
	}
	for _, p := range holds {
		if p = filepath.Clean(p); p == inst || strings.HasPrefix(p, inst+string(filepath.Separator)) {
			if isDirPath(home) {
				return home
			}
			return ""
		}
	}
	return inst
}

// LocatePython is what a Session does for a pytest suite, for a run outside one
// (finetune/reward): d.Python and the paths the sandbox binds read-only, for the
// repository at repo (the user's, where their virtual environment lies).
func (d *Detection) LocatePython(repo string) { d.locatePython(repo) }

// pythonEnvs are the virtual environments that may be the repository's, most specific first.
func pythonEnvs(repo string) []string {
	out := []string{filepath.Join(repo, ".venv"), filepath.Join(repo, "venv")}
	if v := os.Getenv("VIRTUAL_ENV"); filepath.IsAbs(v) {
		out = append(out, v)
	}
	return append(out, poetryEnvs(repo)...)
}

// poetryEnvs are Poetry's environments for the project at repo: Poetry names them
// <name>-<first 8 of urlsafe base64 of sha256 of the project's path>-py<version> under its
// cache (poetry/utils/env/env_manager.py, generate_env_name).
func poetryEnvs(repo string) []string {
	b, err := readRegular(filepath.Join(repo, "pyproject.toml"))
	if err != nil {
		return nil
	}
	m := regexp.MustCompile(`(?m)^\s*name\s*=\s*["']([^"']+)["']`).FindSubmatch(b)
	if m == nil {
		return nil
	}
	name := regexp.MustCompile("[ $`!*@\"\\\\\r\n\t]").ReplaceAllString(strings.ToLower(string(m[1])), "_")
	if len(name) > 42 {
		name = name[:42]
	}
	sum := sha256.Sum256([]byte(repo))
	prefix := name + "-" + base64.URLEncoding.EncodeToString(sum[:])[:8] + "-py"
	cache := os.Getenv("XDG_CACHE_HOME")
	if !filepath.IsAbs(cache) {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	matches, _ := filepath.Glob(filepath.Join(cache, "pypoetry", "virtualenvs", prefix+"*"))
	return matches
}

func venvHome(venv string) string {
	b, err := readRegular(filepath.Join(venv, "pyvenv.cfg"))
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if ok && strings.TrimSpace(k) == "home" && filepath.IsAbs(strings.TrimSpace(v)) {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func isDirPath(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// resultsFD is where a runner writes its machine-readable results inside the sandbox: a
// descriptor onto the command's stdout, while the runner's own talk goes to stderr, so the
// results come from the command's output, never from a file in the copy a test can touch.
// The commands send it through `| cat`: a pipe of the sandbox user's own, which /dev/fd/3
// can open again (frognano's pipe cannot be, by another user).
const resultsFD = `FROGNANO_RESULTS=/dev/fd/3`

// PythonEnv is the shell prelude of a pytest run on a copy: the copy (and its src/) first on
// PYTHONPATH, no byte code written (a mutant's file may change within the second its
// original's byte code was written in).
const PythonEnv = `export PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"; [ -d src ] && PYTHONPATH="$PWD/src:$PYTHONPATH"; `

// PytestArgs are pytest's arguments for the tests in only (test files or TestIDs; all when
// empty) without deselect (TestIDs); -v names each test as it starts, which finds a hung one.
func PytestArgs(only, deselect []string) []string {
	args := []string{"-p", "no:cacheprovider", "-v", "-o", "junit_family=xunit1"}
	for _, id := range deselect {
		args = append(args, "--deselect="+nodeID(id))
	}
	for _, x := range only {
		if strings.Contains(x, " ") { // a TestID, else a file
			x = nodeID(x)
		}
		args = append(args, x)
	}
	return args
}

// pytestCommand runs pytest on the copy (see PytestArgs). The run is interrupted (SIGINT, on
// which pytest still writes its report) when it passes timeout.
func pytestCommand(python string, timeout time.Duration, only, deselect []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "set -o pipefail; %sexport %s; ", PythonEnv, resultsFD)
	fmt.Fprintf(&b, "{ timeout -s INT -k 10 %d %s -m pytest --junitxml=\"$FROGNANO_RESULTS\"", int(timeout.Seconds()+0.999), shellQuote(python))
	for _, a := range PytestArgs(only, deselect) {
		b.WriteString(" " + shellQuote(a))
	}
	b.WriteString("; } 3>&1 1>&2 | cat")
	return b.String()
}

// nodeID is pytest's name for a TestID ("tests/test_a.py TestX::test_y" →
// "tests/test_a.py::TestX::test_y"); a TestID of a Python suite is its node id with the
// first "::" made a space.
func nodeID(id string) string {
	file, name := SplitID(id)
	return file + "::" + name
}

// fromNodeID is the TestID of a pytest node id.
func fromNodeID(n string) string {
	file, name, ok := strings.Cut(n, "::")
	if !ok {
		return ""
	}
	return TestID(file, name)
}

type junitCase struct {
	Classname string  `xml:"classname,attr"`
	Name      string  `xml:"name,attr"`
	File      string  `xml:"file,attr"`
	Time      float64 `xml:"time,attr"`
	Failure   *struct {
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	} `xml:"failure"`
	Error *struct {
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	} `xml:"error"`
	Skipped   *struct{} `xml:"skipped"`
	SystemOut string    `xml:"system-out"`
}

// ParseJUnitXML reads a JUnit XML report: every <testcase>, at any depth. A test's id is
// its file and its pytest name when the report says the file (pytest's xunit1 family), else
// its classname and name. What does not parse is left out: a report cut short by a
// crash still gives the tests before it.
func ParseJUnitXML(report []byte) Results {
	r := Results{Tests: map[string]Result{}, Broken: map[string]string{}, Seconds: map[string]float64{}, Output: map[string]string{}}
	dec := xml.NewDecoder(bytes.NewReader(report))
	dec.Strict = false
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		se, ok := tok.(xml.StartElement)
		if !ok || se.Name.Local != "testcase" {
			continue
		}
		var c junitCase
		if dec.DecodeElement(&c, &se) != nil || c.Name == "" {
			continue
		}
		id := junitID(c)
		if id == "" {
			continue
		}
		res := Result{Status: Pass, Seconds: c.Time}
		var out string
		switch {
		case c.Failure != nil:
			res.Status, out = Fail, c.Failure.Message+"\n"+c.Failure.Text
		case c.Error != nil:
			res.Status, out = Fail, c.Error.Message+"\n"+c.Error.Text
		case c.Skipped != nil:
			res.Status = Skip
		}
		// A parametrized test reported twice (a setup error after a pass): the worse stands.
		if old, ok := r.Tests[id]; ok && old.Status == Fail {
			continue
		}
		r.Tests[id] = res
		if res.Status == Fail {
			if len(out) > 4096 {
				out = out[:4096]
			}
			r.Output[id] = strings.TrimSpace(out) + "\n"
		}
		pkg, _ := SplitID(id)
		r.Seconds[pkg] += c.Time
	}
	return r
}

func junitID(c junitCase) string {
	if c.File != "" && strings.HasSuffix(c.File, ".py") {
		// pytest: classname is the node id with "/" and "::" made dots and ".py" dropped.
		mod := strings.ReplaceAll(strings.TrimSuffix(c.File, ".py"), "/", ".")
		rest := strings.TrimPrefix(strings.TrimPrefix(c.Classname, mod), ".")
		name := c.Name
		if rest != "" && rest != c.Classname {
			name = strings.ReplaceAll(rest, ".", "::") + "::" + c.Name
		}
		if strings.Contains(c.File, " ") {
			return ""
		}
		return TestID(filepath.ToSlash(c.File), name)
	}
	pkg := c.Classname
	if c.File != "" {
		pkg = c.File
	}
	if pkg == "" || strings.Contains(pkg, " ") {
		return ""
	}
	return TestID(pkg, c.Name)
}

var pytestOutcome = lazyregexp.New(`\s(PASSED|FAILED|SKIPPED|XFAIL|XPASS|ERROR)(\s+\[\s*\d+%\])?\s*$`)

// pytestHung is the test that was running when pytest was interrupted: the last test that
// -v started and gave no outcome in the progress lines between "collected N items" and the
// first banner after them ("" when the run was not interrupted).
func pytestHung(talk []byte) string {
	if !bytes.Contains(talk, []byte("KeyboardInterrupt")) {
		return ""
	}
	last, started := "", false
	sc := bufio.NewScanner(bytes.NewReader(talk))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !started:
			started = strings.Contains(line, "collected ")
			continue
		case strings.HasPrefix(line, "==") || strings.HasPrefix(line, "__") || strings.HasPrefix(line, "--"):
			return fromNodeID(last)
		case strings.HasPrefix(line, " ") || !strings.Contains(line, ".py::"):
			continue
		case pytestOutcome.MatchString(line):
			last = ""
		default:
			last = strings.TrimSpace(line)
		}
	}
	return fromNodeID(last)
}
