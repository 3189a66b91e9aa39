package gocache

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The GOCACHEPROG protocol (Go 1.24+, cmd/go/internal/cacheprog): the go command starts the
// helper and talks JSON to it over its stdin and stdout. The helper first announces the
// commands it knows; then each request gets one response with the same ID. A put's body
// follows its request as a JSON string of base64 on the next line.

type request struct {
	ID       int64
	Command  string
	ActionID []byte `json:",omitempty"`
	OutputID []byte `json:",omitempty"`
	BodySize int64  `json:",omitempty"`
}

type response struct {
	ID            int64
	Err           string     `json:",omitempty"`
	KnownCommands []string   `json:",omitempty"`
	Miss          bool       `json:",omitempty"`
	OutputID      []byte     `json:",omitempty"`
	Size          int64      `json:",omitempty"`
	Time          *time.Time `json:",omitempty"`
	DiskPath      string     `json:",omitempty"`
}

// Serve answers the go command on r and w until it says close or r ends, reading l's
// layers (trusted first) and writing only to l.Scratch.
func Serve(r io.Reader, w io.Writer, l Layers) error {
	if l.Scratch == "" {
		return errors.New("gocache: no scratch layer")
	}
	dec := json.NewDecoder(bufio.NewReaderSize(r, 1<<16))
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	send := func(res response) error {
		if err := enc.Encode(res); err != nil {
			return err
		}
		return bw.Flush()
	}
	if err := send(response{KnownCommands: []string{"get", "put", "close"}}); err != nil {
		return err
	}
	for {
		var req request
		if err := dec.Decode(&req); err != nil {
			if err == io.EOF {
				return nil
			}
			return fmt.Errorf("gocache: reading a request: %w", err)
		}
		var res response
		switch req.Command {
		case "get":
			res = l.get(req.ActionID)
		case "put":
			var body []byte
			if req.BodySize > 0 {
				if err := dec.Decode(&body); err != nil {
					return fmt.Errorf("gocache: reading a body: %w", err)
				}
			}
			res = l.put(req, body)
		case "close":
			res = response{}
		default:
			res = response{Err: "unknown command " + strconv.Quote(req.Command)}
		}
		res.ID = req.ID
		if err := send(res); err != nil {
			return err
		}
		if req.Command == "close" {
			return nil
		}
	}
}

// A layer is a folder of two kinds of files, named by the hex of their ID with the first
// two digits as a subfolder, as in Go's own cache:
//
//	a/XX/ACTIONID   "OUTPUTID SIZE UNIXNANO\n"
//	o/XX/OUTPUTID   the body
//
// Both are written to a temporary name and renamed, so a reader sees whole files only.

func entryPath(layer, kind string, id []byte) string {
	h := hex.EncodeToString(id)
	return filepath.Join(layer, kind, h[:2], h)
}

// get looks the action up in the trusted layer, then in the scratch one. An entry whose
// body is missing or of another size is a miss.
func (l Layers) get(action []byte) response {
	if len(action) == 0 {
		return response{Err: "get without an action ID"}
	}
	for _, layer := range []string{l.Trusted, l.Scratch} {
		if layer == "" {
			continue
		}
		b, err := os.ReadFile(entryPath(layer, "a", action))
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) != 3 {
			continue
		}
		out, err1 := hex.DecodeString(f[0])
		size, err2 := strconv.ParseInt(f[1], 10, 64)
		nano, err3 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || len(out) == 0 {
			continue
		}
		p := entryPath(layer, "o", out)
		st, err := os.Stat(p)
		if err != nil || !st.Mode().IsRegular() || st.Size() != size {
			continue
		}
		t := time.Unix(0, nano)
		return response{OutputID: out, Size: size, Time: &t, DiskPath: p}
	}
	return response{Miss: true}
}

// put writes the body and then the action entry into the scratch layer.
func (l Layers) put(req request, body []byte) response {
	if len(req.ActionID) == 0 || len(req.OutputID) == 0 {
		return response{Err: "put without an action or output ID"}
	}
	if int64(len(body)) != req.BodySize {
		return response{Err: fmt.Sprintf("put: body of %d bytes, announced %d", len(body), req.BodySize)}
	}
	p := entryPath(l.Scratch, "o", req.OutputID)
	if err := writeFile(p, body); err != nil {
		return response{Err: err.Error()}
	}
	line := fmt.Sprintf("%x %d %d\n", req.OutputID, len(body), time.Now().UnixNano())
	if err := writeFile(entryPath(l.Scratch, "a", req.ActionID), []byte(line)); err != nil {
		return response{Err: err.Error()}
	}
	return response{DiskPath: p}
}

// writeFile writes b to p through a temporary file in the same folder and a rename.
func writeFile(p string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
