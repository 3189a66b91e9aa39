package sandbox

import (
	"encoding/binary"
	"os"
	"runtime"
)

// The syscall filter (bwrap mode, x86-64). Namespaces and mounts do not cover the kernel's
// own shared state: the session keyring is inherited (Kerberos tickets, ecryptfs and systemd
// cached passwords live there), and io_uring, bpf, perf_event_open, userfaultfd and new user
// namespaces are where most kernel exploits start. bwrap loads the filter (--seccomp FD)
// just before it runs the command, after its own set-up, which needs clone and unshare; the
// filter is inherited by everything the command starts and cannot be removed.
//
// A classic BPF program over struct seccomp_data {int nr; u32 arch; u64 ip; u64 args[6]}:
// another architecture (i386 through int 0x80) kills the process, an x32 system call fails.

// O_TMPFILE makes a file in no folder that linkat(AT_EMPTY_PATH) can later give a name: held
// only by a descriptor in flight in a Unix socket, such a file hid from every look of the
// disk guard and was linked back in once forgiven (found in review). open and openat with
// it fail with EOPNOTSUPP, on which programs fall back to a named temporary file (glibc's
// tmpfile does); openat2, whose flags lie in memory, fails with ENOSYS, on which its callers
// (Go's os.Root) fall back to openat.

// fallocate takes gigabytes of disk in a few milliseconds, faster than the disk guard looks
// (every 50 ms) and so past the budget and the floor, and the files stay (found in review:
// 3 GiB in two commands against a 64 MiB budget). Every mode of it that allocates fails
// with EOPNOTSUPP, on which programs fall back to writing (glibc's posix_fallocate, Go's
// linker), at a pace the guard sees; punching holes and collapsing ranges, which free
// space, still work. The ioctls that reach the same allocation through any file system
// (FS_IOC_RESVSP, FS_IOC_RESVSP64, FS_IOC_ZERO_RANGE: 10 MiB of blocks each, tried on ext4)
// fail the same way.

// x86-64 system call numbers (arch/x86/entry/syscalls/syscall_64.tbl), written out so that
// the filter is the same whatever GOARCH frognano was built for.
const (
	sysOpen            = 2
	sysIoctl           = 16
	sysClone           = 56
	sysKexecLoad       = 246
	sysAddKey          = 248
	sysRequestKey      = 249
	sysKeyctl          = 250
	sysUnshare         = 272
	sysPerfEventOpen   = 298
	sysKexecFileLoad   = 320
	sysBPF             = 321
	sysUserfaultfd     = 323
	sysIOUringSetup    = 425
	sysIOUringEnter    = 426
	sysIOUringRegister = 427
	sysOpenat          = 257
	sysFallocate       = 285
	sysClone3          = 435
	sysOpenat2         = 437
)

const (
	auditArchX86_64 = 0xc000003e // AUDIT_ARCH_X86_64
	x32SyscallBit   = 0x40000000
	cloneNewUser    = 0x10000000  // CLONE_NEWUSER
	oTmpfileBit     = 0x400000    // __O_TMPFILE (O_TMPFILE is it with O_DIRECTORY)
	fallocFrees     = 0x02 | 0x08 // FALLOC_FL_PUNCH_HOLE, FALLOC_FL_COLLAPSE_RANGE

	errEPERM      = 1
	errENOSYS     = 38
	errEOPNOTSUPP = 95

	// BPF instruction classes and modes (linux/filter.h).
	bpfLD, bpfW, bpfABS    = 0x00, 0x00, 0x20
	bpfJMP, bpfJEQ, bpfJGE = 0x05, 0x10, 0x30
	bpfJSET, bpfK, bpfRET  = 0x40, 0x00, 0x06
	retKillProcess         = 0x80000000 // SECCOMP_RET_KILL_PROCESS
	retErrno               = 0x00050000 // SECCOMP_RET_ERRNO | errno
	retAllow               = 0x7fff0000 // SECCOMP_RET_ALLOW
	seccompDataArch        = 4
	seccompDataNr          = 0
	seccompDataArg0        = 16 // low 32 bits on little-endian x86-64
	seccompDataArg1        = 24
	seccompDataArg2        = 32
)

// deniedSyscalls fail with their errno: ENOSYS where programs fall back (glibc retries clone3
// as clone; io_uring users fall back to threads), EPERM otherwise.
var deniedSyscalls = []struct {
	nr, errno uint32
}{
	{sysKeyctl, errEPERM}, {sysAddKey, errEPERM}, {sysRequestKey, errEPERM},
	{sysIOUringSetup, errENOSYS}, {sysIOUringEnter, errENOSYS}, {sysIOUringRegister, errENOSYS},
	{sysBPF, errEPERM}, {sysPerfEventOpen, errEPERM}, {sysUserfaultfd, errEPERM},
	{sysKexecLoad, errEPERM}, {sysKexecFileLoad, errEPERM},
	{sysClone3, errENOSYS}, // its flags lie in memory, which the filter cannot read
	{sysOpenat2, errENOSYS},
}

