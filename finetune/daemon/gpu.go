package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// App is a process using the GPU, as nvidia-smi lists it.
type App struct {
	PID  int
	Name string
	MiB  int
}

func (a App) String() string { return fmt.Sprintf("pid %d (%s, %d MiB)", a.PID, a.Name, a.MiB) }

// smiArgs ask nvidia-smi for the compute processes of every GPU, one CSV line each.
var smiArgs = []string{"--query-compute-apps=pid,process_name,used_memory", "--format=csv,noheader,nounits"}

// QueryApps runs nvidia-smi at path and returns the processes using a GPU.
func QueryApps(ctx context.Context, path string) ([]App, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, smiArgs...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && len(ee.Stderr) > 0 {
			err = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		return nil, fmt.Errorf("%s %s: %w", path, strings.Join(smiArgs, " "), err)
	}
	return parseApps(string(out))
}

// parseApps reads nvidia-smi's CSV lines ("1234, /usr/bin/python3, 2048"); "[N/A]"
// memory (some drivers) counts as 0. "No running processes found", which older drivers
// print instead of nothing, is no process.
func parseApps(out string) ([]App, error) {
	var apps []App
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "No running") {
			continue
		}
		f := strings.Split(line, ",")
		if len(f) < 3 {
			return nil, fmt.Errorf("nvidia-smi: unexpected line %q", line)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(f[0]))
		if err != nil {
			return nil, fmt.Errorf("nvidia-smi: unexpected line %q", line)
		}
		mib, _ := strconv.Atoi(strings.TrimSpace(f[len(f)-1]))
		name := strings.TrimSpace(strings.Join(f[1:len(f)-1], ","))
		apps = append(apps, App{PID: pid, Name: name, MiB: mib})
	}
	return apps, nil
}

// Others are the apps the daemon should yield to: all but frognano's own work, which is
// the daemon and its descendants (the trainer) and Ollama, whose runners keep the model of
// the rollouts loaded for minutes after them (yielding to it would wait for itself).
// A user's own Ollama chats count as frognano's too: nvidia-smi cannot tell them apart.
func Others(apps []App, self int) []App {
	var out []App
	for _, a := range apps {
		if isOllama(a.Name) || descends(a.PID, self) {
			continue
		}
		out = append(out, a)
	}
	return out
}

// isOllama says an nvidia-smi process name is Ollama's server or runner.
func isOllama(name string) bool {
	base := filepath.Base(strings.Fields(name + " x")[0])
	return base == "ollama" || strings.HasPrefix(base, "ollama_") || strings.HasPrefix(base, "ollama-")
}

// descends says pid is root or one of its descendants, following parents in /proc. In a
// container nvidia-smi may show the host's pids, which match nothing here: such apps
// count as others (yielding too much, never too little).
func descends(pid, root int) bool {
	for i := 0; i < 64 && pid > 1; i++ {
		if pid == root {
			return true
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return false
		}
		s := string(b)
		j := strings.LastIndexByte(s, ')')
		if j < 0 {
			return false
		}
		f := strings.Fields(s[j+1:])
		if len(f) < 2 {
			return false
		}
		pid, _ = strconv.Atoi(f[1])
	}
	return false
}

// FindSMI is nvidia-smi on PATH, "" when there is none (then the daemon cannot see other
// programs on the GPU and says that yielding is off).
func FindSMI() string {
	p, err := exec.LookPath("nvidia-smi")
	if err != nil {
		return ""
	}
	return p
}
