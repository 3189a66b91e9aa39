package sandbox

import (
	"bytes"
	"os"
	"path/filepath"
)

// Unix sockets outside the hidden places (bwrap mode). /run is empty inside, but daemons
// listen elsewhere too: /var/snap/lxd/common/lxd/unix.socket (root for the lxd group),
// /var/lib/mysql/mysql.sock, a tool's socket under /srv. A read-only mount does not stop a
// connect, so before each command every listening path socket of the machine that the
// command could see is masked with the empty file, as the secrets are. Abstract sockets
// (@name) belong to the network namespace, which the command does not share.

// listeningSockets are the masks for the path sockets listening now (/proc/net/unix) that
// exist and that the command could reach: not inside keep (the copy and the writable
// directories, which are the command's own), nor in an invisible place (the hidden roots,
// bwrap's private /tmp, /dev and /proc) unless a bind (binds) brings that part back.
func listeningSockets(unix []byte, keep, invisible, binds []string) []mask {
	var out []mask
	seen := map[string]bool{}
	for len(unix) > 0 {
		line := unix
		if i := bytes.IndexByte(unix, '\n'); i >= 0 {
			line, unix = unix[:i], unix[i+1:]
		} else {
			unix = nil
		}
		// Num: RefCount Protocol Flags Type St Inode Path, the fields before Inode of fixed
		// width; Flags 00010000 is __SO_ACCEPTCON (listening).
		i := bytes.Index(line, []byte(": "))
		if i < 0 || len(line) < i+2+36 {
			continue // the header, or unnamed
		}
		rest := line[i+2:]
		if string(rest[18:26]) != "00010000" {
			continue // not listening
		}
		j := bytes.IndexByte(rest[35:], ' ')
		if j < 0 || len(rest) < 35+j+2 || rest[35+j+1] != '/' {
			continue // unnamed, abstract (@name) or relative
		}
		path := rest[35+j+1:]
		if containedByBytes(path, invisible) && !containedByBytes(path, binds) {
			continue // out of view already: most are in /run
		}
		p := string(path)
		if seen[p] || containedBy(p, keep, false) {
			continue
		}
		seen[p] = true
		real, err := filepath.EvalSymlinks(p) // bwrap mounts on real paths
		if err != nil || containedBy(real, keep, false) || real != p && seen[real] {
			continue // gone, or bound in another mount namespace (a container's)
		}
		if st, err := os.Stat(real); err != nil || st.Mode()&os.ModeSocket == 0 {
			continue // something else at that path now: not masked
		}
		seen[real] = true
		p = real
		out = append(out, mask{path: p})
	}
	return out
}

// containedByBytes is containedBy(string(p), dirs, false) without the string.
func containedByBytes(p []byte, dirs []string) bool {
	for _, d := range dirs {
		if d == "/" || bytes.HasPrefix(p, []byte(d)) && (len(p) == len(d) || p[len(d)] == '/') {
			return true
		}
	}
	return false
}

// procNetUnix is the machine's table of Unix sockets, read per command.
func procNetUnix() []byte {
	b, _ := os.ReadFile("/proc/net/unix")
	return b
}
