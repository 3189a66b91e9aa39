package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// Mode is how commands are isolated from the machine.
type Mode string

const (
	// ModeBwrap: bubblewrap. No network, own PID namespace, the whole file system read-only
	// except the workspace copy, a private /tmp and the Runner's writable caches, with the
	// credentials under the home directories hidden.
	ModeBwrap Mode = "bwrap"
	// ModeUnshare: util-linux unshare. No network, an own PID namespace, and the credentials
	// hidden where setpriv lets it drop capabilities, but commands can write wherever the
	// user running frognano can.
	ModeUnshare Mode = "unshare"
	// ModeNone: no isolation; commands reach the network and the whole file system.
	ModeNone Mode = "none"
)

// Isolation is what Detect found: what the machine allows, and in plain words what it
// does not.
type Isolation struct {
	Mode          Mode
	NoNetwork     bool // commands cannot open network connections
	WriteConfined bool // writes outside the copy, /tmp and the writable caches fail
	// SecretsHidden: commands find the well-known credentials under the home directories,
	// and the sockets of agents and daemons, empty (the table is in secrets.go).
	SecretsHidden bool
	PIDNamespace  bool // commands see only their own processes, and die together
	// ProcessLimit names the mechanism that caps the number of processes of one command,
	// e.g. "cgroup v1 pids.max"; empty when none works here.
	ProcessLimit string
	// Why lists what is missing and why, empty when nothing is.
	Why string

	prefix []string // the isolation's argv before the command (bwrap: the flags after the binds)
	cgroup string   // the pids cgroup under which each command gets its own; empty if none
}

// Summary is one line for people: the mode, what it confines, and what it lacks.
func (iso Isolation) Summary() string {
	var has []string
	if iso.NoNetwork {
		has = append(has, "no network")
	} else {
		has = append(has, "network reachable")
	}
	if iso.WriteConfined {
		has = append(has, "writes confined to the workspace copy")
	} else {
		has = append(has, "writes not confined")
	}
	if iso.SecretsHidden {
		has = append(has, "credentials hidden")
	} else {
		has = append(has, "credentials readable")
	}
	if iso.PIDNamespace {
		has = append(has, "own PID namespace")
	}
	if iso.ProcessLimit != "" {
		has = append(has, "process limit by "+iso.ProcessLimit)
	} else {
		has = append(has, "no process limit")
	}
	s := string(iso.Mode) + ": " + strings.Join(has, ", ")
	if iso.Why != "" {
		s += " (" + iso.Why + ")"
	}
	return s
}

// Detect probes, strongest first, how this machine can isolate commands, and which process
// limit works. Each probe really runs `true` inside the isolation, so a tool that is present
// but forbidden (no user namespaces in a container, say) is not mistaken for a working one.
func Detect(ctx context.Context) Isolation {
	iso, _ := detect(ctx, "")
	return iso
}

// detect is Detect, or, when want is set, that mode only (an error if it does not work).
func detect(ctx context.Context, want Mode) (Isolation, error) {
	var why []string
	for _, m := range []Mode{ModeBwrap, ModeUnshare, ModeNone} {
		if want != "" && m != want {
			continue
		}
		prefix, err := probe(ctx, m)
		if err != nil {
			why = append(why, err.Error())
			continue
		}
		iso := Isolation{Mode: m, prefix: prefix, NoNetwork: m != ModeNone, PIDNamespace: m != ModeNone, WriteConfined: m == ModeBwrap, SecretsHidden: m == ModeBwrap}
		switch m {
		case ModeBwrap:
			if !slices.Contains(prefix, "--size") {
				why = append(why, "the private /tmp has no size cap (bubblewrap older than 0.5)")
			}
		case ModeUnshare:
			why = append(why, "writes are not confined to the workspace copy")
			if err := probeMasks(ctx, prefix); err != nil {
				why = append(why, "credentials under the home directories are readable: "+err.Error())
			} else {
				iso.SecretsHidden = true
			}
		case ModeNone:
			why = append(why, "commands can reach the network, write anywhere and read the user's credentials")
		}
		iso.ProcessLimit, iso.cgroup, err = processLimit(iso)
		if err != nil {
			why = append(why, err.Error())
		}
		iso.Why = strings.Join(why, "; ")
		return iso, nil
	}
	return Isolation{Mode: ModeNone, Why: strings.Join(why, "; ")}, fmt.Errorf("sandbox: mode %s does not work here: %s", want, strings.Join(why, "; "))
}

