package sandbox

import (
	"context"
	"sync"
)

// What the machine allows does not change while frognano runs, and probing it costs
// tens of milliseconds (several processes): the language server and fine-tuning rollouts
// start a Runner per episode, so the answers are kept for the life of the process.
var (
	probeMu     sync.Mutex // guards isolations and goEnv
	isolations  = map[Mode]Isolation{}
	goEnv       map[string]string
	goEnvProbed bool
)

// detectCached is detect, remembered per requested mode. Failures are not remembered.
func detectCached(ctx context.Context, want Mode) (Isolation, error) {
	probeMu.Lock()
	iso, ok := isolations[want]
	probeMu.Unlock()
	if ok {
		return iso, nil
	}
	iso, err := detect(ctx, want)
	if err != nil {
		return iso, err
	}
	probeMu.Lock()
	isolations[want] = iso
	probeMu.Unlock()
	return iso, nil
}

// goEnvironmentCached is goEnvironment, asked once.
func goEnvironmentCached(ctx context.Context) map[string]string {
	probeMu.Lock()
	defer probeMu.Unlock()
	if !goEnvProbed {
		goEnv, goEnvProbed = goEnvironment(ctx), true
	}
	return goEnv
}
