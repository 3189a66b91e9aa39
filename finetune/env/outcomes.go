package env

import "sort"

// outcomes records every status each test had over the runs of its suite (the Go and the
// script suites share how flaky and hung tests are decided).
type outcomes map[string]map[string]bool // TestID → statuses seen

// note records the statuses of a whole suite's run.
func (o outcomes) note(tests map[string]Result) {
	for id, t := range tests {
		if o[id] == nil {
			o[id] = map[string]bool{}
		}
		o[id][t.Status] = true
	}
}

// noteRerun records a re-run of some tests: only tests the suite's runs had.
func (o outcomes) noteRerun(tests map[string]Result) {
	for id, t := range tests {
		if o[id] != nil {
			o[id][t.Status] = true
		}
	}
}

// alwaysFailing are the tests that failed in every run, sorted.
func (o outcomes) alwaysFailing() []string {
	var ids []string
	for id, st := range o {
		if st[Fail] && !st[Pass] {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// apply marks in e the tests that hung in some run as Hung and the ones that both passed
// and failed as Flaky.
func (o outcomes) apply(e *Env) {
	for id, st := range o {
		t := e.Tests[id]
		switch {
		case st[Hung]:
			t.Status = Hung
		case st[Pass] && st[Fail]:
			t.Status = Flaky
		}
		e.Tests[id] = t
	}
}
