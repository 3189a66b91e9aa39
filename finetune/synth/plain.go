package synth

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/frognano/frognano/finetune/env"
	"github.com/frognano/frognano/internal/atomicfile"
)

// Plain confirmation: this, not the switch, decides whether a candidate is a task. The
// candidate's patch is applied to the commit as it is (no switch, no overlay: the file
// itself is rewritten) and the tests of its package and of every package whose tests build
// it run as go test runs them.
//
// A copy per candidate would cost a copy and a git commit of the tree each time, so the
// candidates of one round are confirmed one after another on one fresh copy: each command
// first puts back the file the previous candidate changed, then writes its own. The copy
// is then proven to be the commit again (workspace.Changes: nothing else was written,
// removed or replaced by a test); if it is not, a test of some candidate changed the tree
// and every candidate confirmed on that copy is confirmed again, each on a fresh copy.

// confirm checks v's mutant as a plain patch on a fresh copy of its own.
func (r *runner) confirm(ctx context.Context, v *verdict) {
	start := time.Now()
	defer func() { v.seconds += time.Since(start).Seconds() }()
	m := v.m
	if !r.makePatch(ctx, v) {
		return
	}
	if r.s.Detection.Script() {
		r.confirmScript(ctx, v, v.screenedRun)
		return
	}
	c, err := r.s.Copy(ctx, map[string][]byte{m.File: m.Apply(r.sources[m.File])})
	if err != nil {
		v.reason = RejectBuild
		return
	}
	defer c.Close()
	affected := r.s.Env.Affected(m.Package)
	res, err := c.Run(ctx, r.plainCommand(affected), 4*r.packageTimeout()+time.Minute)
	if err != nil {
		v.reason = RejectBuild
		return
	}
	r.judge(v, res.Stdout, res.TimedOut)
}

// judge sets v's verdict from the output of plainCommand on its affected packages.
func (r *runner) judge(v *verdict, stdout string, timedOut bool) {
	m := v.m
	affected := r.s.Env.Affected(m.Package)
	var ids []string
	for _, pkg := range affected {
		ids = append(ids, r.selected(pkg)...)
	}
	results := env.ParseGoTestJSON([]byte(stdout))
	for _, pkg := range affected {
		if why, ok := results.Broken[pkg]; ok && why == "build failed" {
			v.reason = RejectBuild
			return
		}
	}
	if !v.outcome(results, ids, timedOut, RejectUnconfirm) {
		return
	}
	for _, id := range v.failToPass {
		if p, _ := env.SplitID(id); p != m.Package {
			v.distance = 1
		}
	}
	v.reason = ""
}

// plainCopy confirms candidates one after another on one fresh copy (see above). Close it.
type plainCopy struct {
	r       *runner
	c       *env.Copy
	restore string     // the command that puts back the file the last candidate changed
	done    []*verdict // confirmed on c
	spoiled bool       // c could not be made or used: each candidate gets a copy of its own
}

// plainDir prefixes the folders (at the top of the copy) that hold a candidate's file.
const plainDir = ".frognano-plain-"

func (p *plainCopy) confirm(ctx context.Context, v *verdict) {
	r := p.r
	if r.s.Detection.Script() {
		r.confirm(ctx, v) // a fresh copy each: confirmScript
		return
	}
	if p.c == nil && !p.spoiled {
		start := time.Now()
		c, err := r.s.Copy(ctx, nil)
		v.seconds += time.Since(start).Seconds()
		if err != nil {
			p.spoiled = true
		}
		p.c = c
	}
	if p.spoiled {
		r.confirm(ctx, v)
		return
	}
	start := time.Now()
	defer func() { v.seconds += time.Since(start).Seconds() }()
	m := v.m
	if !r.makePatch(ctx, v) {
		return
	}
	// A folder of its own, just made, for each candidate's files: nothing a test wrote
	// before can stand in for them or lead frognano's writes elsewhere.
	dir, err := os.MkdirTemp(p.c.WS.Root, plainDir)
	if err == nil {
		err = os.Chmod(dir, 0o755) // readable by the commands' user
	}
	newFile, oldFile := filepath.Join(dir, "new"), filepath.Join(dir, "old")
	if err == nil {
		err = atomicfile.Write(newFile, m.Apply(r.sources[m.File]), 0o644)
	}
	if err == nil {
		err = atomicfile.Write(oldFile, r.sources[m.File], 0o644)
	}
	if err != nil {
		p.spoil(ctx, v)
		return
	}
	target := env.ShellQuote(p.c.Path(m.File))
	// 97: the tree could not be set; the copy is given up, not the candidate.
	script := fmt.Sprintf("%scp -f -- %s %s || exit 97\n%s", p.restore, env.ShellQuote(newFile), target,
		r.plainCommand(r.s.Env.Affected(m.Package)))
	p.restore = fmt.Sprintf("cp -f -- %s %s || exit 97\n", env.ShellQuote(oldFile), target)
	res, err := p.c.Run(ctx, script, 4*r.packageTimeout()+time.Minute)
	if err != nil || res.ExitCode == 97 {
		p.spoil(ctx, v)
		return
	}
	r.judge(v, res.Stdout, res.TimedOut)
	p.done = append(p.done, v)
}

// spoil gives the shared copy up and confirms v on a copy of its own.
func (p *plainCopy) spoil(ctx context.Context, v *verdict) {
	p.spoiled = true
	p.r.redo(ctx, v)
}

// redo forgets what confirmation said about v and confirms it on a fresh copy.
func (r *runner) redo(ctx context.Context, v *verdict) {
	r.redone++
	v.reason, v.failToPass, v.passToPass, v.output, v.distance, v.patch = "", nil, nil, nil, 0, ""
	r.confirm(ctx, v)
}

// Close puts the last file back, proves the copy is the commit again, and confirms again,
// each on a copy of its own, every candidate confirmed on it when it is not.
func (p *plainCopy) Close(ctx context.Context) {
	if p.c == nil {
		return
	}
	start := time.Now()
	clean := !p.spoiled
	if clean && p.restore != "" {
		res, err := p.c.Run(ctx, p.restore, time.Minute)
		clean = err == nil && res.ExitCode == 0
	}
	if clean {
		ch, err := p.c.WS.Changes(ctx)
		clean = err == nil
		if err == nil {
			for _, f := range ch.Files {
				if !strings.HasPrefix(f.Path, plainDir) {
					clean = false
				}
			}
			for _, s := range ch.Skipped {
				if !strings.HasPrefix(s.Path, plainDir) {
					clean = false
				}
			}
		}
	}
	p.c.Close()
	p.c = nil
	if len(p.done) > 0 {
		share := time.Since(start).Seconds() / float64(len(p.done))
		for _, v := range p.done {
			v.seconds += share
			if v.confirmSeconds > 0 {
				v.confirmSeconds += share
			}
		}
	}
	if !clean {
		for _, v := range p.done {
			before := v.seconds
			r := p.r
			r.redo(ctx, v)
			if v.confirmSeconds > 0 {
				v.confirmSeconds += v.seconds - before
			}
		}
	}
	p.done = nil
}
