package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Mode is how commands are isolated from the machine.
type Mode string

const (
	// ModeBwrap: bubblewrap. No network, own PID namespace, the whole file system read-only
	// except the workspace copy, a private /tmp and the Runner's writable caches; deny by
	// default: the home directories and /run empty but for the allowlist (allow.go), and the
	// credentials of the secrets table hidden elsewhere; as nobody when frognano is root; host
	// mounts made during a command do not reach it.
	ModeBwrap Mode = "bwrap"
	// ModeUnshare: util-linux unshare. No network, an own PID namespace and mount namespace
	// (host mounts do not reach it), and the credentials of the secrets table hidden where
	// setpriv lets it drop capabilities. Nothing more: commands run as the user running
	// frognano (root included, without capabilities), can read everything that user can
	// outside the table (other files in the homes, /run and its sockets: PostgreSQL's,
	// say), and write wherever that user can.
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
	// DenyByDefault: commands find every home directory and /run empty but for what the
	// allowlist binds back read-only (allow.go), so what neither table names stays hidden too.
	DenyByDefault bool
	// UID is the user commands run as, as the machine sees it: nobody (65534) when frognano
	// runs as root under bubblewrap, so that root-owned files stay unreadable; else frognano's.
	UID          int
	PIDNamespace bool // commands see only their own processes, and die together
	// PrivateMounts: what is mounted on the machine while a command runs does not appear in
	// its view (bubblewrap alone would let it: it makes / a slave of the machine's mounts).
	PrivateMounts bool
	// SyscallFilter: a seccomp filter (seccomp.go) denies commands the kernel keyrings
	// (the session keyring frognano was started in), io_uring, bpf, perf_event_open,
	// userfaultfd, kexec and new user namespaces. bubblewrap mode on x86-64 only.
	SyscallFilter bool
	// ProcessLimit names the mechanism that caps the number of processes of one command,
	// e.g. "cgroup v1 pids.max"; empty when none works here.
	ProcessLimit string
	// Why lists what is missing and why, empty when nothing is.
	Why string

	prefix []string // the isolation's argv before the command (bwrap: the flags before the binds)
	drop   []string // bwrap as root: the argv that switches to nobody inside, before the command
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
	switch {
	case iso.DenyByDefault:
		has = append(has, "homes and /run hidden but for the toolchains (allowlist), credentials hidden")
	case iso.SecretsHidden:
		has = append(has, "the listed credentials hidden, the rest of the homes and /run readable")
	default:
		has = append(has, "credentials readable")
	}
	if iso.UID == 0 {
		has = append(has, "runs as root")
	} else if iso.UID == nobody && iso.Mode == ModeBwrap {
		has = append(has, "runs as nobody")
	}
	if iso.PIDNamespace {
		has = append(has, "own PID namespace")
	}
	if iso.PrivateMounts {
		has = append(has, "host mounts kept out")
	}
	if iso.SyscallFilter {
		has = append(has, "keyrings, io_uring, bpf and user namespaces denied")
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
		prefix, drop, private, err := probe(ctx, m)
		if err != nil {
			why = append(why, err.Error())
			continue
		}
		iso := Isolation{Mode: m, prefix: prefix, drop: drop, NoNetwork: m != ModeNone, PIDNamespace: m != ModeNone,
			WriteConfined: m == ModeBwrap, SecretsHidden: m == ModeBwrap, DenyByDefault: m == ModeBwrap,
			UID: os.Geteuid(), PrivateMounts: private || m == ModeUnshare} // unshare(1) makes its mounts private
		if drop != nil {
			iso.UID = nobody
		}
		switch m {
		case ModeBwrap:
			if !slices.Contains(prefix, "--size") {
				why = append(why, "the private /tmp has no size cap (bubblewrap older than 0.5)")
			}
			if iso.UID == 0 {
				why = append(why, "commands run as root (root-owned files outside the tables are readable): setpriv (util-linux) cannot switch to nobody inside bubblewrap, or bubblewrap is older than 0.5")
			}
			if !private {
				why = append(why, "mounts made on the machine during a command appear inside (no private mount namespace: user namespaces are off)")
			}
			if !seccompSupported() {
				why = append(why, "no syscall filter on this architecture (x86-64 only): commands can use the session keyring, io_uring, bpf and user namespaces")
			} else if err := probeSeccomp(ctx, prefix, drop, private); err != nil {
				why = append(why, "no syscall filter (commands can use the session keyring, io_uring, bpf and user namespaces): "+err.Error())
			} else {
				iso.SyscallFilter = true
			}
		case ModeUnshare:
			why = append(why, "writes are not confined to the workspace copy; the homes and /run are readable but for the secrets table, sockets there reachable; no syscall filter (the session keyring, io_uring, bpf and user namespaces are usable)")
			if iso.UID == 0 {
				why = append(why, "commands run as root without capabilities, so root-owned files are readable")
			}
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

// probe returns the argv prefix of mode m (and for bwrap as root the switch to nobody after
// it), after checking that it runs `true`, and whether a private mount namespace around it
// works (privateMounts).
func probe(ctx context.Context, m Mode) (prefix, drop []string, private bool, err error) {
	type candidate struct{ prefix, drop []string }
	var candidates []candidate
	switch m {
	case ModeNone:
		return nil, nil, false, nil
	case ModeBwrap:
		// The private /tmp comes last so that its size can be set per runner (bwrapPrefix);
		// --size and --perms need bubblewrap 0.5 or later, older ones run with an uncapped
		// /tmp. /dev/shm is a tmpfs of its own too (bwrap's is the machine's, writable and
		// half of memory), and /dev is then read-only. As root, commands run as nobody, who
		// needs /tmp and /dev/shm world-writable (sticky, as usual).
		root := os.Geteuid() == 0
		if root {
			if _, err := exec.LookPath(setprivArgs[0]); err == nil {
				candidates = append(candidates, candidate{append(bwrapFlags(true), "--size", "1048576", "--perms", "1777", "--tmpfs", "/dev/shm",
					"--remount-ro", "/dev", "--size", "1048576", "--perms", "1777", "--tmpfs", "/tmp"), setprivArgs})
			}
		}
		f := bwrapFlags(false)
		candidates = append(candidates,
			candidate{append(slices.Clip(f), "--size", "1048576", "--tmpfs", "/dev/shm", "--remount-ro", "/dev", "--size", "1048576", "--tmpfs", "/tmp"), nil},
			candidate{append(slices.Clip(f), "--tmpfs", "/dev/shm", "--remount-ro", "/dev", "--tmpfs", "/tmp"), nil})
	case ModeUnshare:
		// As root no user namespace is needed; otherwise map ourselves to root inside one.
		base := []string{"unshare", "--net", "--pid", "--fork", "--kill-child", "--mount-proc"}
		candidates = []candidate{{base, nil}, {append(base[:len(base):len(base)], "--map-root-user"), nil}}
	}
	name := string(m)
	if m == ModeBwrap {
		name = "bubblewrap"
	}
	if _, err := exec.LookPath(candidates[len(candidates)-1].prefix[0]); err != nil {
		return nil, nil, false, fmt.Errorf("%s is not installed", name)
	}
	var last error
	for _, c := range candidates {
		// Private mounts are tried first, with the sandbox itself: they need a user
		// namespace unless we are root.
		for _, private := range []bool{m == ModeBwrap, false} {
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			argv := append(append(slices.Clip(c.prefix), c.drop...), "true")
			probe := exec.CommandContext(pctx, argv[0], argv[1:]...)
			probe.Dir = "/"
			probe.SysProcAttr = privateMounts(private)
			out, err := probe.CombinedOutput()
			cancel()
			if err == nil {
				return c.prefix, c.drop, private, nil
			}
			last = fmt.Errorf("%s does not work here: %s", name, firstLine(string(out), err.Error()))
			if !private {
				break
			}
		}
	}
	return nil, nil, false, last
}

// privateMounts is how a command is started so that nothing mounted on the machine later
// reaches it: in a mount namespace of its own whose mounts are all private (Go makes them
// so after unsharing), a user namespace first when we are not root. bubblewrap's namespace
// inside is a slave of this one, which receives nothing. With private false, only what every
// command gets: a session of its own (one process group to kill, no terminal to inject
// keystrokes into) and SIGKILL when frognano dies.
func privateMounts(private bool) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	if !private {
		return a
	}
	a.Unshareflags = syscall.CLONE_NEWNS
	if uid, gid := os.Getuid(), os.Getgid(); uid != 0 {
		a.Unshareflags |= syscall.CLONE_NEWUSER
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
	}
	return a
}

// bwrapFlags are bubblewrap's flags besides the binds, which depend on the command. drop
// (as root) keeps the capabilities setpriv needs to switch to nobody inside.
func bwrapFlags(drop bool) []string {
	f := []string{"bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
		// No --new-session: Run starts the sandbox in a session of its own already (which is
		// what keeps it off the caller's terminal), and bwrap's init must stay in that
		// process group, so that an empty group means an empty PID namespace.
		"--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent"}
	if os.Geteuid() == 0 {
		// Root keeps its capabilities in the sandbox otherwise, and could just remount / rw.
		f = append(f, "--cap-drop", "ALL")
		if drop {
			f = append(f, "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP")
		}
	} else {
		// Explicit, so that RLIMIT_NPROC counts only the sandbox's processes even with a
		// setuid bwrap; see processLimit.
		f = append(f, "--unshare-user")
		if disableUserns() {
			// No namespaces of its own inside ours (the syscall filter denies them too).
			f = append(f, "--disable-userns")
		}
	}
	return f
}

// disableUserns reports whether this bubblewrap can stop commands from making user
// namespaces (--disable-userns, bubblewrap 0.8+, not when setuid).
func disableUserns() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return exec.CommandContext(ctx, "bwrap", "--unshare-user", "--disable-userns", "--ro-bind", "/", "/", "true").Run() == nil
}

// probeSeccomp checks that bubblewrap runs a command under the syscall filter.
func probeSeccomp(ctx context.Context, prefix, drop []string, private bool) error {
	f, err := seccompFile()
	if err != nil {
		return err
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	argv := append(append(append(slices.Clip(prefix), "--seccomp", seccompFD), drop...), "true")
	probe := exec.CommandContext(ctx, argv[0], argv[1:]...)
	probe.Dir = "/"
	probe.SysProcAttr = privateMounts(private)
	probe.ExtraFiles = []*os.File{f}
	if out, err := probe.CombinedOutput(); err != nil {
		return fmt.Errorf("bubblewrap --seccomp does not work here: %s", firstLine(string(out), err.Error()))
	}
	return nil
}

// processLimit says how a command's process count can be capped here: a pids cgroup of its
// own when the cgroup file system lets us make one, else RLIMIT_NPROC inside a user
// namespace. RLIMIT_NPROC does not bind root (the kernel exempts the root user), nor a
// namespace mapped to root, and outside a user namespace it would count every process of
// the user, not just the command's.
// findPids is findPidsCgroup; tests replace it to try a machine without one.
var findPids = findPidsCgroup

func processLimit(iso Isolation) (mechanism, cgroup string, err error) {
	cg, kind, cgErr := findPids()
	if cgErr == nil {
		return kind + " pids.max", cg, nil
	}
	if os.Geteuid() != 0 && iso.Mode != ModeNone {
		return "RLIMIT_NPROC in a user namespace", "", nil
	}
	if iso.UID == nobody {
		// Root switches commands to nobody before the limits are set, and RLIMIT_NPROC binds
		// nobody. It counts every process of that uid on the machine, concurrent commands and
		// other services running as nobody included: a blunter cap, but a cap.
		return "RLIMIT_NPROC of uid nobody (counts all of nobody's processes)", "", nil
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
