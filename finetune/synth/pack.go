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

// Packed confirmation: a plain confirmation costs a go command, a compile of the
// candidate's package and the link of every test binary built from it, so confirming
// survivors one by one costs about what the naive way does. Candidates whose affected
// packages (their own and those whose tests build it) are disjoint are confirmed together
// on the shared copy: every patch is written, one `go test -c` builds all their test
// binaries, and then, one candidate at a time, the tree is set to the commit plus that
// candidate's patch alone and the binaries of its affected packages run, as go test runs
// them (test2json, -test.v=test2json, -test.paniconexit0, in the package's folder).
//
// Why each candidate's verdict is its solo plain confirmation's:
//   - at build time, a test binary of an affected package X of candidate a is built from
//     X's test dependencies; b's package is among them only if X is among b's affected
//     packages, which the packing rules out. So each binary holds exactly a's patch.
//   - at run time the files on disk are the commit plus a's patch only (a test that reads
//     another package's source, or runs go on the module, sees what it would alone).
//   - what a test writes into the tree spoils the copy as before (plain.go): every
//     candidate confirmed on it is confirmed again on a copy of its own.
//
// Packages run one after another where go test may run them side by side. A pack whose
// build fails (a patch that builds alone in the switch but not plain) is confirmed again
// one candidate at a time.

// maxPack bounds a pack: a pack that fails to build is confirmed again one by one.
const maxPack = 8

// pack takes the next pack from todo (its first candidate, and then each next one whose
// affected packages none of the pack's share), at most n, and returns it and the rest in
// their order.
func (r *runner) pack(todo []*verdict, n int) (pack, rest []*verdict) {
	pack = todo[:1:1]
	if r.s.Env.Kind != env.KindGo || r.s.Detection.Script() {
		return pack, todo[1:]
	}
	used := map[string]bool{}
	for _, p := range r.s.Env.Affected(todo[0].m.Package) {
		used[p] = true
	}
	for _, v := range todo[1:] {
		if len(pack) >= min(n, maxPack) {
			rest = append(rest, v)
			continue
		}
		aff := r.s.Env.Affected(v.m.Package)
		free := true
		for _, p := range aff {
			free = free && !used[p]
		}
		if !free {
			rest = append(rest, v)
			continue
		}
		for _, p := range aff {
			used[p] = true
		}
		pack = append(pack, v)
	}
	return pack, rest
}

// confirmPack confirms vs (a pack) on the shared copy; alone when there is one.
func (p *plainCopy) confirmPack(ctx context.Context, vs []*verdict) {
	r := p.r
	if len(vs) < 2 || r.s.Detection.Script() {
		for _, v := range vs {
			p.confirm(ctx, v)
		}
		return
	}
	start := time.Now()
	if p.c == nil && !p.spoiled {
		c, err := r.s.Copy(ctx, nil)
		if err != nil {
			p.spoiled = true
		}
		p.c = c
	}
	var ok []*verdict
	for _, v := range vs {
		if r.makePatch(ctx, v) {
			ok = append(ok, v)
		}
	}
	charge := func(list []*verdict) {
		share := time.Since(start).Seconds() / float64(len(vs))
		for _, v := range list {
			v.seconds += share
		}
	}
	if p.spoiled || len(ok) < 2 {
		charge(vs)
		for _, v := range ok {
			p.confirm(ctx, v)
		}
		return
	}
	script, outs, err := p.packScript(ok)
	if err != nil {
		charge(vs)
		for _, v := range ok {
			p.spoil(ctx, v)
		}
		return
	}
	res, err := p.c.Run(ctx, script, time.Duration(len(ok)+1)*(4*r.packageTimeout()+time.Minute))
	charge(vs)
	switch {
	case err != nil || res.ExitCode == 97:
		for _, v := range ok {
			p.spoil(ctx, v)
		}
		return
	case res.ExitCode == 98: // the pack did not build: each on its own says which
		for _, v := range ok {
			p.confirm(ctx, v)
		}
		return
	}
	r.packed += len(ok)
	for i, v := range ok {
		var stdout strings.Builder
		timedOut := false
		for _, f := range outs[i] {
			js, _ := os.ReadFile(p.c.Path(f + ".json"))
			rc, _ := os.ReadFile(p.c.Path(f + ".rc"))
			code := strings.TrimSpace(string(rc))
			timedOut = timedOut || code == "124" || code == "137"
			stdout.Write(js)
		}
		r.judge(v, stdout.String(), timedOut)
		p.done = append(p.done, v)
	}
}

