package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/frognano/frognano/agent/sandbox"
)

func bashTitle(a args) string {
	if d := strings.TrimSpace(a.str("description")); d != "" {
		return d
	}
	cmd := strings.TrimSpace(a.str("command"))
	if i := strings.IndexByte(cmd, '\n'); i >= 0 {
		cmd = cmd[:i] + " …"
	}
	if len(cmd) > 60 {
		cmd = cmd[:57] + "…"
	}
	return "Running " + cmd
}

// bashTimeout reads the timeout argument: seconds, except that values above 1000 were
// milliseconds in the harness the model learned.
func (e *episode) bashTimeout(a args) time.Duration {
	if !a.has("timeout") || a.number("timeout") <= 0 {
		return e.opts.BashTimeout
	}
	t := a.number("timeout")
	if t > 1000 {
		return time.Duration(t * float64(time.Millisecond))
	}
	return time.Duration(t * float64(time.Second))
}

func runBash(ctx context.Context, e *episode, a args) (string, error) {
	cmd := a.str("command")
	if strings.TrimSpace(cmd) == "" {
		return "", callErr("command is empty")
	}
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := e.disk.watch(cancel)
	out, err := e.runner.Run(cctx, sandbox.Cmd{Dir: e.ws.Root, Command: cmd, Timeout: e.bashTimeout(a), Started: e.disk.setProcs})
	over := stop()
	// Killed by the guard, or judged over the budget after it ended: the model is told.
	if ctx.Err() == nil && errors.Is(context.Cause(cctx), errDiskBudget) {
		return formatBash(out) + e.disk.diskNote(), nil
	}
	if err != nil {
		return "", err // the sandbox failed, or the run was cancelled: not the model's mistake
	}
	return formatBash(out) + over, nil
}

// formatBash lays out a command's result as the harness did, capped at 30,000 characters
// with the cut shared between the two streams.
func formatBash(o sandbox.Output) string {
	stdout, stderr := o.Stdout, o.Stderr
	note := func(s string, dropped int64) string {
		if dropped > 0 {
			s += fmt.Sprintf("\n[%d more bytes not shown]", dropped)
		}
		return s
	}
	stdout, stderr = note(stdout, o.StdoutDropped), note(stderr, o.StderrDropped)
	budget := bashCap - 64
	if len(stdout)+len(stderr) > budget {
		half := budget / 2
		switch {
		case len(stdout) <= half:
			stderr = truncateMiddle(stderr, budget-len(stdout))
		case len(stderr) <= half:
			stdout = truncateMiddle(stdout, budget-len(stderr))
		default:
			stdout, stderr = truncateMiddle(stdout, half), truncateMiddle(stderr, half)
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "Exit code: %d\n", o.ExitCode)
	if o.TimedOut {
		fmt.Fprintf(&sb, "(timed out after %s and was killed)\n", o.Duration.Round(time.Second))
	}
	if o.ProcessCap {
		sb.WriteString("(it reached the cap on processes and threads: some could not start)\n")
	}
	if o.Flooded {
		sb.WriteString("(killed: it printed more than 64 MiB; send large output to a file and read parts of it with head, tail or grep)\n")
	}
	sb.WriteString("STDOUT:\n")
	sb.WriteString(stdout)
	if !strings.HasSuffix(stdout, "\n") {
		sb.WriteByte('\n')
	}
	sb.WriteString("STDERR:\n")
	sb.WriteString(stderr)
	return sb.String()
}

// truncateMiddle keeps the head and the tail of s (where errors and summaries are).
func truncateMiddle(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "\n[… output cut …]\n"
	if n <= len(mark) {
		return s[:max(n, 0)]
	}
	head := (n - len(mark)) / 2
	tail := n - len(mark) - head
	return s[:head] + mark + s[len(s)-tail:]
}
