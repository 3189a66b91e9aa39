package env

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/frognano/frognano/internal/lazyregexp"
)

// JavaScript and TypeScript suites run the package's test script's runner, asked for its
// machine-readable report: node's test runner through a reporter of frognano's (one JSON line
// per top-level test, with its file), vitest's and jest's JSON reports. The user's
// node_modules is linked into each copy and bound read-only: the sandbox has no network.

// detectJS reads the test script of the package.json at dir's top.
func detectJS(dir string) Detection {
	script := testScript(filepath.Join(dir, "package.json"))
	d := Detection{Kind: KindJavaScript, Command: script}
	f := strings.Fields(script)
	switch {
	case strings.ContainsAny(script, "'\"&|;<>$`"):
		// A compound script: which runner's output to read is not known.
	case len(f) >= 2 && f[0] == "node" && f[1] == "--test":
		d.Runner, d.Format, d.Command = RunnerNodeTest, FormatNodeEvents, strings.Join(f[2:], " ")
		return d
	case len(f) >= 1 && f[0] == "vitest":
		d.Runner, d.Format = RunnerVitest, FormatJestJSON
		return d
	case len(f) >= 1 && f[0] == "jest":
		d.Runner, d.Format = RunnerJest, FormatJestJSON
		return d
	}
	d.Unsupported = fmt.Sprintf("the test script %q runs a runner frognano does not read yet (it reads node --test, vitest and jest); name a command that writes JUnit XML or jest's JSON to $FROGNANO_RESULTS in %s", script, ConfigFile)
	return d
}

// locateNode sets d.NodeModules to the user's node_modules (at repo's top), when there is one.
func (d *Detection) locateNode(repo string) {
	nm := filepath.Join(repo, "node_modules")
	if st, err := os.Lstat(nm); err == nil && st.IsDir() {
		d.NodeModules = nm
		d.ReadOnly = append(d.ReadOnly, nm)
	}
	if (d.Runner == RunnerVitest || d.Runner == RunnerJest) && d.NodeModules == "" {
		d.Unsupported = fmt.Sprintf("the test script runs %s, and %s has no node_modules: run npm install (or your package manager's install) there first, since the sandbox installs nothing", d.Runner, repo)
	}
}

// nodeReporter is node --test's reporter (a module written beside the copies, bound
// read-only): one JSON line per finished top-level test, with its file relative to the
// top. A test that ran past --test-timeout fails with failureType testTimeoutFailure; a
// whole file killed that way is reported under the file's own name.
const nodeReporter = `import { relative } from 'node:path';
export default async function* frognano(source) {
  for await (const ev of source) {
    if (ev.type !== 'test:pass' && ev.type !== 'test:fail') continue;
    const d = ev.data;
    if (d.nesting !== 0) continue;
    const det = d.details || {};
    const err = det.error;
    let status = ev.type === 'test:pass' ? 'pass' : 'fail';
    if (d.skip || d.todo) status = 'skip';
    const file = d.file ? relative(process.cwd(), d.file) : '';
    let name = d.name;
    if (d.file && d.name === d.file) name = '*';
    yield JSON.stringify({frognano: 1, status, file, name, ms: det.duration_ms || 0,
      timeout: !!err && err.failureType === 'testTimeoutFailure',
      message: err ? String(err.cause ?? err.message ?? err).slice(0, 4096) : ''}) + '\n';
  }
}
`

// nodeEvent is one line of nodeReporter.
type nodeEvent struct {
	Frognano int     `json:"frognano"`
	Status   string  `json:"status"`
	File     string  `json:"file"`
	Name     string  `json:"name"`
	MS       float64 `json:"ms"`
	Timeout  bool    `json:"timeout"`
	Message  string  `json:"message"`
}

// ParseNodeEvents reads what nodeReporter wrote. A test that ran out of time is hung; a
// file that did ("<file> *") is broken, and its tests that reported keep their results.
func ParseNodeEvents(out []byte) Results {
	r := newResults()
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var e nodeEvent
		if json.Unmarshal(line, &e) != nil || e.Frognano != 1 || e.File == "" || strings.Contains(e.File, " ") {
			continue
		}
		id := TestID(filepath.ToSlash(e.File), e.Name)
		res := Result{Status: e.Status, Seconds: e.MS / 1000}
		if e.Timeout {
			res.Status = Hung
			r.Broken[e.File] = "timed out"
		}
		r.Tests[id] = res
		r.Seconds[e.File] += res.Seconds
		if res.Status != Pass && res.Status != Skip {
			r.Output[id] = e.Message
		}
	}
	return r
}

