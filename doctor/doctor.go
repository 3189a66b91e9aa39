// Package doctor checks that this machine can run frognano, each check with a one-line
// verdict and, on failure, the exact fix. Entry point: [Run]; [Print] formats the report.
package doctor

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/frognano/frognano/agent/sandbox"
	"github.com/frognano/frognano/ollama"
)

// Status of one check. Only Fail makes the report fail: Warn and Info describe a degraded
// or not-yet-used part.
type Status string

const (
	OK   Status = "ok"
	Warn Status = "warn"
	Fail Status = "FAIL"
	Info Status = "info"
	Skip Status = "skip"
)

// Result is one check's verdict.
type Result struct {
	Name    string `json:"name"`
	Status  Status `json:"status"`
	Verdict string `json:"verdict"`
	Fix     string `json:"fix,omitempty"`
}

// Report is every check, in order.
type Report []Result

// Failed reports whether the main path (editor → agent → Ollama) cannot work.
func (r Report) Failed() bool {
	for _, c := range r {
		if c.Status == Fail {
			return true
		}
	}
	return false
}

// state carries what one check learns for the next.
type state struct {
	cfg      ollama.Config
	client   *api.Client
	reached  bool
	modelCtx int // the model's trained context, 0 when unknown
}

// check is one row of the table; the order is the order of the report.
type check struct {
	name string
	run  func(context.Context, *state) Result
}

var checks = []check{
	{"ollama", checkOllama},
	{"ollama-build", checkOllamaBuild},
	{"model", checkModel},
	{"num_ctx", checkNumCtx},
	{"git", checkGit},
	{"sandbox", checkSandbox},
	{"watch", checkWatch},
	{"python", checkPython},
	{"torch", checkTorch},
	{"gpu", checkGPU},
	{"trainer", checkTrainer},
}

// Run runs every check against cfg.
func Run(ctx context.Context, cfg ollama.Config) Report {
	st := &state{cfg: cfg.WithDefaults()}
	var r Report
	for _, c := range checks {
		res := c.run(ctx, st)
		res.Name = c.name
		r = append(r, res)
	}
	return r
}

func checkOllama(ctx context.Context, st *state) Result {
	client, err := st.cfg.Client()
	if err != nil {
		return Result{Status: Fail, Verdict: err.Error(), Fix: "set OLLAMA_HOST to host:port, e.g. 127.0.0.1:11434"}
	}
	st.client = client
	u, _ := st.cfg.BaseURL()
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	v, err := client.Version(cctx)
	if err != nil {
		p := ollama.Explain(err, st.cfg)
		return Result{Status: Fail, Verdict: p.What, Fix: p.Fix}
	}
	st.reached = true
	res := Result{Status: OK, Verdict: fmt.Sprintf("reachable at %s (version %s)", u, v)}
	if v != ollama.Version {
		res.Verdict += fmt.Sprintf("; frognano is tested with %s", ollama.Version)
	}
	return res
}

