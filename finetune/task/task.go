// Package task is the store of synthesized training tasks: the format the training loop
// reads. Entry points: [Task] (one task), [Open] and [Store.Put] / [Store.List], and
// [MakePatch] / [CheckPatch], which prove a task reproducible from its base commit.
//
// # Format, version 1
//
// A store is a folder (by default finetune/tasks/<repository hash> in frognano's cache
// folder, never inside the repository) with one JSON file per task, <id>.json, each written
// atomically (a temporary file renamed over it), so a reader never sees half a task and
// writers never share a file. A task file holds one [Task] object; its fields:
//
//	version        1; a reader skips files of a version it does not know
//	id             16 hex digits: sha256 of base_commit, a newline, patch; equal tasks share it
//	repo           the repository the task was made from (absolute path, for people)
//	base_commit    the full commit hash the patch applies to
//	patch          a unified diff (git apply, -p1) that introduces the bug into base_commit;
//	               applied, the FAIL_TO_PASS tests fail; reversed, they pass again
//	FAIL_TO_PASS   tests that pass at base_commit and fail with the patch (hidden from the agent)
//	PASS_TO_PASS   tests that pass in both (the ones that could be affected were run)
//	test           how to run them: kind ("go", "python", "javascript") and command (a
//	               template; see [TestSpec]); for a Go repository of several modules,
//	               modules (each test package's module folder) and workspace (see below)
//	issue          the problem statement given to the agent, at one hint level
//	other_issues   the same problem at the other hint levels available
//	features       difficulty features the loop steers by (see [Features])
//	origin         what made the task: synthesizer, operator, file, function, line
//	created        RFC 3339 time
//	status         absent in a task; "screened" in screened/ only (see below)
//
// # Screened candidates (not tasks)
//
// With lazy confirmation (`frognano finetune synth --lazy-confirm`) a candidate that the
// mutation switch accepted is written, before any plain-patch confirmation, to the
// subfolder screened/ as <id>.json with "status": "screened". Such a file is not a task:
// its FAIL_TO_PASS holds only the first failing test of each switched test binary that
// caught it (a mutant's run stops there), and it has no issue text: confirmation runs every
// affected test and sets the task's exact sets. [Store.List] and [Store.Get] never read screened/ and refuse any
// file whose status is set, and [Store.Put] refuses to write one, so a reader of the
// folder's top level sees confirmed tasks only. Confirmation (synth.Confirm, `frognano
// finetune synth --confirm`) builds each as a plain patch on a fresh copy, writes the task
// it proves (without a status) to the top level and removes the screened file, or removes
// it when the plain patch does not break a test. A training loop confirms a screened
// candidate before its first use and never trains on one.
//
// Test names are "<package import path> <TestName>" for Go (top-level tests only), and
// "<test file> <name>" for Python and JS/TS: the file slash-separated from the top, the name
// pytest's node id after the file ("TestX::test_y[1]"), node's top-level test name, or jest's
// and vitest's describe blocks and title joined by " > " (names may hold spaces, files may
// not; split at the first space). Hint levels:
// 0 names the file, the function and the expected behaviour; 1 gives only the failing
// tests' output; 2 is a user-style symptom written by a model from the failing tests'
// names and output (never the patch; the tests' names are taken out of it), present only
// when synthesis ran with a model. features.hint_level is the level of issue.
//
// Synthesizers (features.synthesizer and origin.synthesizer): "mutation" and "removal"
// (procedural, go/ast), "history" (the non-test Go changes of a past commit, origin.commit,
// reverted on base_commit), "model" (a bug the agent wrote into origin.function),
// "combined" (the patches of the tasks origin.parts in one; features.bugs counts them).
// Fields added within version 1, absent from older files: features.locality,
// features.call_depth, features.packages, origin.commit, origin.parts, test.modules,
// test.workspace, test.works.
//
// Go modules: a test's package builds and runs in the folder of its module, which
// test.modules gives by package import path ("lib" for example.com/lib/calc; "." is the
// top). A package it does not name, and every package of a task without it (a repository
// of one module at its top, and tasks made before modules were recorded), is in the module
// at the top. test.workspace true: the go.work at the top ties the modules and the tests
// run with it; absent, each module runs alone (GOWORK=off), or, when test.works names its
// folder, with the go.work of the folder given there (one below the top). A reader that
// predates test.modules looks for every package in the module at the top, where another
// module's does not build: there such a task fails to score (an error, or reward 0), never
// passes; one that predates test.works runs such a module alone, where it fails to build.
//
// Fields may be added within a version; a field's meaning never changes without a new
// version.
package task

