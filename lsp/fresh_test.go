package lsp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/frognano/frognano/ollama/modelgen"
	"github.com/frognano/frognano/ollama/ollamatest"
	"github.com/frognano/frognano/watch"
)

// git runs real git in dir with the user's and the system's configuration kept out.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// ask runs "Ask FrogNano…" on calc.go and returns seen.txt as the editor has it after the
// run's edit.
func (e *editor) ask(instruction string) string {
	e.t.Helper()
	a := find(e.t.(*testing.T), e.actions("calc.go", "return a - b", true), "Ask FrogNano…")
	var d actionData
	json.Unmarshal(a.Command.Arguments[0], &d)
	d.Instruction = instruction
	raw, _ := json.Marshal(d)
	if _, err := e.server.ExecuteCommand(context.Background(), &protocol.ExecuteCommandParams{Command: CommandAsk, Arguments: []protocol.LSPAny{raw}}); err != nil {
		e.t.Fatal(err)
	}
	return e.text("seen.txt")
}

func (e *editor) status() Status {
	e.t.Helper()
	var st Status
	if _, err := e.conn.Call(context.Background(), MethodStatus, map[string]any{}, &st); err != nil {
		e.t.Fatal(err)
	}
	return st
}

// lastTrajectory is the newest trajectory the server wrote.
func (e *editor) lastTrajectory() string {
	e.t.Helper()
	files, _ := filepath.Glob(filepath.Join(e.cacheDir, "trajectories", "*.jsonl"))
	if len(files) == 0 {
		e.t.Fatal("no trajectory written")
	}
	// Names start with the second a run began, then a random part: the newest is the one
	// written last.
	newest := slices.MaxFunc(files, func(a, b string) int { return mtime(a).Compare(mtime(b)) })
	b, err := os.ReadFile(newest)
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

func mtime(path string) time.Time {
	st, err := os.Stat(path)
	if err != nil {
		return time.Time{}
	}
	return st.ModTime()
}

func readyCopies(t *testing.T, dir string) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, "frognano-ready-*"))
	return m
}

func writeFile(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, rel)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// seeNotes is the one command of the scripted "copier" models: the edit its run sends
// (creating or changing seen.txt) shows what the agent's copy of the folder held.
const seeNotes = "cat notes.txt $(find extra -type f 2>/dev/null) > seen.txt"

// TestRunsSeeChangesMadeOutsideTheEditor: files changed on disk by other programs between
// runs (a new folder, an edit of the same size, a removal) are in the next run's copy,
// which is the one kept ready (watched, refreshed) rather than a new copy; a commit and a
// branch switch are seen as HEAD changes; closing the server removes the ready copy.
func TestRunsSeeChangesMadeOutsideTheEditor(t *testing.T) {
	t.Parallel()
	srv := ollamatest.Shared(t)
	cfg := scripted(t, srv, "copier", calls(tc("Bash", map[string]any{"command": seeNotes})), modelgen.Turn{Content: "Copied."})
	e := newEditor(t, sampleWorkspace+"-- notes.txt --\none\n", cfg, capsFull(), nil)
	git(t, e.root, "init", "-q", "-b", "main")
	git(t, e.root, "add", "-A")
	git(t, e.root, "commit", "-qm", "first")
	e.open("calc.go")

	if st := e.status(); st.Workspace != nil {
		t.Errorf("watching before any run: %+v", st.Workspace)
	}
	// Ready copies left by a killed server are removed; a live server's are not.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(e.workDir, fmt.Sprintf("frognano-ready-%d-1", dead.Process.Pid))
	live := filepath.Join(e.workDir, fmt.Sprintf("frognano-ready-%d-1", os.Getppid()))
	writeFile(t, stale, "copy-1/a.go", "package a\n")
	writeFile(t, live, "copy-1/a.go", "package a\n")
	// With a lock file, the lock decides, not the process id (PID namespaces): a free lock
	// is stale, a held one is not.
	freeLock := filepath.Join(e.workDir, fmt.Sprintf("frognano-ready-%d-2", os.Getppid()))
	heldLock := filepath.Join(e.workDir, fmt.Sprintf("frognano-ready-%d-3", dead.Process.Pid))
	writeFile(t, freeLock, ".lock", "")
	writeFile(t, heldLock, ".lock", "")
	long := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(freeLock, ".lock"), long, long)
	os.Chtimes(filepath.Join(heldLock, ".lock"), long, long)
	held, err := os.Open(filepath.Join(heldLock, ".lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := syscall.Flock(int(held.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	if got := e.ask("copy the notes"); got != "one\n" {
		t.Fatalf("run 1 saw %q", got)
	}
	if _, err := os.Stat(stale); err == nil {
		t.Error("the ready copy of a dead server was not removed")
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the ready copy of a live server was removed: %v", err)
	}
	if _, err := os.Stat(freeLock); err == nil {
		t.Error("a ready copy with a free lock was not removed")
	}
	if _, err := os.Stat(heldLock); err != nil {
		t.Errorf("a ready copy whose lock is held was removed: %v", err)
	}
	os.RemoveAll(live)
	os.RemoveAll(heldLock)
	st := e.status()
	if st.Workspace == nil || !st.Workspace.Watching || st.Workspace.Folders == 0 || st.Workspace.Branch != "main" {
		t.Fatalf("after the first run the folder is watched: %+v", st.Workspace)
	}

	e.waitFor(60*time.Second, "the next copy to be ready", func() bool { return e.status().Workspace.Ready })
	writeFile(t, e.root, "notes.txt", "two\n")
	writeFile(t, e.root, "extra/deep/a.txt", "A\n")
	if got := e.ask("copy the notes"); got != "two\nA\n" {
		t.Errorf("run 2 saw %q, want the edit and the new folder", got)
	}
	if tr := e.lastTrajectory(); !strings.Contains(tr, "frognano-ready-") {
		t.Error("run 2 did not start from the copy kept ready")
	}
	copying := 0
	for _, m := range e.progressMessages() {
		if strings.HasSuffix(m, "copying the workspace") {
			copying++
		}
	}
	if copying != 1 {
		t.Errorf("\"copying the workspace\" shown %d times in two runs; want once, for the first (the second's copy was ready): %q", copying, e.progressMessages())
	}

	os.RemoveAll(filepath.Join(e.root, "extra"))
	writeFile(t, e.root, "notes.txt", "six\n") // the same size as before
	if got := e.ask("copy the notes"); got != "six\n" {
		t.Errorf("run 3 saw %q, want the same-size edit and extra/ gone", got)
	}

	git(t, e.root, "add", "-A")
	git(t, e.root, "commit", "-qm", "second")
	head := git(t, e.root, "rev-parse", "HEAD")
	e.waitFor(10*time.Second, "the commit in frognano/status", func() bool {
		w := e.status().Workspace
		return w != nil && w.Commit == head && w.Branch == "main"
	})
	git(t, e.root, "checkout", "-q", "-b", "topic")
	e.waitFor(10*time.Second, "the branch switch in frognano/status", func() bool {
		w := e.status().Workspace
		return w != nil && w.Branch == "topic"
	})

	if len(readyCopies(t, e.workDir)) != 1 {
		t.Errorf("ready copies: %v", readyCopies(t, e.workDir))
	}
	e.stop()
	if left := readyCopies(t, e.workDir); len(left) != 0 {
		t.Errorf("the ready copy outlived the server: %v", left)
	}
}