func checkModel(ctx context.Context, st *state) Result {
	if !st.reached {
		return Result{Status: Skip, Verdict: "skipped: Ollama is not reachable"}
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	show, err := st.client.Show(cctx, &api.ShowRequest{Model: st.cfg.Model})
	if err != nil {
		p := ollama.Explain(err, st.cfg)
		return Result{Status: Fail, Verdict: p.What, Fix: p.Fix}
	}
	caps := map[string]bool{}
	for _, c := range show.Capabilities {
		caps[string(c)] = true
	}
	arch, _ := show.ModelInfo["general.architecture"].(string)
	if n, ok := show.ModelInfo[arch+".context_length"].(float64); ok {
		st.modelCtx = int(n)
	}
	yes := map[bool]string{true: "yes", false: "no"}
	verdict := fmt.Sprintf("%s present (%s, context %d tokens, tools: %s, thinking: %s)",
		st.cfg.Model, orUnknown(arch), st.modelCtx, yes[caps["tools"]], yes[caps["thinking"]])
	if !caps["tools"] {
		return Result{Status: Fail, Verdict: verdict,
			Fix: "the agent needs tool calling: import FrogNano with `frognano model import FILE.gguf`, or set FROGNANO_MODEL to a model with tool support"}
	}
	return Result{Status: OK, Verdict: verdict}
}

func checkNumCtx(_ context.Context, st *state) Result {
	n := st.cfg.NumCtx
	switch {
	case st.modelCtx == 0:
		return Result{Status: Skip, Verdict: fmt.Sprintf("num_ctx %d; the model's context length is unknown", n)}
	case n > st.modelCtx:
		return Result{Status: Fail,
			Verdict: fmt.Sprintf("num_ctx %d exceeds the model's context of %d tokens (Ollama would cap it silently)", n, st.modelCtx),
			Fix:     fmt.Sprintf("set FROGNANO_NUM_CTX to %d or less", st.modelCtx)}
	case n < 16384:
		return Result{Status: Warn, Verdict: fmt.Sprintf("num_ctx %d fits, but agent episodes usually need 32768 or more", n),
			Fix: "raise FROGNANO_NUM_CTX if your machine has the memory"}
	}
	return Result{Status: OK, Verdict: fmt.Sprintf("num_ctx %d fits the model's %d tokens", n, st.modelCtx)}
}

func checkGit(ctx context.Context, _ *state) Result {
	out, err := run(ctx, "git", "--version")
	if err != nil {
		return Result{Status: Fail, Verdict: "git not found", Fix: "install git (e.g. `apt-get install git`)"}
	}
	return Result{Status: OK, Verdict: out}
}

func checkSandbox(ctx context.Context, _ *state) Result {
	iso := sandbox.Detect(ctx)
	res := Result{Status: OK, Verdict: "sandbox mode " + iso.Summary()}
	if iso.DenyByDefault {
		hidden, allowed := sandbox.Bound(ctx)
		res.Verdict += "; " + boundSummary(hidden, allowed)
	}
	var fixes []string
	if iso.Mode != sandbox.ModeBwrap {
		if _, err := exec.LookPath("bwrap"); err != nil {
			fixes = append(fixes, "install bubblewrap (apt-get install bubblewrap) to confine writes to the workspace copy")
		} else {
			fixes = append(fixes, "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, or on Ubuntu kernel.apparmor_restrict_unprivileged_userns=0) so that bubblewrap works")
		}
	}
	if iso.ProcessLimit == "" {
		fixes = append(fixes, "run frognano as a non-root user, or where it may create a pids cgroup, so that fork bombs are contained")
	}
	if len(fixes) > 0 {
		res.Status = Warn
		res.Fix = strings.Join(fixes, "; ")
	}
	return res
}

// boundSummary says what deny by default hides and binds back: how many entries of the
// allowlist were found, and the first few (the table and its reasons are in
// agent/sandbox/allow.go).
func boundSummary(hidden []string, allowed []sandbox.Allowed) string {
	const shown = 4
	var names []string
	for i, a := range allowed {
		if i == shown {
			names = append(names, "…")
			break
		}
		names = append(names, a.Path)
	}
	s := fmt.Sprintf("hidden: %s; bound back read-only: %d", strings.Join(hidden, ", "), len(allowed))
	if len(names) > 0 {
		s += " (" + strings.Join(names, ", ") + ")"
	}
	return s
}

// maxUserWatches is where Linux says how many folders one user may watch (inotify).
var maxUserWatches = "/proc/sys/fs/inotify/max_user_watches"

// minWatches: below this (old kernels default to 8,192) a large repository cannot be
// watched; the language server then compares the whole folder before each run.
const minWatches = 65536

func checkWatch(_ context.Context, _ *state) Result {
	b, err := os.ReadFile(maxUserWatches)
	if err != nil {
		return Result{Status: Info, Verdict: "inotify not found: the language server compares the workspace before each run instead of watching it"}
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return Result{Status: Info, Verdict: "inotify watch limit unreadable: " + strings.TrimSpace(string(b))}
	}
	verdict := fmt.Sprintf("inotify watch limit %d folders (the language server watches one per workspace folder)", n)
	if n < minWatches {
		return Result{Status: Warn, Verdict: verdict, Fix: "raise it for large repositories: sudo sysctl fs.inotify.max_user_watches=524288 (and the same line in /etc/sysctl.d/90-inotify.conf to keep it)"}
	}
	return Result{Status: OK, Verdict: verdict}
}

const notYet = "fine-tuning is not available yet; this is informational"

func checkPython(ctx context.Context, _ *state) Result {
	out, err := run(ctx, "python3", "--version")
	if err != nil {
		return Result{Status: Info, Verdict: "python3 not found (" + notYet + ")"}
	}
	return Result{Status: Info, Verdict: out + " (" + notYet + ")"}
}

func checkTorch(ctx context.Context, _ *state) Result {
	out, err := run(ctx, "python3", "-c", "import torch; print('torch', torch.__version__, 'cuda' if torch.cuda.is_available() else 'cpu only')")
	if err != nil {
		return Result{Status: Info, Verdict: "torch not importable (" + notYet + ")"}
	}
	return Result{Status: Info, Verdict: out}
}

func checkGPU(ctx context.Context, _ *state) Result {
	out, err := run(ctx, "nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader")
	if err != nil {
		return Result{Status: Info, Verdict: "no NVIDIA GPU found (nvidia-smi); fine-tuning will need one"}
	}
	return Result{Status: Info, Verdict: strings.ReplaceAll(out, "\n", "; ")}
}

func run(ctx context.Context, name string, args ...string) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(cctx, name, args...).Output()
	return strings.TrimSpace(string(out)), err
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown architecture"
	}
	return s
}

// Print writes the report, one line a check, with the fix indented below a failure.
func Print(w io.Writer, r Report) {
	for _, c := range r {
		fmt.Fprintf(w, "%-4s  %-8s %s\n", c.Status, c.Name, c.Verdict)
		if c.Fix != "" && (c.Status == Fail || c.Status == Warn) {
			fmt.Fprintf(w, "      %-8s fix: %s\n", "", c.Fix)
		}
	}
	if r.Failed() {
		fmt.Fprintln(w, "\nfrognano cannot run its agent until the FAIL lines are fixed.")
	} else {
		fmt.Fprintln(w, "\nfrognano is ready.")
	}
}
