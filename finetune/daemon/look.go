package daemon

import (
	"errors"
	"io/fs"

	"github.com/frognano/frognano/finetune/report"
)

// Overview is what `frognano finetune status` shows: whether the daemon runs, its status,
// and the headline numbers of the report's Summary (held-out pass rates now and at the
// start, tasks in the band, iterations, the model in use).
type Overview struct {
	Repo    string          `json:"repo"`
	Running bool            `json:"running"`
	PID     int             `json:"pid,omitempty"`
	Status  *Status         `json:"status,omitempty"`
	Summary *report.Summary `json:"summary,omitempty"`
	// Model is the model in use (the registry's; the base until one is accepted).
	Model string `json:"model,omitempty"`
	// Problems are files that could not be read (each says what to do).
	Problems []string `json:"problems,omitempty"`
}

// Look gathers the overview of repo; dir, loopDir and registryDir are the daemon's, the
// loop's and the registry's folders ("" their defaults).
func Look(repo, dir, loopDir, registryDir string) *Overview {
	if dir == "" {
		dir = Dir(repo)
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
	sum, err := report.Collect(report.Options{Repo: repo, Dir: loopDir, RegistryDir: registryDir})
	problem(err)
	switch {
	case sum != nil && sum.Started:
		o.Summary, o.Model = sum, sum.InUse
	case st != nil:
		o.Model = st.Model
	}
	return o
}
