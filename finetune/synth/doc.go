// Package synth turns a repository's own tests into verified training tasks. Entry point:
// [Run], which opens the environment (finetune/env), proposes candidates ([GoMutants]:
// procedural mutations and body removals, via go/ast), sets aside those in code no passing
// test runs (coverage.go), screens the rest fast — a round's mutants of every package
// behind one switch (switch.go), laid over the packages with `go test -overlay`, built
// into every test binary concerned in one sandbox command and chosen per run by
// $FROGNANO_MUTANT (validate.go) — confirms every survivor once as a plain patch (the file
// itself changed, no switch) on a fresh copy that a round's confirmations share and that
// is proven unchanged afterwards (plain.go), and writes the tasks to the store
// (finetune/task). With [Options].LazyConfirm the survivors are stored as screened
// candidates instead (not tasks), and [Confirm] makes that plain confirmation when they
// are about to be used. In a repository of several Go modules every go command runs in the
// folder of the packages' module (env.Env.InModules), and each task records where its
// tests run (task.TestSpec.Modules). The user's repository is only read.
package synth
