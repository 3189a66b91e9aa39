package registry

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/frognano/frognano/finetune/gate"
	"github.com/frognano/frognano/ollama"
)

// Options open a Registry.
type Options struct {
	// Repo is the repository: absolute, links resolved, the top of its work tree (what
	// finetune/env's Checkout.Repo holds).
	Repo string
	// Client talks to the Ollama server the models are made in; Host is its base URL, as
	// ollama.Config.BaseURL gives it. A registry made with one host refuses another.
	Client *api.Client
	Host   string
	// Base is the model fine-tuning starts from, recorded when the registry is made; later
	// opens may leave it empty. Without it, opening a repository with no registry fails
	// with ErrNoState.
	Base string
	// Keep, when set, replaces the number of other models kept (DefaultKeep for a new
	// registry).
	Keep *int
	// StateDir holds the state files; "" is DefaultDir.
	StateDir string
	// Now is the clock (tests); nil is time.Now.
	Now func() time.Time
}

// Registry changes the books of one repository's models, with Ollama at hand. Every method
// locks the state file, reads it, reconciles it with Ollama's list of models, changes it and
// writes it back atomically; so several processes may hold a Registry for one repository.
type Registry struct {
	path string
	opts Options
}

// Open opens the registry of o.Repo, making it when o.Base is given and none exists.
func Open(ctx context.Context, o Options) (*Registry, error) {
	if !filepath.IsAbs(o.Repo) {
		return nil, fmt.Errorf("model registry: repository %q is not an absolute path", o.Repo)
	}
	if o.Client == nil || o.Host == "" {
		return nil, errors.New("model registry: an Ollama client and its host are required")
	}
	if o.Keep != nil && *o.Keep < 0 {
		return nil, fmt.Errorf("model registry: keep %d: it cannot keep fewer than no models", *o.Keep)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	r := &Registry{path: Path(o.StateDir, o.Repo), opts: o}
	return r, r.update(ctx, func(st *State, _ map[string]api.ListModelResponse) error {
		if o.Keep != nil {
			st.Keep = *o.Keep
		}
		return nil
	})
}

// Path is the registry's state file.
func (r *Registry) Path() string { return r.path }

// State reads the state as it is on disk (no reconciling, no lock: a reader sees a whole
// file).
func (r *Registry) State() (*State, error) { return Load(r.path) }

// update runs change on the state under the lock, after reconciling it with Ollama, and
// writes the result. change returns an error only before changing anything; what
// reconciling found is written either way.
func (r *Registry) update(ctx context.Context, change func(*State, map[string]api.ListModelResponse) error) error {
	if err := os.MkdirAll(filepath.Dir(r.path), 0o755); err != nil {
		return err
	}
	lock, err := os.OpenFile(r.path+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close() // releases the lock
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("locking %s: %w", lock.Name(), err)
	}
	st, err := Load(r.path)
	switch {
	case errors.Is(err, os.ErrNotExist) && r.opts.Base != "":
		st = &State{Version: Version, Repo: r.opts.Repo, Host: r.opts.Host, Base: r.opts.Base, Keep: DefaultKeep, Models: []*Model{}}
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%s: %w (start fine-tuning with `frognano finetune start --repo %s`)", r.opts.Repo, ErrNoState, r.opts.Repo)
	case err != nil:
		return err
	}
	if st.Repo != r.opts.Repo {
		return fmt.Errorf("model registry %s is for %s, not %s (two paths with one hash: remove the file)", r.path, st.Repo, r.opts.Repo)
	}
	if !ollama.SameServer(st.Host, r.opts.Host) {
		return fmt.Errorf("the fine-tuned models of %s live in Ollama at %s, not %s: point OLLAMA_HOST (or --host) there", st.Repo, st.Host, r.opts.Host)
	}
	list, err := r.opts.Client.List(ctx)
	if err != nil {
		return fmt.Errorf("asking Ollama at %s for its models: %w (is `ollama serve` running?)", st.Host, err)
	}
	have := map[string]api.ListModelResponse{}
	for _, m := range list.Models {
		have[NameKey(m.Name)] = m
	}
	r.reconcile(st, have)
	changeErr := change(st, have)
	if err := st.save(r.path); err != nil {
		return fmt.Errorf("writing the model registry: %w", err)
	}
	return changeErr
}

// reconcile brings the records in line with Ollama: a pending model whose maker is gone is
// adopted (Ollama has it: the maker crashed after making it) or dropped (the import never
// finished); a recorded model that is gone, or whose digest changed, is no longer frognano's
// and its record is dropped (never the model). If that was the model in use, the previous
// accepted one (or the base) takes over.
func (r *Registry) reconcile(st *State, have map[string]api.ListModelResponse) {
	kept := st.Models[:0]
	for _, m := range st.Models {
		got, ok := have[NameKey(m.Name)]
		switch {
		case m.Status == Pending && m.Owner.alive():
			kept = append(kept, m)
		case m.Status == Pending && ok:
			m.Status, m.Digest, m.Owner = Candidate, got.Digest, nil
			st.note(r.now(), "adopted %s: made before its maker stopped, recorded now (not yet judged)", m.Name)
			kept = append(kept, m)
		case m.Status == Pending:
			st.note(r.now(), "forgot %s: its import did not finish", m.Name)
		case !ok:
			st.note(r.now(), "forgot %s: it is no longer in Ollama (removed outside frognano)", m.Name)
		case got.Digest != m.Digest:
			st.note(r.now(), "forgot %s: it was replaced outside frognano (digest %.12s, recorded %.12s); the model is left alone", m.Name, got.Digest, m.Digest)
		default:
			kept = append(kept, m)
		}
	}
	clear(st.Models[len(kept):])
	st.Models = kept
	if st.InUse != "" && st.Model(st.InUse) == nil {
		r.switchTo(st, st.previous(-1), st.InUse+" is no longer frognano's model in Ollama")
	}
}

func (r *Registry) now() time.Time { return r.opts.Now().UTC() }

func (st *State) note(now time.Time, format string, a ...any) {
	st.Notes = append(st.Notes, now.Format(time.RFC3339)+" "+fmt.Sprintf(format, a...))
	if len(st.Notes) > 50 {
		st.Notes = st.Notes[len(st.Notes)-50:]
	}
}

// previous is the accepted model made before Models[i] (i = -1: the last accepted one),
// or "" (the base): where a rollback from Models[i] goes.
func (st *State) previous(i int) string {
	if i < 0 {
		i = len(st.Models)
	}
	for j := i - 1; j >= 0; j-- {
		if st.Models[j].Status == Accepted {
			return st.Models[j].Name
		}
	}
	return ""
}

func (st *State) index(name string) int {
	for i, m := range st.Models {
		if m.Name == name {
			return i
		}
	}
	return -1
}

func (r *Registry) switchTo(st *State, to, why string) {
	st.Switches = append(st.Switches, Switch{Time: r.now(), From: st.InUse, To: to, Why: why})
	st.InUse = to
}

// ErrBusy: another live process is making the model of that step.
var ErrBusy = errors.New("another frognano process is making this model")

// Begin reserves the name of the model for a training step and records it as pending,
// before the model is made, so that a crash at any point after leaves a record that the
// next change resolves. made says the model was already made and recorded (a restart after
// a crash that came later): go on to judge it. The name is Name(repo, step), or, when Ollama
// already has a model of that name that frognano did not make, the same with ".2", ".3", …
// added (that model is never touched).
func (r *Registry) Begin(ctx context.Context, step int) (name string, made bool, err error) {
	if step < 0 {
		return "", false, fmt.Errorf("model registry: step %d is negative", step)
	}
	err = r.update(ctx, func(st *State, have map[string]api.ListModelResponse) error {
		for _, m := range st.Models {
			if m.Step != step {
				continue
			}
			if m.Status != Pending {
				name, made = m.Name, true
				return nil
			}
			if !m.Owner.isSelf() {
				return fmt.Errorf("%s: %w (pid %d)", m.Name, ErrBusy, m.Owner.PID)
			}
			name = m.Name // our own earlier attempt: make it again
			return nil
		}
		name = Name(r.opts.Repo, step)
		for i := 2; ; i++ {
			if _, taken := have[NameKey(name)]; !taken {
				break
			}
			name = Name(r.opts.Repo, step) + "." + strconv.Itoa(i)
		}
		st.Models = append(st.Models, &Model{Name: name, Step: step, Status: Pending, Made: r.now(), Owner: self()})
		return nil
	})
	return name, made, err
}

// Made records that the model Begin named is in Ollama now, with its digest.
func (r *Registry) Made(ctx context.Context, name string) (*Model, error) {
	var out Model
	err := r.update(ctx, func(st *State, have map[string]api.ListModelResponse) error {
		m := st.Model(name)
		if m == nil {
			return fmt.Errorf("model registry: %s was not begun (call Begin first)", name)
		}
		if m.Status == Pending {
			got, ok := have[NameKey(name)]
			if !ok {
				return fmt.Errorf("Ollama has no model %s: its import did not finish; import it again", name)
			}
			m.Status, m.Digest, m.Owner = Candidate, got.Digest, nil
		}
		out = *m
		return nil
	})
	return &out, err
}

// Import makes the model of a training step once: Begin, then create(ctx, name) (e.g.
// trainer.Import of the merged export) unless it was already made, then Made. A failed create
// frees the name again (unless Ollama has the model after all).
func (r *Registry) Import(ctx context.Context, step int, create func(ctx context.Context, name string) error) (*Model, error) {
	name, made, err := r.Begin(ctx, step)
	if err != nil {
		return nil, err
	}
	if !made {
		if err := create(ctx, name); err != nil {
			r.update(context.WithoutCancel(ctx), func(st *State, _ map[string]api.ListModelResponse) error {
				if m := st.Model(name); m != nil && m.Status == Pending {
					m.Owner = nil // resolved at once by the next reconcile
				}
				return nil
			})
			return nil, fmt.Errorf("making %s: %w", name, err)
		}
	}
	return r.Made(ctx, name)
}

// Serving returns the model in use ("" is the base, named by base) and the held-out results
// recorded for it, so that a candidate's evaluation needs to run the serving model only on
// the tasks it has no result for.
func (r *Registry) Serving() (name, base string, results map[string]gate.Result, err error) {
	st, err := r.State()
	if err != nil {
		return "", "", nil, err
	}
	results = st.BaseHeldOut
	if m := st.Model(st.InUse); m != nil {
		results = m.HeldOut
	}
	return st.InUse, st.Base, maps.Clone(results), nil
}

// ErrServingChanged: the model in use changed while a candidate was being evaluated.
var ErrServingChanged = errors.New("the model in use changed during the evaluation")

// Judge applies the gate to a candidate: serving are the held-out results of the model
// in use, servingName ("" the base) as Serving named it, and candidate the candidate's on
// the same tasks. Accepted, the candidate becomes the model in use (one rename of the state
// file); rejected, it is kept for inspection and the serving model stays. Then old models
// are pruned. Judging a model already judged returns its verdict.
func (r *Registry) Judge(ctx context.Context, name, servingName string, serving, candidate map[string]gate.Result, rule gate.Rule) (gate.Verdict, error) {
	var v gate.Verdict
	err := r.update(ctx, func(st *State, have map[string]api.ListModelResponse) error {
		m := st.Model(name)
		switch {
		case m == nil:
			return fmt.Errorf("model registry: %s is not one of its models (it may have been removed from Ollama: see `frognano finetune models`)", name)
		case m.Verdict != nil:
			v = *m.Verdict
			return nil
		case m.Status != Candidate:
			return fmt.Errorf("model registry: %s is %s, not a candidate (call Made first)", name, m.Status)
		case st.InUse != servingName:
			return fmt.Errorf("%w (%s, now %s): evaluate %s against the model in use again", ErrServingChanged, orBase(servingName), orBase(st.InUse), name)
		}
		var err error
		if v, err = gate.Decide(serving, candidate, rule); err != nil {
			return err
		}
		m.Verdict, m.HeldOut = &v, maps.Clone(candidate)
		if s := st.Model(st.InUse); s != nil {
			s.HeldOut = merged(s.HeldOut, serving)
		} else {
			st.BaseHeldOut = merged(st.BaseHeldOut, serving)
		}
		if v.Accept {
			m.Status = Accepted
			r.switchTo(st, name, v.Reason)
		} else {
			m.Status = Rejected
		}
		r.prune(ctx, st, have)
		return nil
	})
	return v, err
}

func orBase(name string) string {
	if name == "" {
		return "the base model"
	}
	return name
}

func merged(old, add map[string]gate.Result) map[string]gate.Result {
	out := maps.Clone(old)
	if out == nil {
		out = map[string]gate.Result{}
	}
	maps.Copy(out, add)
	return out
}

// ErrNothingToRollBack: the base model is already in use.
var ErrNothingToRollBack = errors.New("nothing to roll back")

// Rollback goes back by hand from the model in use to the accepted model before it, or to
// the base model when there is none; the model left is marked rolled back (kept, never
// put back in use by the gate). It returns both names ("" is the base).
func (r *Registry) Rollback(ctx context.Context) (from, to string, err error) {
	err = r.update(ctx, func(st *State, _ map[string]api.ListModelResponse) error {
		from = st.InUse
		if from == "" {
			return fmt.Errorf("%w: %s already uses %s, the model fine-tuning started from", ErrNothingToRollBack, st.Repo, st.Base)
		}
		i := st.index(from)
		to = st.previous(i)
		st.Models[i].Status = RolledBack
		r.switchTo(st, to, "rolled back by hand")
		return nil
	})
	return from, to, err
}

// ErrUnknownModel: the name is not one the model in use can be rolled back to.
var ErrUnknownModel = errors.New("not a model to roll back to")

// RollbackTo goes back by hand to a model that served before the one in use: an accepted or
// rolled-back model made before it, or the base (to "" or the base's name). Every accepted
// model after it is marked rolled back, so that a later Rollback or gate comparison starts
// from it as if they had never served. A rejected model is refused: the gate stopped it,
// and the user can still name it in the editor's model setting. It returns the model left
// ("" is the base).
func (r *Registry) RollbackTo(ctx context.Context, to string) (from string, err error) {
	err = r.update(ctx, func(st *State, _ map[string]api.ListModelResponse) error {
		from = st.InUse
		if SameName(to, st.Base) {
			to = ""
		}
		cur := st.index(from) // -1: the base, nothing before it
		i := st.index(to)     // -1: the base, or unknown
		switch {
		case to == "" && from == "":
			return fmt.Errorf("%w: %s already uses %s, the model fine-tuning started from", ErrNothingToRollBack, st.Repo, st.Base)
		case to == from:
			return fmt.Errorf("%w: %s is already in use for %s", ErrNothingToRollBack, to, st.Repo)
		case i >= 0 && st.Models[i].Status == Rejected:
			return fmt.Errorf("%s: %w: the held-out gate rejected it (%s); to use it anyway, set it as the editor's model (frognano.model)", to, ErrUnknownModel, verdictReason(st.Models[i].Verdict))
		case to != "" && (i < 0 || i > cur || st.Models[i].Status == Pending || st.Models[i].Status == Candidate):
			return fmt.Errorf("%s: %w; the models %s can go back to are %s", to, ErrUnknownModel, st.Repo, strings.Join(st.rollbackTargets(), ", "))
		}
		for _, m := range st.Models[i+1:] {
			if m.Status == Accepted {
				m.Status = RolledBack
			}
		}
		if i >= 0 {
			st.Models[i].Status = Accepted
		}
		r.switchTo(st, to, "rolled back by hand to "+orBase(to))
		return nil
	})
	return from, err
}

// rollbackTargets are what RollbackTo accepts: the base's name and the models made before
// the one in use that served.
func (st *State) rollbackTargets() []string {
	out := []string{st.Base + " (the base)"}
	end := st.index(st.InUse)
	for _, m := range st.Models[:max(end, 0)] {
		if m.Status == Accepted || m.Status == RolledBack {
			out = append(out, m.Name)
		}
	}
	return out
}

// Prune deletes the models beyond the ones kept (see the package doc) and returns the names
// deleted.
func (r *Registry) Prune(ctx context.Context) ([]string, error) {
	var deleted []string
	err := r.update(ctx, func(st *State, have map[string]api.ListModelResponse) error {
		deleted = r.prune(ctx, st, have)
		return nil
	})
	return deleted, err
}

// prune deletes, of the models not protected (in use, the rollback target, not yet
// judged), all but the Keep most recent; only when Ollama still has each under its recorded
// digest (reconcile dropped the others' records). A failed delete keeps the record, to be
// tried again next time.
func (r *Registry) prune(ctx context.Context, st *State, have map[string]api.ListModelResponse) (deleted []string) {
	protect := map[string]bool{st.InUse: true, st.previous(st.index(st.InUse)): true}
	kept := 0
	drop := map[*Model]bool{}
	for i := len(st.Models) - 1; i >= 0; i-- {
		m := st.Models[i]
		if protect[m.Name] || m.Status == Pending || m.Status == Candidate {
			continue
		}
		if kept < st.Keep {
			kept++
			continue
		}
		if got, ok := have[NameKey(m.Name)]; !ok || got.Digest != m.Digest {
			continue // reconcile has just dropped such records; never delete what is not ours
		}
		if err := r.opts.Client.Delete(ctx, &api.DeleteRequest{Model: m.Name}); err != nil {
			st.note(r.now(), "could not delete %s (tried again next time): %v", m.Name, err)
			continue
		}
		drop[m] = true
		deleted = append(deleted, m.Name)
	}
	if len(drop) > 0 {
		kept := st.Models[:0]
		for _, m := range st.Models {
			if !drop[m] {
				kept = append(kept, m)
			}
		}
		clear(st.Models[len(kept):])
		st.Models = kept
		st.note(r.now(), "deleted %s (beyond the %d kept)", strings.Join(deleted, ", "), st.Keep)
	}
	return deleted
}
