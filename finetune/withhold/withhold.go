// Package withhold takes a task's failing tests out of the tree the agent works on.
//
// A synthesized task breaks behaviour that tests of the repository check, and those tests
// (FAIL_TO_PASS) are its reward. Left in the agent's copy they are also the answer key: a
// model trained with RL learns to read the asserted values and return them, which the
// hidden tests reward with a 1. So the tree every episode copies has them removed (as in
// SWE-bench, where the tests that judge a fix are not in the repository the agent sees,
// and in self-play SWE-RL, whose bug patches come with a test-weakening one). The reward
// builds its own tree from the base commit, tests included (finetune/reward), and lays
// only the agent's non-test changes on it, so nothing the agent does to a test file counts.
//
// What is removed: Go — each top-level test function named (its doc comment with it), the
// package-level functions, variables, constants and types (a type with its methods: a
// suite run by reflection) of the test files that only removed code uses (a table of
// cases, a helper returning the expected value), the files only it
// names in a string literal, a constant path or a //go:embed line (testdata/*.golden), and
// the imports only it used, and of a fixtures package of the tree the removed code
// imported (one only test code imports, its files not changed by the task's patch:
// internal/cases with var Add = ...) the declarations it selected (cases.Add) that no other
// code uses, with what only they use; Python — each test function or method a node id names
// (decorators and the comments just above included), the module-level assignments and
// functions only they use (a fixture by its function's name or its name=, in the test
// file or a conftest.py above it), the test file's committed bytecode, a `pass` put into a class
// left empty; the module-level declarations of a local helper module in a folder of the
// tests (tests/cases.py, imported as tests.cases, .cases or cases from the test's folder)
// that only they import, or the whole module (and its bytecode) when no other file names
// it, with the imports of them the test file held; and the data files in a folder of the
// tests they name by a relative path or by string parts joined with / or os.path.join
// (Path(__file__).parent / "data" / "expected.json") that no other file of the tree
// names. What withheld code used and other code uses too stays, named in
// [Result.Shared]. Every other test stays, so the agent can still run the suite. A test that cannot
// be removed safely (not found, referred to by other code, a file that would not parse,
// an import whose name is unknown) stays where it is and is listed in [Result.Kept].
// JavaScript tasks are not withheld yet (the reward does not score them either).
package withhold

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/frognano/frognano/finetune/env"
	"github.com/frognano/frognano/finetune/task"
	"github.com/frognano/frognano/internal/atomicfile"
)

// Result says what [Tests] did.
type Result struct {
	Withheld []string `json:"withheld,omitempty"` // test ids removed from the tree
	// Files are the files (slash paths) only the withheld tests read, removed too: golden
	// outputs under testdata/, a Python test's data files, helper modules only it imported,
	// and the committed bytecode of each Python file changed or removed.
	Files []string `json:"files,omitempty"`
	// Kept are the FAIL_TO_PASS tests still in the tree, each with why: the agent can
	// read them.
	Kept map[string]string `json:"kept,omitempty"`
	// Shared are the declarations of the test files, helper modules and fixtures
	// packages ("file: name") that withheld code used and that stay, as other code uses
	// them too (a table a kept test also ranges over), and the Python data files it named
	// that another file names too ("tests/data/expected.json"): what they hold may be what
	// a withheld test asserted, readable by the agent.
	Shared []string `json:"shared,omitempty"`

	// literals are the numbers and strings of the withheld code and files (redact.go).
	literals map[string]bool
}

// Tests removes t's FAIL_TO_PASS tests from root, a tree of t's base commit with its patch
// applied that frognano made itself (env.ExportCommit): it is changed in place. An error
// is returned only when root could not be read or written; a test that could not be
// removed is in Result.Kept.
func Tests(root string, t *task.Task) (*Result, error) {
	res := &Result{Kept: map[string]string{}}
	var err error
	switch t.Test.Kind {
	case env.KindGo:
		err = goTests(root, t.Test, t.FailToPass, t.Patch, res)
	case env.KindPython:
		err = pyTests(root, t.FailToPass, res)
	default:
		for _, id := range t.FailToPass {
			res.Kept[id] = fmt.Sprintf("%s tests are not withheld yet", t.Test.Kind)
		}
	}
	sort.Strings(res.Withheld)
	sort.Strings(res.Shared)
	sort.Strings(res.Files)
	if len(res.Kept) == 0 {
		res.Kept = nil
	}
	return res, err
}

