package doctor

import (
	"context"
	"fmt"

	"github.com/frognano/frognano/ollama"
)

// checkOllamaBuild reports how the Ollama that frognano starts for itself (tests, the demo)
// was built: ggml compiled for baseline x86-64 runs a small model 5-11x slower than built
// for the machine's own instruction set.
func checkOllamaBuild(_ context.Context, _ *state) Result {
	bin, err := ollama.FindBinary()
	if err != nil {
		return Result{Status: Skip, Verdict: "no Ollama binary for frognano's own server (tests, demo)"}
	}
	b, ok := ollama.BuildOf(bin)
	if !ok {
		return Result{Status: OK, Verdict: bin + " (not built by frognano: an official build picks its CPU code at run time)"}
	}
	verdict := fmt.Sprintf("%s built with %s for %s (%s)", bin, b.CFlags, b.CPU, b.Features)
	if !b.Native() {
		return Result{Status: Warn, Verdict: verdict + ": not for this machine's instruction set, models run several times slower",
			Fix: "run scripts/build-ollama.sh, which rebuilds it with -march=native"}
	}
	return Result{Status: OK, Verdict: verdict}
}