// packScript is the sandbox command that confirms vs together (see above), and where the
// runs of each candidate's test binaries write their output (.json) and exit code (.rc).
// Exit code 97: the tree could not be set (the copy is given up); 98: the build failed.
func (p *plainCopy) packScript(vs []*verdict) (string, [][]string, error) {
	r := p.r
	// The candidates' files, in a folder frognano made, as plain.go does.
	dir, err := os.MkdirTemp(p.c.WS.Root, plainDir)
	if err == nil {
		err = os.Chmod(dir, 0o755)
	}
	if err != nil {
		return "", nil, err
	}
	r.packs++
	// Written by the sandbox's user, who cannot write in dir; under plainDir, so the proof
	// that the copy is the commit again passes them over.
	binDir := fmt.Sprintf("%spack-%d", plainDir, r.packs)
	outDir := binDir + "-out"
	var set, restore strings.Builder
	sets, restores := make([]string, len(vs)), make([]string, len(vs))
	pkgs := map[string]bool{}
	for i, v := range vs {
		m := v.m
		newFile, oldFile := filepath.Join(dir, fmt.Sprint(i, ".new")), filepath.Join(dir, fmt.Sprint(i, ".old"))
		if err := atomicfile.Write(newFile, m.Apply(r.sources[m.File]), 0o644); err != nil {
			return "", nil, err
		}
		if err := atomicfile.Write(oldFile, r.sources[m.File], 0o644); err != nil {
			return "", nil, err
		}
		target := env.ShellQuote(p.c.Path(m.File))
		sets[i] = fmt.Sprintf("cp -f -- %s %s || exit 97\n", env.ShellQuote(newFile), target)
		restores[i] = fmt.Sprintf("cp -f -- %s %s || exit 97\n", env.ShellQuote(oldFile), target)
		set.WriteString(sets[i])
		restore.WriteString(restores[i])
		for _, pkg := range r.s.Env.Affected(m.Package) {
			if len(r.s.Env.Packages[pkg].TestDeps) > 0 { // it has tests: go test builds a binary
				pkgs[pkg] = true
			}
		}
	}
	build, bins := buildScript(binDir, "go test -c -vet=off", sortedKeys(pkgs))
	var s strings.Builder
	s.WriteString(p.restore)
	p.restore = "" // the script puts every file back
	s.WriteString(set.String())
	fmt.Fprintf(&s, "(\n%s) || {\n%sexit 98\n}\n", build, restore.String())
	// Read-only from now on: a test would have to mean it to change another's binary.
	fmt.Fprintf(&s, "chmod -R a-w %s && mkdir -p %s || exit 97\n", env.ShellQuote(binDir), env.ShellQuote(outDir))
	s.WriteString(restore.String())
	s.WriteString("T2J=(go tool test2json); P=\"$(go tool -n test2json 2>/dev/null)\" && [ -x \"$P\" ] && T2J=(\"$P\")\n")
	skip := ""
	if len(r.excluded) > 0 {
		skip = " -test.skip=" + env.ShellQuote(env.RunRegexp(r.excluded))
	}
	outs := make([][]string, len(vs))
	for i, v := range vs {
		s.WriteString(sets[i])
		for j, pkg := range r.s.Env.Affected(v.m.Package) {
			bin, ok := bins[pkg]
			if !ok {
				continue
			}
			f := fmt.Sprintf("%s/%d-%d", outDir, i, j)
			outs[i] = append(outs[i], f)
			q := env.ShellQuote(p.c.Path(f))
			fmt.Fprintf(&s, "(cd %s && timeout -k 2 %d \"${T2J[@]}\" -p %s %s -test.v=test2json -test.paniconexit0 -test.count=1 -test.timeout=%s%s >%s.json 2>&1); echo $? >%s.rc\n",
				env.ShellQuote(p.c.Path(r.s.Env.Packages[pkg].Dir)), int((r.packageTimeout() + time.Minute).Seconds()),
				env.ShellQuote(pkg), env.ShellQuote(p.c.Path(bin)), r.packageTimeout(), skip, q, q)
		}
		s.WriteString(restores[i])
	}
	return s.String(), outs, nil
}
