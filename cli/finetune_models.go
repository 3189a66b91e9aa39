package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/frognano/frognano/finetune/gate"
	"github.com/frognano/frognano/finetune/registry"
	"github.com/frognano/frognano/ollama"
)

// findRegistry reads the registry of the repository holding dir, saying plainly when
// fine-tuning has made none.
func findRegistry(dir string) (*registry.State, error) {
	st, _, err := registry.Find("", dir)
	if errors.Is(err, registry.ErrNoState) {
		return nil, fmt.Errorf("fine-tuning has not made a model for %s yet (no model registry in %s)", dir, registry.DefaultDir())
	}
	return st, err
}

// modelRow is one model of `frognano finetune models --json`.
type modelRow struct {
	Name   string     `json:"name"`
	Base   bool       `json:"base,omitempty"`
	Step   int        `json:"step,omitempty"`
	Status string     `json:"status"`
	Digest string     `json:"digest,omitempty"`
	Made   *time.Time `json:"made,omitempty"`
	InUse  bool       `json:"inUse"`
	// InOllama says whether Ollama still has the model with the recorded digest (the base:
	// under any digest); absent when Ollama was not asked or did not answer.
	InOllama *bool `json:"inOllama,omitempty"`
	// Held are its held-out results, Gate the held-out gate's verdict on it.
	Held *heldOut      `json:"heldOut,omitempty"`
	Gate *gate.Verdict `json:"verdict,omitempty"`
}

// heldOut sums a model's held-out results: the mean pass rate over the tasks it ran.
type heldOut struct {
	Tasks    int     `json:"tasks"`
	PassRate float64 `json:"passRate"`
}

func summarize(results map[string]gate.Result) *heldOut {
	if len(results) == 0 {
		return nil
	}
	h := &heldOut{}
	for _, r := range results {
		if r.Attempts > 0 {
			h.Tasks++
			h.PassRate += r.Rate()
		}
	}
	if h.Tasks > 0 {
		h.PassRate /= float64(h.Tasks)
	}
	return h
}

// rows lists the registry's models; have, when Ollama answered, is its list (name → digest),
// and each row then says whether the model is still there.
func rows(st *registry.State, have map[string]string) []modelRow {
	there := func(name, digest string) *bool {
		if have == nil {
			return nil
		}
		got, ok := have[registry.NameKey(name)]
		ok = ok && (digest == "" || got == digest)
		return &ok
	}
	out := []modelRow{{Name: st.Base, Base: true, Status: "base", InUse: st.InUse == "", Held: summarize(st.BaseHeldOut), InOllama: there(st.Base, "")}}
	for _, m := range st.Models {
		out = append(out, modelRow{Name: m.Name, Step: m.Step, Status: string(m.Status), Digest: m.Digest, Made: &m.Made,
			InUse: m.Name == st.InUse, Held: summarize(m.HeldOut), Gate: m.Verdict, InOllama: there(m.Name, m.Digest)})
	}
	return out
}

// ollamaModels asks the Ollama at host for its models (name → digest), briefly: a listing
// must not hang on a server that is down. It only reads: the registry itself reconciles
// its records with Ollama on its next change (a rollback, the next fine-tuning step).
func ollamaModels(ctx context.Context, host string) (map[string]string, error) {
	client, err := ollama.Config{Host: host}.Client()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	list, err := client.List(ctx)
	if err != nil {
		return nil, err
	}
	have := map[string]string{}
	for _, m := range list.Models {
		have[registry.NameKey(m.Name)] = m.Digest
	}
	return have, nil
}

func runFinetuneModels(ctx context.Context, env Env, args []string) int {
	fs := newFlags(env, "finetune models", "", "List the models fine-tuning made for a repository: the base it started from, then each\n"+
		"model by training step, with its status (candidate, accepted, rejected by the held-out\n"+
		"gate, rolled back), Ollama digest, when it was made and its held-out pass rate. The\n"+
		"model marked * is the one the language server uses.")
	repo := fs.String("repo", ".", "the repository (or a folder inside it)")
	asJSON := fs.Bool("json", false, "print JSON")
	if code, done := parse(fs, args); done {
		return code
	}
	st, err := findRegistry(*repo)
	if err != nil {
		fmt.Fprintf(env.Stderr, "frognano finetune models: %v\n", err)
		return exitFailed
	}
	have, listErr := ollamaModels(ctx, st.Host)
	if *asJSON {
		var unchecked string
		if listErr != nil {
			unchecked = listErr.Error()
		}
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(struct {
			Repo   string     `json:"repo"`
			Host   string     `json:"host"`
			InUse  string     `json:"inUse"`
			Models []modelRow `json:"models"`
			// OllamaError says why the models' presence was not checked.
			OllamaError string `json:"ollamaError,omitempty"`
		}{st.Repo, st.Host, st.Serving(), rows(st, have), unchecked})
		return exitOK
	}
	printModels(env.Stdout, st, have)
	if listErr != nil {
		fmt.Fprintf(env.Stdout, "\nOllama at %s did not answer (%v): whether these models are still there was not checked.\n", st.Host, listErr)
	}
	return exitOK
}

