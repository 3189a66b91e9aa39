package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"

	"github.com/frognano/frognano/finetune/loop"
	"github.com/frognano/frognano/finetune/report"
)

// runFinetuneReport is `frognano finetune report`: finetune/report's Collect, then Write (or
// the Summary as JSON).
func runFinetuneReport(_ context.Context, e Env, args []string) int {
	fs := newFlags(e, "finetune report", "", "Write an HTML page with plots of what fine-tuning did for the repository: the held-out\n"+
		"pass rate of each checkpoint with its confidence interval, reward and band occupancy per\n"+
		"iteration, the task mix, and the time spent. It reads the state `frognano finetune step`\n"+
		"keeps; a repository not fine-tuned yet gets a page that says how to start.")
	repo := fs.String("repo", ".", "the repository (the top of its work tree, as given to `frognano finetune step`)")
	out := fs.String("out", "", "the folder to write index.html and its PNG plots into (default: report/ in the loop's folder in frognano's cache)")
	open := fs.Bool("open", false, "open the page in the desktop's browser")
	asJSON := fs.Bool("json", false, "print the summary as JSON instead of writing the page")
	if code, done := parse(fs, args); done {
		return code
	}
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(e.Stderr, "frognano finetune report: "+format+"\n", a...)
		return code
	}
	abs, err := filepath.Abs(*repo)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return fail(exitUsage, "%v", err)
	}
	s, err := report.Collect(report.Options{Repo: abs})
	if err != nil {
		return fail(exitFailed, "%v", err)
	}
	if *asJSON {
		b, _ := json.MarshalIndent(s, "", "  ")
		fmt.Fprintf(e.Stdout, "%s\n", b)
		return exitOK
	}
	dir := *out
	if dir == "" {
		dir = filepath.Join(loop.DefaultDir(abs), "report")
	}
	path, err := report.Write(dir, s)
	if err != nil {
		return fail(exitFailed, "%v", err)
	}
	fmt.Fprintln(e.Stdout, path)
	if !s.Started {
		fmt.Fprintf(e.Stderr, "%s\n", report.HowToStart)
	}
	if *open {
		if err := openPage(path); err != nil {
			return fail(exitFailed, "the page is written, but opening it failed: %v (open %s yourself)", err, path)
		}
	}
	return exitOK
}

// openPage hands the page to the desktop's opener and does not wait for the browser.
func openPage(path string) error {
	name := "xdg-open"
	if runtime.GOOS == "darwin" {
		name = "open"
	}
	cmd := exec.Command(name, path)
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait() // reap it; the browser outlives us
	return nil
}
