// Package env finds out how a repository's tests run and what they do on one commit: the
// environment a synthesized task is checked against. Entry point: [Open], which exports the
// user's HEAD ([Export]; their tree and git state are only read), detects the suite
// ([Detect]: Go modules with go test -json, gotest.go, every module of the repository in its
// own folder or the go.work's, modules.go; Python with pytest from the
// repository's own virtual environment, python.go; JS/TS with node --test, vitest or jest,
// js.go; script.go runs those two), and returns the [Env] from the cache or runs
// the suite in the agent's sandbox on a private copy ([Session.Copy]) to make it: per-test
// outcome and time, flaky tests (passed and failed on the same commit) and hung tests (the
// package's time limit ran out while they ran) found and left out.
//
// Everything a test run leaves in a copy is hostile: results are read from the command's
// output only, and copies are thrown away.
package env
