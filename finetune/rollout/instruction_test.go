package rollout

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frognano/frognano/finetune/task"
	"github.com/frognano/frognano/finetune/withhold"
)

// TestInstructionRedacted: at hint level 1 the issue is the failing test's output, which
// says what it expects ("want 4242"); the agent, whose copy lacks the test, must not be
// told it (found by the second adversarial review: the instruction was the issue as
// written, so the answer key withhold took out of the copy came back with the question).
func TestInstructionRedacted(t *testing.T) {
	root := t.TempDir()
	for name, body := range map[string]string{
		"go.mod": "module example.com/m\n\ngo 1.22\n",
		"m.go":   "package m\n\nfunc Add(a, b int) int { return a - b }\n",
		"m_test.go": "package m\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif got := Add(20, 22); got != 4242 {\n" +
			"\t\tt.Errorf(\"Add(20, 22) = %d, want %d\", got, 4242)\n\t}\n}\n\nfunc TestOther(t *testing.T) {}\n",
	} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tk := &task.Task{ID: "t", FailToPass: []string{"example.com/m TestAdd"}, Test: task.TestSpec{Kind: "go"},
		Issue: task.Issue{Level: 1, Text: "Some tests fail. Make them pass without changing the tests.\n\n" +
			"$ go test -run '^TestAdd$' example.com/m\n=== RUN   TestAdd\n    m_test.go:7: Add(20, 22) = -2, want 4242\n--- FAIL: TestAdd (0.00s)"}}
	w, err := withhold.Tests(root, tk)
	if err != nil || len(w.Withheld) != 1 {
		t.Fatalf("withheld %v, %v", w, err)
	}
	got := instruction(tk, w)
	if strings.Contains(got, "4242") || strings.Contains(got, "20, 22") {
		t.Errorf("the instruction shows what the withheld test expects:\n%s", got)
	}
	for _, want := range []string{"= -2, want …", "TestAdd", withheldNote} {
		if !strings.Contains(got, want) {
			t.Errorf("the instruction lacks %q:\n%s", want, got)
		}
	}
}
