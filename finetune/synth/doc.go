// Package synth turns a repository's own tests into verified training tasks. Entry point:
// [Run], which opens the environment (finetune/env), proposes candidates ([GoMutants]:
// procedural mutations and body removals, via go/ast), screens them fast through one
// build per package with every mutant behind a switch (switch.go, laid over the package
// with `go test -overlay` and chosen per run by $FROGNANO_MUTANT), confirms every survivor
// once as a plain patch on a fresh copy (validate.go), and writes the tasks to the store
// (finetune/task). With [Options].LazyConfirm the survivors are stored as screened
// candidates instead (not tasks), and [Confirm] makes that plain confirmation when they
// are about to be used. The user's repository is only read.
package synth