// jestReport is jest's --json report; vitest's json reporter writes the same shape.
type jestReport struct {
	TestResults []struct {
		Name             string `json:"name"`
		Status           string `json:"status"`
		Message          string `json:"message"`
		AssertionResults []struct {
			AncestorTitles  []string `json:"ancestorTitles"`
			Title           string   `json:"title"`
			Status          string   `json:"status"`
			Duration        float64  `json:"duration"`
			FailureMessages []string `json:"failureMessages"`
		} `json:"assertionResults"`
	} `json:"testResults"`
}

var jsTimedOut = lazyregexp.New(`(?i)(test timed out in|exceeded timeout of) \d+ ?ms`)

// ParseJestJSON reads a jest or vitest JSON report on a copy at root. A test's name is its
// describe blocks and title joined by " > "; one that ran past its time limit is hung; a
// file that failed without a test result (it did not load) is broken.
func ParseJestJSON(report []byte, root string) Results {
	r := newResults()
	start := bytes.IndexByte(report, '{')
	if start < 0 {
		return r
	}
	var rep jestReport
	if json.NewDecoder(bytes.NewReader(report[start:])).Decode(&rep) != nil {
		return r
	}
	for _, f := range rep.TestResults {
		file, err := filepath.Rel(root, f.Name)
		if err != nil || strings.HasPrefix(file, "..") || strings.Contains(file, " ") {
			continue
		}
		file = filepath.ToSlash(file)
		if len(f.AssertionResults) == 0 && f.Status == "failed" {
			r.Broken[file] = "failed: " + tail(f.Message, 400)
		}
		for _, a := range f.AssertionResults {
			id := TestID(file, strings.Join(append(append([]string(nil), a.AncestorTitles...), a.Title), " > "))
			res := Result{Status: Pass, Seconds: a.Duration / 1000}
			msg := strings.Join(a.FailureMessages, "\n")
			switch a.Status {
			case "passed":
			case "failed":
				res.Status = Fail
				if jsTimedOut.MatchString(msg) {
					res.Status = Hung
				}
			default: // pending, skipped, todo, disabled
				res.Status = Skip
			}
			r.Tests[id] = res
			r.Seconds[file] += res.Seconds
			if res.Status == Fail || res.Status == Hung {
				if len(msg) > 4096 {
					msg = msg[:4096]
				}
				r.Output[id] = msg
			}
		}
	}
	return r
}

func newResults() Results {
	return Results{Tests: map[string]Result{}, Broken: map[string]string{}, Seconds: map[string]float64{}, Output: map[string]string{}}
}

// jsCommand runs a JS/TS suite: the test files in files (all the script's when empty),
// each test limited to testTimeout and the whole run to timeout.
func (d Detection) jsCommand(timeout, testTimeout time.Duration, files []string) string {
	quoted := make([]string, len(files))
	for i, f := range files {
		quoted[i] = shellQuote(f)
	}
	fs := strings.Join(quoted, " ")
	ms := testTimeout.Milliseconds()
	limit := fmt.Sprintf("timeout -k 5 %d", int(timeout.Seconds()+0.999))
	switch d.Runner {
	case RunnerNodeTest:
		args := d.Command // the script's own arguments after node --test
		if fs != "" {
			args = strings.Join(nodeFlags(strings.Fields(d.Command)), " ") + " " + fs
		}
		return fmt.Sprintf("%s node --test --test-reporter=%s --test-reporter-destination=stdout --test-timeout=%d %s",
			limit, shellQuote(d.Reporter), ms, args)
	case RunnerVitest:
		return fmt.Sprintf("set -o pipefail; export %s; { %s node_modules/.bin/vitest run --reporter=json --outputFile=\"$FROGNANO_RESULTS\" --testTimeout=%d %s; } 3>&1 1>&2 | cat",
			resultsFD, limit, ms, fs)
	case RunnerJest:
		return fmt.Sprintf("set -o pipefail; export %s; { %s node_modules/.bin/jest --ci --json --outputFile=\"$FROGNANO_RESULTS\" --testTimeout=%d %s; } 3>&1 1>&2 | cat",
			resultsFD, limit, ms, fs)
	}
	return ""
}

// nodeFlags are the options among node --test's arguments (files and folders left out).
func nodeFlags(args []string) []string {
	var out []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			out = append(out, a)
		}
	}
	return out
}