func printModels(w io.Writer, st *registry.State, have map[string]string) {
	fmt.Fprintf(w, "Fine-tuned models of %s (Ollama at %s):\n\n", st.Repo, st.Host)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\tNAME\tSTEP\tSTATUS\tDIGEST\tMADE\tHELD-OUT")
	missing := false
	for _, r := range rows(st, have) {
		if r.InOllama != nil && !*r.InOllama {
			r.Status += " (not in Ollama)"
			missing = true
		}
		mark, step, made, held := " ", "-", "-", "-"
		if r.InUse {
			mark = "*"
		}
		if !r.Base {
			step = fmt.Sprint(r.Step)
			made = r.Made.Local().Format("2006-01-02 15:04")
		}
		if r.Held != nil {
			held = fmt.Sprintf("%.2f on %d tasks", r.Held.PassRate, r.Held.Tasks)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.12s\t%s\t%s\n", mark, r.Name, step, r.Status, r.Digest, made, held)
	}
	tw.Flush()
	if len(st.Models) == 0 {
		fmt.Fprintf(w, "\nFine-tuning has made no model yet; the base model serves.\n")
	}
	if missing {
		fmt.Fprintf(w, "\nA model marked \"not in Ollama\" was removed or replaced outside frognano; the registry forgets it at its next change (`frognano finetune rollback`, the next fine-tuning step).\n")
	}
}

func runFinetuneRollback(ctx context.Context, env Env, args []string) int {
	fs := newFlags(env, "finetune rollback", "", "Switch the language server back from the fine-tuned model in use: to the accepted model\n"+
		"before it, or the base model when there is none, or to --to NAME (a model that served\n"+
		"before, or the base). The model left is kept, marked rolled back; the held-out gate\n"+
		"never puts it back. Editors pick the change up on their next run.")
	repo := fs.String("repo", ".", "the repository (or a folder inside it)")
	to := fs.String("to", "", "the model to go back to (see `frognano finetune models`); default: the one before")
	host := fs.String("host", env.Getenv("OLLAMA_HOST"), "Ollama address, where the fine-tuned models live (env OLLAMA_HOST; default "+ollama.DefaultHost+")")
	if code, done := parse(fs, args); done {
		return code
	}
	fail := func(err error) int {
		fmt.Fprintf(env.Stderr, "frognano finetune rollback: %v\n", err)
		return exitFailed
	}
	st, err := findRegistry(*repo)
	if err != nil {
		return fail(fmt.Errorf("%w: nothing to roll back", err))
	}
	cfg := ollama.Config{Host: *host}
	u, err := cfg.BaseURL()
	if err != nil {
		fmt.Fprintf(env.Stderr, "frognano finetune rollback: %v\n", err)
		return exitUsage
	}
	client, err := cfg.Client()
	if err != nil {
		return fail(err)
	}
	// The registry reconciles with Ollama before every change, so a rollback never lands on
	// a model that has left it.
	reg, err := registry.Open(ctx, registry.Options{Repo: st.Repo, Client: client, Host: u.String()})
	if err != nil {
		return fail(err)
	}
	var from, dest string
	if *to == "" {
		from, dest, err = reg.Rollback(ctx)
	} else {
		from, err = reg.RollbackTo(ctx, *to)
		dest = *to
	}
	if err != nil {
		return fail(err)
	}
	if after, err := reg.State(); err == nil {
		dest = after.Serving()
		if after.InUse == "" {
			dest += " (the base model)"
		}
	}
	fmt.Fprintf(env.Stdout, "rolled back from %s to %s; the language server uses it from its next run\n", from, dest)
	return exitOK
}
