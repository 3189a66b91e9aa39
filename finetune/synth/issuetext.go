package synth

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/frognano/frognano/finetune/env"
	"github.com/frognano/frognano/finetune/task"
	"github.com/frognano/frognano/internal/lazyregexp"
)

// Hint levels of a task's issue text: how much the problem statement helps.
const (
	// HintLocation names the file, the function and the expected behaviour.
	HintLocation = 0
	// HintOutput gives only what the failing tests printed.
	HintOutput = 1
	// HintSymptom is a user's report of the symptom, written by the model from the failing
	// tests' names and output (never from the patch): the hardest.
	HintSymptom = 2
)

// ErrNoIssueModel is asking for the symptom level with no model to write it.
var ErrNoIssueModel = errors.New("hint level 2 (a user-style symptom) is written by a model, and none is configured")

// levelZero names each changed function and file with its doc comment, the expected
// behaviour beyond it (hint), and the failing tests' names.
func levelZero(funcs []funcRef, hint string, failToPass []string) task.Issue {
	var b strings.Builder
	if len(funcs) == 0 {
		b.WriteString("The code does not behave as expected.")
	}
	for i, f := range funcs {
		if i == 4 {
			fmt.Fprintf(&b, "\n\n(and %d more functions)", len(funcs)-i)
			break
		}
		if i > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "`%s` in %s does not behave as expected.", f.name, f.file)
		if f.doc != "" {
			fmt.Fprintf(&b, " What it should do, from its documentation:\n\n%s", f.doc)
		}
	}
	if hint != "" {
		fmt.Fprintf(&b, "\n\nThe intended behaviour was described as: %s", hint)
	}
	fmt.Fprintf(&b, "\n\nThese tests fail: %s.", strings.Join(names(failToPass), ", "))
	return task.Issue{Level: HintLocation, Text: strings.TrimSpace(b.String())}
}

// goRerun is the go test command that runs one test, from the top of the repository: go
// finds a package by import path only in the folder of its module (dir, "." the top).
func goRerun(id, dir string) string {
	pkg, name := env.SplitID(id)
	cd := ""
	if dir != "." && dir != "" {
		cd = "cd " + env.ShellQuote(dir) + " && "
	}
	return fmt.Sprintf("%sgo test -run '^%s$' %s", cd, name, pkg)
}

// levelOneWith is levelOne with rerun saying how each failing test runs on its own.
func levelOneWith(failToPass []string, output map[string]string, rerun func(string) string) task.Issue {
	var b strings.Builder
	b.WriteString("Some tests fail. Make them pass without changing the tests.\n")
	for _, id := range failToPass {
		fmt.Fprintf(&b, "\n$ %s\n%s", rerun(id), strings.TrimRight(output[id], "\n"))
		if b.Len() > 6000 {
			break
		}
	}
	return task.Issue{Level: HintOutput, Text: strings.TrimSpace(b.String())}
}

// finishTask completes a task both kinds of synthesizer make: the difficulty features the
// patch and the failing tests tell (where the failing tests are, whether they call a
// changed function), the symptom-level issue when a model is configured, and the issue at
// the chosen hint level (the others in OtherIssues).
func (r *runner) finishTask(ctx context.Context, t *task.Task, funcs []funcRef, issues []task.Issue, output map[string]string) {
	t.Features.Locality, t.Features.CallDepth = r.locate(funcs, t.FailToPass)
	var changed []task.Change
	for _, m := range patchPaths.FindAllStringSubmatch(t.Patch, -1) {
		changed = append(changed, task.Change{Path: m[1]})
	}
	t.Features.Packages = len(r.packagesOf(changed))
	// After one failure the model is not asked again in this run: a model that hangs would
	// otherwise cost every task the call's time limit.
	if r.opts.IssueModel != nil && r.issueErrors > 0 {
		r.issueErrors++
	} else if r.opts.IssueModel != nil {
		if text, err := r.symptom(ctx, t.FailToPass, output); err == nil {
			issues = append(issues, task.Issue{Level: HintSymptom, Text: text})
		} else {
			r.issueErrors++
		}
	}
	want := r.opts.HintLevel
	t.OtherIssues = nil
	chosen := false
	for _, is := range issues {
		if is.Level == want && !chosen {
			t.Issue, chosen = is, true
		} else {
			t.OtherIssues = append(t.OtherIssues, is)
		}
	}
	if !chosen { // the symptom could not be written: the nearest level there is
		t.Issue, t.OtherIssues = t.OtherIssues[len(t.OtherIssues)-1], t.OtherIssues[:len(t.OtherIssues)-1]
	}
	t.Features.HintLevel = t.Issue.Level
}

// symptomSystem asks for a user's bug report. The model sees the failing tests' names and
// output only: never the patch, so it cannot leak the fix into the statement.
const symptomSystem = `You write bug reports the way a user of a software library would.
You are given the output of some failing automated checks. Write a short report (two to five sentences) of what goes wrong for a user: what they did, what they saw, and what they expected instead.
Do not name tests, test files, line numbers or functions of the tests; do not guess at the cause or the fix; do not quote the output at length. Reply with the report only.`

// symptom is the model's user-style report of the failures of failToPass.
func (r *runner) symptom(ctx context.Context, failToPass []string, output map[string]string) (string, error) {
	var b strings.Builder
	for _, id := range failToPass {
		_, name := env.SplitID(id)
		fmt.Fprintf(&b, "Check %s failed:\n%s\n\n", name, strings.TrimRight(output[id], "\n"))
		if b.Len() > 4000 {
			break
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	stream := false
	var reply strings.Builder
	err := r.opts.IssueModel.Chat(ctx, &api.ChatRequest{Model: r.opts.IssueModelName, Stream: &stream,
		Think:    &api.ThinkValue{Value: false},
		Messages: []api.Message{{Role: "system", Content: symptomSystem}, {Role: "user", Content: b.String()}},
		Options:  map[string]any{"temperature": 0.7, "num_predict": 400}},
		func(resp api.ChatResponse) error { reply.WriteString(resp.Message.Content); return nil })
	if err != nil {
		return "", err
	}
	all := make([]string, 0, len(r.s.Env.Tests))
	for id := range r.s.Env.Tests {
		all = append(all, id)
	}
	return cleanSymptom(reply.String(), all)
}

var thinkBlock = lazyregexp.New(`(?s)<think>.*?</think>`)

// cleanSymptom drops reasoning the model left in its reply and the names of the tests
// (tests, the suite's ids), which the agent must never see: the failing ones are hidden.
func cleanSymptom(text string, tests []string) (string, error) {
	text = strings.TrimSpace(thinkBlock.ReplaceAllString(text, ""))
	ns := names(tests)
	sort.Slice(ns, func(i, j int) bool { return len(ns[i]) > len(ns[j]) })
	for _, n := range ns {
		text = strings.ReplaceAll(text, n, "a check")
	}
	if len(text) < 20 {
		return "", fmt.Errorf("the model wrote no report (%q)", text)
	}
	return text, nil
}
