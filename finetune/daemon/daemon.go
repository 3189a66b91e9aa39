// Package daemon runs fine-tuning in the background, one process per repository: loop.Step
// again and again, within a schedule, training only while it holds the machine's GPU lock
// and no other program uses the GPU, learning of new commits from the workspace keeper.
//
// Entry points: [Start] detaches the background process (a re-execution of frognano), whose
// body is [Run]; [Stop] ends it; [Look] is what `frognano finetune status` prints.
//
// Everything the daemon knows lives in its folder ([Dir]), each file written atomically:
//
//	daemon.lock   flock held by the running daemon (its pid inside): a daemon killed with
//	              kill -9 releases it with its last breath, so a stale pid never blocks a start
//	config.json   the settings of `frognano finetune start` (a restart runs with the same)
//	status.json   phase, progress, GPU time, last error, model in use (Status)
//	daemon.log    the background process's stdout and stderr
//
// The loop's own state (tasks, rollouts, models) is the loop's and the registry's; the
// daemon adds no state that a kill could leave half written.
package daemon

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/frognano/frognano/finetune/registry"
	"github.com/frognano/frognano/internal/atomicfile"
	"github.com/frognano/frognano/internal/cachedir"
)

const (
	lockFile   = "daemon.lock"
	configFile = "config.json"
	statusFile = "status.json"
	// LogFile is the background process's output, in the daemon's folder.
	LogFile = "daemon.log"
)

// Dir is the daemon's folder of repo (absolute, the top of its work tree).
func Dir(repo string) string {
	return filepath.Join(cachedir.Dir(), "finetune", "daemon", registry.Key(repo))
}

// GPULockPath is the machine's GPU lock: one trainer per machine, whatever the repository,
// so it sits in frognano's cache folder rather than in a daemon's.
func GPULockPath() string { return filepath.Join(cachedir.Dir(), "finetune", "gpu.lock") }

// Config is the daemon's saved settings: the flags of `frognano finetune start` by name, as
// the command line would give them, so that a start after a crash or a reboot runs with
// the same ones without the user repeating them.
type Config struct {
	Version int               `json:"version"`
	Flags   map[string]string `json:"flags"`
}

const configVersion = 1

// SaveConfig writes dir's config atomically.
func SaveConfig(dir string, c Config) error {
	c.Version = configVersion
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, configFile), append(b, '\n'), 0o600)
}

// LoadConfig reads dir's config; a missing one is an error satisfying
// errors.Is(err, fs.ErrNotExist).
func LoadConfig(dir string) (Config, error) {
	var c Config
	p := filepath.Join(dir, configFile)
	b, err := os.ReadFile(p)
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("daemon config %s: %w (remove it and pass the flags to `frognano finetune start` again)", p, err)
	}
	if c.Version != configVersion {
		return c, fmt.Errorf("daemon config %s: version %d, this frognano reads %d (remove it and pass the flags to `frognano finetune start` again)", p, c.Version, configVersion)
	}
	return c, nil
}