// keep marks ids as left in the tree, with why.
func (r *Result) keep(ids []string, why string) {
	for _, id := range ids {
		r.Kept[id] = why
	}
}

// regular reads the regular file rel under root, refusing a path through a symbolic link
// (a tree exported from git may hold links, and frognano follows none of them) or out of
// root.
func regular(root, rel string) ([]byte, os.FileMode, error) {
	rel = filepath.Clean(filepath.FromSlash(rel))
	if filepath.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil, 0, fmt.Errorf("%s: outside the tree", rel)
	}
	p := root
	parts := strings.Split(rel, string(filepath.Separator))
	for i, part := range parts {
		p = filepath.Join(p, part)
		fi, err := os.Lstat(p)
		if err != nil {
			return nil, 0, err
		}
		if i < len(parts)-1 {
			if !fi.IsDir() {
				return nil, 0, fmt.Errorf("%s: not a regular file in a folder (a link?)", rel)
			}
			continue
		}
		if !fi.Mode().IsRegular() {
			return nil, 0, fmt.Errorf("%s: not a regular file in a folder (a link?)", rel)
		}
		b, err := os.ReadFile(p)
		return b, fi.Mode().Perm(), err
	}
	return nil, 0, fmt.Errorf("%s: empty path", rel)
}

// write replaces rel under root (read with regular just before) atomically.
func write(root, rel string, b []byte, mode os.FileMode) error {
	return atomicfile.Write(filepath.Join(root, filepath.FromSlash(rel)), b, mode)
}

// wholeLines widens [start, end) to the lines it touches, the end's newline included.
func wholeLines(b []byte, start, end int) [2]int {
	for start > 0 && b[start-1] != '\n' {
		start--
	}
	for end < len(b) && b[end-1] != '\n' {
		end++
	}
	return [2]int{start, end}
}

// blanksAfter widens the whole lines r over the blank lines after it when a blank line
// (or the file's start) is before it, so that removing r leaves one gap, not two.
func blanksAfter(b []byte, r [2]int) [2]int {
	if r[0] > 0 {
		prev := bytes.LastIndexByte(b[:r[0]-1], '\n') + 1 // the line before r
		if len(bytes.TrimSpace(b[prev:r[0]])) > 0 {
			return r
		}
	}
	for r[1] < len(b) {
		end := bytes.IndexByte(b[r[1]:], '\n')
		if end < 0 || len(bytes.TrimSpace(b[r[1]:r[1]+end])) > 0 {
			break
		}
		r[1] += end + 1
	}
	return r
}

// inRanges: off lies in one of rs.
func inRanges(rs [][2]int, off int) bool {
	for _, r := range rs {
		if off >= r[0] && off < r[1] {
			return true
		}
	}
	return false
}

func sortRanges(rs [][2]int) [][2]int {
	sort.Slice(rs, func(i, j int) bool { return rs[i][0] < rs[j][0] })
	out := rs[:0]
	for _, r := range rs {
		if n := len(out); n > 0 && r[0] < out[n-1][1] {
			out[n-1][1] = max(out[n-1][1], r[1])
			continue
		}
		out = append(out, r)
	}
	return out
}

// edit replaces src[start:end] with text.
type edit struct {
	start, end int
	text       string
}

// removals are edits that remove rs.
func removals(rs [][2]int) []edit {
	edits := make([]edit, len(rs))
	for i, r := range rs {
		edits[i] = edit{r[0], r[1], ""}
	}
	return edits
}

// apply makes the edits (sorted, not overlapping) to src.
func apply(src []byte, edits []edit) []byte {
	var out []byte
	at := 0
	for _, e := range edits {
		out = append(out, src[at:e.start]...)
		out = append(out, e.text...)
		at = e.end
	}
	return append(out, src[at:]...)
}
