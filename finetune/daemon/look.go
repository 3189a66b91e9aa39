package daemon

import (
	"errors"
	"io/fs"
	"sort"

	"github.com/frognano/frognano/finetune/loop"
	"github.com/frognano/frognano/finetune/registry"
)

// Overview is what `frognano finetune status` shows: whether the daemon runs, its status,
// and the headline numbers read from the loop's state and the registry.
type Overview struct {
	Repo    string  `json:"repo"`
	Running bool    `json:"running"`
	PID     int     `json:"pid,omitempty"`
	Status  *Status `json:"status,omitempty"`
	// Model is the model in use (the registry's; the base until one is accepted).
	Model string `json:"model,omitempty"`
	// HeldOutStart is the held-out pass rate of the base model at the first gate,
	// HeldOutNow that of the model in use at its latest gate (nil before any gate). The
	// held-out tasks grow as synthesis adds some, so the two may be over different tasks.
	HeldOutStart *float64 `json:"held_out_start,omitempty"`
	HeldOutNow   *float64 `json:"held_out_now,omitempty"`
	// InBand is the number of training tasks in the frontier's band; Tasks all it knows.
	InBand int `json:"in_band"`
	Tasks  int `json:"tasks"`
	// Iterations is the number of finished iterations, Accepted how many were.
	Iterations int `json:"iterations"`
	Accepted   int `json:"accepted"`
	// Problems are files that could not be read (each says what to do).
	Problems []string `json:"problems,omitempty"`
}

// Look gathers the overview of repo; loopDir and registryDir are the loop's and the
// registry's folders ("" their defaults).
func Look(repo, dir, loopDir, registryDir string) *Overview {
	if dir == "" {
		dir = Dir(repo)
	}
	if loopDir == "" {
		loopDir = loop.DefaultDir(repo)
	}
	o := &Overview{Repo: repo}
	problem := func(err error) {
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			o.Problems = append(o.Problems, err.Error())
		}
	}
	pid, running, err := Running(dir)
	problem(err)
	o.Running, o.PID = running, pid
	st, err := ReadStatus(dir)
	problem(err)
	o.Status = st
	if ls, err := loop.Load(loop.StatePath(loopDir)); err == nil {
		o.InBand, o.Tasks = len(ls.Frontier.InBand()), len(ls.Frontier.Tasks)
		for _, h := range ls.History {
			o.Iterations++
			if h.Accepted {
				o.Accepted++
			}
		}
	} else {
		problem(err)
	}
	if rs, err := registry.Load(registry.Path(registryDir, repo)); err == nil {
		o.Model = rs.Serving()
		o.HeldOutStart, o.HeldOutNow = heldOut(rs)
	} else {
		problem(err)
		if st != nil {
			o.Model = st.Model
		}
	}
	return o
}

// heldOut reads the pass rates from the gate's verdicts: at the start, the serving side
// of the first verdict (the base model); now, the candidate side of the verdict that
// accepted the model in use, else the serving side of the latest verdict (the model in
// use, measured again then).
func heldOut(rs *registry.State) (start, now *float64) {
	ms := append([]*registry.Model(nil), rs.Models...)
	sort.SliceStable(ms, func(i, j int) bool { return ms[i].Step < ms[j].Step })
	var last *registry.Model
	for _, m := range ms {
		if m.Verdict == nil {
			continue
		}
		if start == nil {
			v := m.Verdict.Serving
			start = &v
		}
		last = m
	}
	if m := rs.Model(rs.InUse); m != nil && m.Verdict != nil && (last == nil || last.Step <= m.Step) {
		v := m.Verdict.Candidate
		return start, &v
	}
	if last != nil {
		v := last.Verdict.Serving
		now = &v
	}
	return start, now
}
