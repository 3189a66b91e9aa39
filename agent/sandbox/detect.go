// Package sandbox runs the agent's commands confined to its private copy of the workspace.
//
// This file holds the start-up probe of what isolation the machine allows; the runner that
// uses it lands with the agent.
package sandbox

import (
	"context"
	"os/exec"
	"time"
)

// Network says how commands are cut off from the network.
type Network string

const (
	// NetUnshare: a new network namespace through util-linux unshare (root, or an
	// unprivileged user namespace mapped to root).
	NetUnshare Network = "unshare"
	// NetBwrap: bubblewrap's --unshare-net.
	NetBwrap Network = "bwrap"
	// NetNone: no isolation is available; commands can reach the network.
	NetNone Network = "none"
)

// Isolation is what Detect found.
type Isolation struct {
	Network Network
	// Command is the prefix that runs a command with no network, e.g.
	// ["unshare", "--net", "--map-root-user"]; empty for NetNone.
	Command []string
	// Why explains NetNone: what was tried and failed.
	Why string
}

// Detect probes, in order of preference, the ways to run a command without network. Each
// probe really runs `true` inside the isolation, so a present but forbidden tool (no user
// namespaces in a container, say) is not mistaken for a working one.
func Detect(ctx context.Context) Isolation {
	candidates := []struct {
		net Network
		cmd []string
	}{
		{NetUnshare, []string{"unshare", "--net"}},
		{NetUnshare, []string{"unshare", "--net", "--map-root-user"}},
		{NetBwrap, []string{"bwrap", "--dev-bind", "/", "/", "--unshare-net"}},
	}
	var why string
	for _, c := range candidates {
		if _, err := exec.LookPath(c.cmd[0]); err != nil {
			why += c.cmd[0] + ": not installed; "
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		out, err := exec.CommandContext(pctx, c.cmd[0], append(c.cmd[1:], "true")...).CombinedOutput()
		cancel()
		if err == nil {
			return Isolation{Network: c.net, Command: c.cmd}
		}
		why += c.cmd[0] + ": " + firstLine(string(out), err.Error()) + "; "
	}
	return Isolation{Network: NetNone, Why: why}
}

func firstLine(s, fallback string) string {
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			s = s[:i]
			break
		}
	}
	if s == "" {
		return fallback
	}
	return s
}