import (
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// Version of the task format.
const Version = 1

// Task is one verified training task.
type Task struct {
	Version     int       `json:"version"`
	ID          string    `json:"id"`
	Repo        string    `json:"repo"`
	BaseCommit  string    `json:"base_commit"`
	Patch       string    `json:"patch"`
	FailToPass  []string  `json:"FAIL_TO_PASS"`
	PassToPass  []string  `json:"PASS_TO_PASS"`
	Test        TestSpec  `json:"test"`
	Issue       Issue     `json:"issue"`
	OtherIssues []Issue   `json:"other_issues,omitempty"`
	Features    Features  `json:"features"`
	Origin      Origin    `json:"origin"`
	Created     time.Time `json:"created"`
	// Status is empty in a task: a plain patch confirmed it. StatusScreened marks a
	// candidate the switch alone accepted (in screened/ only; not a task).
	Status string `json:"status,omitempty"`
}

// StatusScreened is the status of a screened, unconfirmed candidate.
const StatusScreened = "screened"

// TestSpec says how the task's tests run.
type TestSpec struct {
	Kind string `json:"kind"` // "go", "python", "javascript"
	// Command runs the named tests at the top of the repository (Go: in the folder of
	// their module, Modules): {packages} becomes the
	// quoted import paths, {run} the quoted -run pattern of the test names (Go); {tests} the
	// quoted pytest node ids (file::name), {files} the quoted test files and {names} a
	// pattern of the test names (JS/TS).
	Command string `json:"command"`
	// Modules are the folders (slash paths from the top, "." the top) of the modules of
	// the Go test packages not in the module at the top, by import path; absent when all
	// are there.
	Modules map[string]string `json:"modules,omitempty"`
	// Workspace: the Go tests run with the go.work at the top (else GOWORK=off).
	Workspace bool `json:"workspace,omitempty"`
	// Works are, by module folder (as in Modules, "." the top), the folder of the go.work
	// below the top that ties the module: its tests run with that one. Absent: GOWORK=off
	// (or the top's, with Workspace).
	Works map[string]string `json:"works,omitempty"`
}

// WorkDir is the folder of the go.work below the top that ties the module in folder mod
// ("" none: see Works).
func (s TestSpec) WorkDir(mod string) string { return s.Works[mod] }

// ModuleDir is the folder of the module of the Go package pkg, where its tests build and
// run: "." (the top) unless Modules says otherwise.
func (s TestSpec) ModuleDir(pkg string) string {
	if d, ok := s.Modules[pkg]; ok && d != "" {
		return d
	}
	return "."
}

// Issue is a problem statement at one hint level.
type Issue struct {
	Level int    `json:"level"`
	Text  string `json:"text"`
}

// Features are a task's difficulty knobs and measures.
type Features struct {
	Synthesizer  string `json:"synthesizer"` // "mutation", "removal", "history", "model", "combined"
	Operator     string `json:"operator,omitempty"`
	ChangedFiles int    `json:"changed_files"`
	ChangedLines int    `json:"changed_lines"` // lines removed plus lines added by the patch
	HintLevel    int    `json:"hint_level"`    // of Issue
	Bugs         int    `json:"bugs"`          // 1 unless combined
	FailToPass   int    `json:"fail_to_pass"`  // size of the failing set
	PassToPass   int    `json:"pass_to_pass"`
	// TestDistance is 0 when every failing test is in the changed package, 1 when some
	// are in packages that import it.
	TestDistance int `json:"test_distance"`
	// Locality is where the nearest failing test is: "same-file" (the _test.go file of a
	// changed file), "same-package" or "other-package"; empty in tasks made before it was
	// recorded.
	Locality string `json:"locality,omitempty"`
	// CallDepth is 1 when a failing test calls a changed function by name, 2 when none
	// does (the change is reached through other code), 0 when unknown.
	CallDepth int `json:"call_depth,omitempty"`
	// Packages is how many packages the patch changes.
	Packages int `json:"packages,omitempty"`
}

// Origin is what made a task, for people and for statistics.
type Origin struct {
	Synthesizer string `json:"synthesizer"`
	Operator    string `json:"operator,omitempty"`
	File        string `json:"file"`
	Function    string `json:"function,omitempty"`
	Line        int    `json:"line,omitempty"`
	Description string `json:"description,omitempty"` // "flipped < to <=", for people
	// Commit is the past commit a history task reverts (its non-test Go changes).
	Commit string `json:"commit,omitempty"`
	// Parts are the ids of the tasks a combined task merges.
	Parts []string `json:"parts,omitempty"`
}

// MakeID is the id of the task with base commit and patch.
func MakeID(base, patch string) string {
	sum := sha256.Sum256([]byte(base + "\n" + patch))
	return hex.EncodeToString(sum[:8])
}
