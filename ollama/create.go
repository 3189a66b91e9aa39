package ollama

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ollama/ollama/api"
)

// CreateRequest describes a model to register from a local GGUF file.
type CreateRequest struct {
	Name string
	GGUF string // path to the file on this machine
	// Template, or Renderer and Parser, tell Ollama how to build prompts and read replies.
	Template   string
	Renderer   string
	Parser     string
	System     string
	Parameters map[string]any
}

// Progress reports a step of a long operation; Total is 0 when unknown.
type Progress struct {
	Status           string
	Completed, Total int64
}

// Create uploads req.GGUF to the server as a blob (skipped when the server has it) and
// registers a model from it. progress may be nil.
func Create(ctx context.Context, c *api.Client, req CreateRequest, progress func(Progress)) error {
	if progress == nil {
		progress = func(Progress) {}
	}
	if strings.TrimSpace(req.Name) == "" {
		return fmt.Errorf("a model name is required")
	}
	f, err := os.Open(req.GGUF)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := checkGGUFMagic(f); err != nil {
		return fmt.Errorf("%s: %w", req.GGUF, err)
	}
	st, err := f.Stat()
	if err != nil {
		return err
	}

	progress(Progress{Status: "hashing " + filepath.Base(req.GGUF), Total: st.Size()})
	h := sha256.New()
	if _, err := io.Copy(h, &progressReader{r: f, total: st.Size(), status: "hashing", fn: progress}); err != nil {
		return err
	}
	digest := "sha256:" + hex.EncodeToString(h.Sum(nil))
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	progress(Progress{Status: "uploading", Total: st.Size()})
	if err := c.CreateBlob(ctx, digest, &progressReader{r: f, total: st.Size(), status: "uploading", fn: progress}); err != nil {
		return fmt.Errorf("uploading %s to Ollama: %w", req.GGUF, err)
	}

	return c.Create(ctx, &api.CreateRequest{
		Model:      req.Name,
		Files:      map[string]string{"model.gguf": digest},
		Template:   req.Template,
		Renderer:   req.Renderer,
		Parser:     req.Parser,
		System:     req.System,
		Parameters: req.Parameters,
	}, func(r api.ProgressResponse) error {
		progress(Progress{Status: r.Status, Completed: r.Completed, Total: r.Total})
		return nil
	})
}

func checkGGUFMagic(f *os.File) error {
	var magic [4]byte
	if _, err := io.ReadFull(f, magic[:]); err != nil || string(magic[:]) != "GGUF" {
		return fmt.Errorf("not a GGUF file (it does not start with the GGUF magic bytes)")
	}
	_, err := f.Seek(0, io.SeekStart)
	return err
}

// progressReader reports every 1% of a stream read.
type progressReader struct {
	r           io.Reader
	total, done int64
	last        int64
	status      string
	fn          func(Progress)
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.done += int64(n)
	if p.total > 0 && (p.done-p.last)*100 >= p.total || err == io.EOF {
		p.last = p.done
		p.fn(Progress{Status: p.status, Completed: p.done, Total: p.total})
	}
	return n, err
}
