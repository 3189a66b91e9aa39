package env

import (
	"bufio"
	"bytes"
	"encoding/json"
	"sort"
	"strings"
)

// Outcomes of one test.
const (
	Pass  = "pass"
	Fail  = "fail"
	Skip  = "skip"
	Hung  = "hung"  // still running when the package's time ran out
	Flaky = "flaky" // passed and failed on the same commit
)

// TestID names a top-level test: its package's import path, a space, its name
// ("example.com/m/calc TestAdd"). Neither part can hold a space. Subtests are not tracked:
// their names may be made at run time, and a failing subtest fails its parent. Python and
// JS/TS tests are "<test file> <name>", where the name may hold spaces (script.go).
func TestID(pkg, name string) string { return pkg + " " + name }

// SplitID is the package and name of a TestID.
func SplitID(id string) (pkg, name string) {
	i := strings.IndexByte(id, ' ')
	if i < 0 {
		return "", id
	}
	return id[:i], id[i+1:]
}

// Result is one test's outcome in one run.
type Result struct {
	Status  string  `json:"status"`
	Seconds float64 `json:"seconds"`
}

// Results are what one run of `go test -json` said.
type Results struct {
	Tests map[string]Result // by TestID
	// Broken are packages that failed outside any test, with why ("build failed", "timed
	// out", "failed"): their tests did not all run.
	Broken map[string]string
	// Seconds per package, as go test timed it.
	Seconds map[string]float64
	// Output of the tests that did not pass (the first 4 KiB of each): what a failing test
	// said is the issue text at hint level 1.
	Output map[string]string
}

type testEvent struct {
	Action     string
	Package    string
	ImportPath string // build-output and build-fail events (Go 1.24+)
	Test       string
	Elapsed    float64
	Output     string
}

// ParseGoTestJSON reads `go test -json` output (or test2json's). Lines that are not JSON
// events are ignored: a package's own prints can reach stdout when a test binary dies.
func ParseGoTestJSON(out []byte) Results {
	r := Results{Tests: map[string]Result{}, Broken: map[string]string{}, Seconds: map[string]float64{}, Output: map[string]string{}}
	var output = map[string]*strings.Builder{}
	running := map[string]bool{}
	timedOut := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var e testEvent
		if json.Unmarshal(line, &e) != nil {
			continue
		}
		if e.Action == "build-fail" {
			r.Broken[e.ImportPath] = "build failed"
			continue
		}
		if e.Package == "" {
			continue
		}
		top := e.Test != "" && !strings.Contains(e.Test, "/")
		switch e.Action {
		case "run":
			if top {
				running[TestID(e.Package, e.Test)] = true
			}
		case "output":
			if e.Test != "" {
				id := TestID(e.Package, strings.SplitN(e.Test, "/", 2)[0])
				b := output[id]
				if b == nil {
					b = &strings.Builder{}
					output[id] = b
				}
				if b.Len() < 4096 {
					b.WriteString(e.Output)
				}
			}
			if strings.HasPrefix(e.Output, "panic: test timed out after") {
				timedOut[e.Package] = true
			}
			if e.Test == "" && strings.Contains(e.Output, "[build failed]") || strings.Contains(e.Output, "[setup failed]") {
				r.Broken[e.Package] = "build failed"
			}
		case "pass", "fail", "skip":
			if e.Test == "" {
				r.Seconds[e.Package] = e.Elapsed
				if e.Action == "fail" {
					if _, ok := r.Broken[e.Package]; !ok {
						r.Broken[e.Package] = "failed"
					}
				}
				continue
			}
			if top {
				id := TestID(e.Package, e.Test)
				delete(running, id)
				r.Tests[id] = Result{Status: e.Action, Seconds: e.Elapsed}
				// test2json run on a test binary itself (the mutation switch) ends the tests
				// still running when the binary died with a fail event of their own, where
				// go test ends none: after the time limit's panic they hung.
				if e.Action == "fail" && timedOut[e.Package] {
					r.Tests[id] = Result{Status: Hung}
					r.Broken[e.Package] = "timed out"
				}
			}
		}
	}
	// A test that started and never ended was running when its binary died: of the time
	// limit when go test said so, else of a crash (a panic, os.Exit), which is a failure.
	for id := range running {
		pkg, _ := SplitID(id)
		if timedOut[pkg] {
			r.Tests[id] = Result{Status: Hung}
			r.Broken[pkg] = "timed out"
		} else {
			r.Tests[id] = Result{Status: Fail}
		}
	}
	for id, t := range r.Tests {
		if b := output[id]; b != nil && t.Status != Pass && t.Status != Skip {
			r.Output[id] = b.String()
		}
	}
	// A package whose failure is explained by its failing tests is not broken.
	for pkg, why := range r.Broken {
		if why != "failed" {
			continue
		}
		for id, t := range r.Tests {
			if p, _ := SplitID(id); p == pkg && t.Status == Fail {
				delete(r.Broken, pkg)
				break
			}
		}
	}
	return r
}

// IDs are the sorted TestIDs with status.
func (r Results) IDs(status string) []string {
	var ids []string
	for id, t := range r.Tests {
		if t.Status == status {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}
