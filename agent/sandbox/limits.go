package sandbox

import (
	"strconv"
	"time"
)

// Limits bound what one command may consume.
type Limits struct {
	CPU time.Duration // RLIMIT_CPU of each process
	// Memory is RLIMIT_AS, bytes of address space of each process; 0 means unlimited.
	// Address space is not memory in use: the race detector and CUDA reserve terabytes of
	// it, so `go test -race` needs Memory 0.
	Memory    int64
	FileSize  int64 // RLIMIT_FSIZE: the largest file a command may write
	Processes int   // live processes (and threads) of one command, all together
	// Output is how many bytes of stdout, and of stderr, are kept; the rest is counted and
	// dropped. Whatever the cap, a command that prints more than 64 MiB in all is killed.
	Output int
	// Tmp is the size of the command's private /tmp, and of its /dev/shm, each a tmpfs in
	// memory (under bubblewrap 0.5+), shared by its processes.
	Tmp int64
}

// DefaultLimits is what a Runner applies when Options.Limits is nil.
func DefaultLimits() Limits {
	return Limits{CPU: 10 * time.Minute, Memory: 8 << 30, FileSize: 1 << 30, Processes: 512, Output: 1 << 20, Tmp: 2 << 30}
}

// withDefaults fills the zero fields that have no meaning of their own (Memory 0 does).
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.CPU <= 0 {
		l.CPU = d.CPU
	}
	if l.FileSize <= 0 {
		l.FileSize = d.FileSize
	}
	if l.Processes <= 0 {
		l.Processes = d.Processes
	}
	if l.Output <= 0 {
		l.Output = d.Output
	}
	if l.Tmp <= 0 {
		l.Tmp = d.Tmp
	}
	return l
}

// ulimit is the shell (dash or bash) that applies the per-process limits but the process
// count to the shell itself, whose children inherit them. As root it may raise a hard limit.
// dash counts file sizes in 512-byte blocks and address space in KiB: rounded down.
func (l Limits) ulimit() string {
	secs := int64((l.CPU + time.Second - 1) / time.Second)
	s := "ulimit -t " + strconv.FormatInt(secs, 10) + " && ulimit -f " + strconv.FormatInt(l.FileSize/512, 10)
	if l.Memory > 0 {
		s += " && ulimit -v " + strconv.FormatInt(l.Memory/1024, 10)
	}
	return s
}

// prlimit is the argv prefix that applies the per-process limits; nproc adds RLIMIT_NPROC,
// which only works inside a user namespace (see processLimit). It runs inside the isolation,
// after any user namespace is made: the kernel records the creator's RLIMIT_NPROC as a cap
// for the whole namespace, which would otherwise count every process of the user outside.
func (l Limits) prlimit(nproc bool) []string {
	secs := int64((l.CPU + time.Second - 1) / time.Second)
	a := []string{"prlimit", "--cpu=" + strconv.FormatInt(secs, 10), "--fsize=" + strconv.FormatInt(l.FileSize, 10)}
	if l.Memory > 0 {
		a = append(a, "--as="+strconv.FormatInt(l.Memory, 10))
	}
	if nproc {
		a = append(a, "--nproc="+strconv.Itoa(l.Processes))
	}
	return append(a, "--")
}