// TestWatchOff: with the setting off nothing is watched or kept ready, and runs still see
// the folder as it is.
func TestWatchOff(t *testing.T) {
	t.Parallel()
	srv := ollamatest.Shared(t)
	cfg := scripted(t, srv, "copier-watch-off", calls(tc("Bash", map[string]any{"command": seeNotes})), modelgen.Turn{Content: "Copied."})
	e := newEditor(t, sampleWorkspace+"-- notes.txt --\none\n", cfg, capsFull(), map[string]any{"watch": false})
	e.open("calc.go")
	if got := e.ask("copy the notes"); got != "one\n" {
		t.Fatalf("run 1 saw %q", got)
	}
	writeFile(t, e.root, "notes.txt", "two\n")
	if got := e.ask("copy the notes"); got != "two\n" {
		t.Errorf("run 2 saw %q", got)
	}
	if st := e.status(); st.Workspace != nil {
		t.Errorf("watching although the setting is off: %+v", st.Workspace)
	}
	if m := readyCopies(t, e.workDir); len(m) != 0 {
		t.Errorf("a copy is kept ready although the setting is off: %v", m)
	}
}

// TestEditorReportsChangesWhenWatchingFails: when the folder cannot be watched (here the
// inotify limit), the server asks the editor for workspace/didChangeWatchedFiles, learns
// of commits from them, and compares the folder before each run.
func TestEditorReportsChangesWhenWatchingFails(t *testing.T) {
	startWatcher = func(ctx context.Context, root string, opts watch.Options, onBatch func(watch.Batch)) (*watch.Watcher, error) {
		return nil, fmt.Errorf("watching %s: %w", root, watch.ErrLimit)
	}
	t.Cleanup(func() { startWatcher = watch.Start })
	srv := ollamatest.Shared(t)
	cfg := scripted(t, srv, "copier-editor-reports", calls(tc("Bash", map[string]any{"command": seeNotes})), modelgen.Turn{Content: "Copied."})
	caps := capsFull()
	caps.Workspace.DidChangeWatchedFiles = &protocol.DidChangeWatchedFilesClientCapabilities{DynamicRegistration: ptr(true)}
	e := newEditor(t, sampleWorkspace+"-- notes.txt --\none\n", cfg, caps, nil)
	git(t, e.root, "init", "-q", "-b", "main")
	git(t, e.root, "add", "-A")
	git(t, e.root, "commit", "-qm", "first")
	e.open("calc.go")
	if got := e.ask("copy the notes"); got != "one\n" {
		t.Fatalf("run 1 saw %q", got)
	}
	e.waitFor(10*time.Second, "a registration for workspace/didChangeWatchedFiles", func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		return strings.Contains(strings.Join(e.registered, "\n"), `workspace/didChangeWatchedFiles {"watchers":[{"globPattern":"**/*"}]}`)
	})
	st := e.status()
	if st.Workspace == nil || st.Workspace.Watching || !strings.Contains(st.Workspace.Why, "max_user_watches") {
		t.Errorf("status must say why the folder is not watched: %+v", st.Workspace)
	}

	writeFile(t, e.root, "notes.txt", "two\n") // no event: the compare must find it
	if got := e.ask("copy the notes"); got != "two\n" {
		t.Errorf("run 2 saw %q", got)
	}

	git(t, e.root, "commit", "-qam", "second")
	head := git(t, e.root, "rev-parse", "HEAD")
	err := e.server.DidChangeWatchedFiles(context.Background(), &protocol.DidChangeWatchedFilesParams{Changes: []protocol.FileEvent{
		{URI: uri.File(filepath.Join(e.root, ".git", "refs", "heads", "main")), Type: protocol.FileChangeTypeChanged},
		{URI: uri.File(filepath.Join(e.root, "notes.txt")), Type: protocol.FileChangeTypeChanged},
	}})
	if err != nil {
		t.Fatal(err)
	}
	e.waitFor(10*time.Second, "the commit in frognano/status", func() bool {
		w := e.status().Workspace
		return w != nil && w.Commit == head
	})
}