// probe returns the argv prefix of mode m, after checking that it runs `true`.
func probe(ctx context.Context, m Mode) ([]string, error) {
	var candidates [][]string
	switch m {
	case ModeNone:
		return nil, nil
	case ModeBwrap:
		// The private /tmp comes last so that its size can be set per runner (bwrapPrefix);
		// --size needs bubblewrap 0.5 or later, older ones run with an uncapped /tmp.
		// /dev/shm is a tmpfs of its own too (bwrap's is the machine's, writable and half of
		// memory), and /dev is then read-only.
		f := bwrapFlags()
		candidates = [][]string{
			append(slices.Clip(f), "--size", "1048576", "--tmpfs", "/dev/shm", "--remount-ro", "/dev", "--size", "1048576", "--tmpfs", "/tmp"),
			append(slices.Clip(f), "--tmpfs", "/dev/shm", "--remount-ro", "/dev", "--tmpfs", "/tmp"),
		}
	case ModeUnshare:
		// As root no user namespace is needed; otherwise map ourselves to root inside one.
		base := []string{"unshare", "--net", "--pid", "--fork", "--kill-child", "--mount-proc"}
		candidates = [][]string{base, append(base[:len(base):len(base)], "--map-root-user")}
	}
	name := string(m)
	if m == ModeBwrap {
		name = "bubblewrap"
	}
	if _, err := exec.LookPath(candidates[0][0]); err != nil {
		return nil, fmt.Errorf("%s is not installed", name)
	}
	var last error
	for _, c := range candidates {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		probe := exec.CommandContext(pctx, c[0], append(c[1:], "true")...)
		probe.Dir = "/"
		out, err := probe.CombinedOutput()
		cancel()
		if err == nil {
			return c, nil
		}
		last = fmt.Errorf("%s does not work here: %s", name, firstLine(string(out), err.Error()))
	}
	return nil, last
}

// bwrapFlags are bubblewrap's flags besides the binds, which depend on the command.
func bwrapFlags() []string {
	f := []string{"bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
		// No --new-session: Run starts the sandbox in a session of its own already (which is
		// what keeps it off the caller's terminal), and bwrap's init must stay in that
		// process group, so that an empty group means an empty PID namespace.
		"--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent"}
	if os.Geteuid() == 0 {
		// Root keeps its capabilities in the sandbox otherwise, and could just remount / rw.
		f = append(f, "--cap-drop", "ALL")
	} else {
		// Explicit, so that RLIMIT_NPROC counts only the sandbox's processes even with a
		// setuid bwrap; see processLimit.
		f = append(f, "--unshare-user")
	}
	return f
}

// processLimit says how a command's process count can be capped here: a pids cgroup of its
// own when the cgroup file system lets us make one, else RLIMIT_NPROC inside a user
// namespace. RLIMIT_NPROC does not bind root (the kernel exempts the root user), nor a
// namespace mapped to root, and outside a user namespace it would count every process of
// the user, not just the command's.
func processLimit(iso Isolation) (mechanism, cgroup string, err error) {
	cg, kind, cgErr := findPidsCgroup()
	if cgErr == nil {
		return kind + " pids.max", cg, nil
	}
	if os.Geteuid() != 0 && iso.Mode != ModeNone {
		return "RLIMIT_NPROC in a user namespace", "", nil
	}
	why := "no process limit: " + cgErr.Error()
	if os.Geteuid() == 0 {
		why += ", and RLIMIT_NPROC does not bind root"
	} else {
		why += ", and RLIMIT_NPROC without a user namespace would count all of this user's processes"
	}
	return "", "", errors.New(why)
}

func firstLine(s, fallback string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if s == "" {
		return fallback
	}
	return s
}