// preallocIoctls are FS_IOC_RESVSP, FS_IOC_RESVSP64 and FS_IOC_ZERO_RANGE: _IOW('X', 40, 42
// and 57, struct space_resv), 48 bytes on x86-64.
var preallocIoctls = []uint32{0x40305828, 0x4030582a, 0x40305839}

// seccompSupported says whether this machine gets the filter: x86-64 only.
func seccompSupported() bool { return runtime.GOARCH == "amd64" }

type sockFilter struct {
	code   uint16
	jt, jf uint8
	k      uint32
}

func stmt(code uint16, k uint32) sockFilter { return sockFilter{code: code, k: k} }
func jump(code uint16, k uint32, jt, jf uint8) sockFilter {
	return sockFilter{code: code, jt: jt, jf: jf, k: k}
}

// seccompProgram is the filter, as bwrap reads it: struct sock_filter after struct
// sock_filter, in the machine's byte order.
func seccompProgram() []byte {
	var p []sockFilter
	p = append(p,
		stmt(bpfLD|bpfW|bpfABS, seccompDataArch),
		jump(bpfJMP|bpfJEQ|bpfK, auditArchX86_64, 1, 0),
		stmt(bpfRET|bpfK, retKillProcess),
		stmt(bpfLD|bpfW|bpfABS, seccompDataNr),
		jump(bpfJMP|bpfJGE|bpfK, x32SyscallBit, 0, 1),
		stmt(bpfRET|bpfK, retErrno|errEPERM),
	)
	// Each denied call: if nr == it, return its errno, else skip that return.
	for _, d := range deniedSyscalls {
		p = append(p, jump(bpfJMP|bpfJEQ|bpfK, d.nr, 0, 1), stmt(bpfRET|bpfK, retErrno|d.errno))
	}
	// open (flags in its second argument) and openat (third): O_TMPFILE fails. Each block
	// leaves the call's number loaded again for the next.
	for _, o := range []struct{ nr, flags uint32 }{{sysOpen, seccompDataArg1}, {sysOpenat, seccompDataArg2}} {
		p = append(p,
			jump(bpfJMP|bpfJEQ|bpfK, o.nr, 0, 3),
			stmt(bpfLD|bpfW|bpfABS, o.flags),
			jump(bpfJMP|bpfJSET|bpfK, oTmpfileBit, 0, 1),
			stmt(bpfRET|bpfK, retErrno|errEOPNOTSUPP),
			stmt(bpfLD|bpfW|bpfABS, seccompDataNr),
		)
	}
	// fallocate (mode in its second argument): only the modes that free space pass.
	p = append(p,
		jump(bpfJMP|bpfJEQ|bpfK, sysFallocate, 0, 4),
		stmt(bpfLD|bpfW|bpfABS, seccompDataArg1),
		jump(bpfJMP|bpfJSET|bpfK, fallocFrees, 1, 0),
		stmt(bpfRET|bpfK, retErrno|errEOPNOTSUPP),
		stmt(bpfLD|bpfW|bpfABS, seccompDataNr),
	)
	// ioctl (command in its second argument): the preallocating ones fail.
	p = append(p,
		jump(bpfJMP|bpfJEQ|bpfK, sysIoctl, 0, uint8(2*len(preallocIoctls)+1)),
		stmt(bpfLD|bpfW|bpfABS, seccompDataArg1),
	)
	for _, cmd := range preallocIoctls {
		p = append(p, jump(bpfJMP|bpfJEQ|bpfK, cmd, 0, 1), stmt(bpfRET|bpfK, retErrno|errEOPNOTSUPP))
	}
	p = append(p, stmt(bpfLD|bpfW|bpfABS, seccompDataNr))
	// unshare and clone: their first argument is the flags; CLONE_NEWUSER fails.
	p = append(p,
		jump(bpfJMP|bpfJEQ|bpfK, sysUnshare, 1, 0),
		jump(bpfJMP|bpfJEQ|bpfK, sysClone, 0, 3),
		stmt(bpfLD|bpfW|bpfABS, seccompDataArg0),
		jump(bpfJMP|bpfJSET|bpfK, cloneNewUser, 0, 1),
		stmt(bpfRET|bpfK, retErrno|errEPERM),
		stmt(bpfRET|bpfK, retAllow),
	)
	out := make([]byte, 0, 8*len(p))
	for _, f := range p {
		out = binary.NativeEndian.AppendUint16(out, f.code)
		out = append(out, f.jt, f.jf)
		out = binary.NativeEndian.AppendUint32(out, f.k)
	}
	return out
}

// seccompFile is a pipe's read end holding the filter, for one bwrap (which reads it whole
// and closes it): the caller closes it once the command has started.
func seccompFile() (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer w.Close()
	if _, err := w.Write(seccompProgram()); err != nil { // well under a pipe's buffer
		r.Close()
		return nil, err
	}
	return r, nil
}

// seccompFD is the descriptor bwrap finds the filter at: the first of exec.Cmd.ExtraFiles.
const seccompFD = "3"
