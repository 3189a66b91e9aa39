package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/frognano/frognano/agent/workspace"
	"github.com/frognano/frognano/watch"
)

// resolve maps a file argument into the copy, turning refusals into errors for the model.
func (e *episode) resolve(p string, forWrite bool) (string, error) {
	abs, err := e.ws.Resolve(p, forWrite)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", callErr("%s does not exist", p)
		}
		return "", callErr("refused: %v", err)
	}
	return abs, nil
}

// notRegular refuses a FIFO, socket or device: opening a FIFO a command left in the copy
// would block frognano itself, not the command.
func notRegular(p string) error {
	return callErr("%s is not a regular file (a FIFO, socket or device); use Bash to work with it", p)
}

// maxToolFile is the largest file Read and Edit handle. They run in frognano, not in the
// sandbox, and splitting a file into lines costs many times its size in memory: a command
// could otherwise write a file at its 1 GiB size cap and have Read take the machine's memory.
const maxToolFile = workspace.MaxFileSize

func tooLarge(p string, size int64) error {
	return callErr("%s is %.1f MiB, more than the %d MiB Read and Edit handle; work on parts of it with Bash (sed -n '100,200p', head, grep)", p, float64(size)/(1<<20), maxToolFile>>20)
}

func runRead(_ context.Context, e *episode, a args) (string, error) {
	p, err := e.resolve(a.str("file_path"), false)
	if err != nil {
		return "", err
	}
	st, err := os.Stat(p)
	if err != nil {
		return "", callErr("%s: %v", a.str("file_path"), err)
	}
	if st.IsDir() {
		return "", callErr("%s is a folder; use Glob or Bash (ls) to list it", a.str("file_path"))
	}
	if !st.Mode().IsRegular() {
		return "", notRegular(a.str("file_path"))
	}
	if st.Size() > maxToolFile {
		return "", tooLarge(a.str("file_path"), st.Size())
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "", callErr("%v", err)
	}
	if !utf8.Valid(b) || bytes.IndexByte(b, 0) >= 0 {
		return fmt.Sprintf("(%s is a binary file of %d bytes; not shown)", a.str("file_path"), len(b)), nil
	}
	if len(b) == 0 {
		return "(empty file)", nil
	}
	lines := strings.SplitAfter(string(b), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	offset := 1
	if a.has("offset") {
		offset = a.integer("offset")
	}
	if offset < 1 {
		return "", callErr("offset is 1-based; got %d", offset)
	}
	if offset > len(lines) {
		return "", callErr("offset %d is past the end: the file has %d lines", offset, len(lines))
	}
	limit := readDefaultLimit
	if a.has("limit") {
		limit = a.integer("limit")
		if limit < 1 {
			return "", callErr("limit must be at least 1; got %d", limit)
		}
	}
	var sb strings.Builder
	last := offset - 1
	for i := offset - 1; i < len(lines) && i < offset-1+limit; i++ {
		line := fmt.Sprintf("%d. %s", i+1, strings.TrimRight(lines[i], "\r\n"))
		if sb.Len()+len(line)+1 > readCap {
			break
		}
		sb.WriteString(line)
		sb.WriteByte('\n')
		last = i + 1
	}
	if last < len(lines) {
		fmt.Fprintf(&sb, "(showing lines %d-%d of %d; read on with offset=%d)\n", offset, last, len(lines), last+1)
	}
	return sb.String(), nil
}

func runWrite(_ context.Context, e *episode, a args) (string, error) {
	p, err := e.resolve(a.str("file_path"), true)
	if err != nil {
		return "", err
	}
	if st, err := os.Stat(p); err == nil && st.IsDir() {
		return "", callErr("%s is a folder", a.str("file_path"))
	} else if err == nil && !st.Mode().IsRegular() {
		return "", notRegular(a.str("file_path"))
	}
	made := firstMissing(p)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", callErr("%v", err)
	}
	content := a.str("content")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		return "", callErr("%v", err)
	}
	if err := e.runner.Adopt(made); err != nil {
		return "", err // the sandbox failed: commands could not change the file
	}
	return fmt.Sprintf("Wrote %d bytes to %s", len(content), e.ws.Rel(p)), nil
}

// firstMissing is the top-most path from p upwards that does not exist yet (p itself when
// its folder exists): what writing p creates, to be handed to the commands' user.
func firstMissing(p string) string {
	top := p
	for d := filepath.Dir(p); d != top; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		}
		top = d
	}
	return top
}

func runEdit(_ context.Context, e *episode, a args) (string, error) {
	p, err := e.resolve(a.str("file_path"), false)
	if err != nil {
		return "", err
	}
	old, repl := a.str("old_string"), a.str("new_string")
	if old == "" {
		return "", callErr("old_string is empty; to create or replace a whole file use Write")
	}
	if old == repl {
		return "", callErr("old_string and new_string are the same; nothing to change")
	}
	if st, err := os.Stat(p); err == nil && !st.Mode().IsRegular() {
		return "", notRegular(a.str("file_path"))
	} else if err == nil && st.Size() > maxToolFile {
		return "", tooLarge(a.str("file_path"), st.Size())
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "", callErr("%v", err)
	}
	text := string(b)
	n := strings.Count(text, old)
	switch {
	case n == 0:
		return "", callErr("old_string was not found in %s; Read the file and copy the text exactly, including whitespace", a.str("file_path"))
	case n > 1 && !a.boolean("replace_all"):
		return "", callErr("old_string matches %d places in %s; include more surrounding lines to make it unique, or set replace_all to true", n, a.str("file_path"))
	}
	if grown := int64(len(text)) + int64(n)*int64(len(repl)-len(old)); a.boolean("replace_all") && grown > maxToolFile {
		return "", tooLarge(a.str("file_path")+" after the edit", grown)
	}
	if a.boolean("replace_all") {
		text = strings.ReplaceAll(text, old, repl)
	} else {
		text = strings.Replace(text, old, repl, 1)
	}
	st, _ := os.Stat(p)
	if err := os.WriteFile(p, []byte(text), st.Mode().Perm()); err != nil {
		return "", callErr("%v", err)
	}
	return fmt.Sprintf("Edited %s: replaced %d occurrence(s)", e.ws.Rel(p), map[bool]int{true: n, false: 1}[a.boolean("replace_all")]), nil
}

// runGlob lists the files matching a pattern the way the harness the model was trained in
// did: doublestar patterns (`**`, `{ts,tsx}`, classes), relative to path (default: the
// copy's root), without what git ignores and without installed packages and caches
// (watch.DefaultSkip) unless the pattern names them, sorted, the first globCap shown and
// the rest counted.
func runGlob(ctx context.Context, e *episode, a args) (string, error) {
	base := e.ws.Root
	if a.str("path") != "" {
		p, err := e.resolve(a.str("path"), false)
		if err != nil {
			return "", err
		}
		base = p
	}
	pattern := strings.TrimPrefix(filepath.ToSlash(a.str("pattern")), "./")
	if !doublestar.ValidatePattern(pattern) {
		return "", callErr("bad pattern %q: check its brackets and braces", pattern)
	}
	skip := map[string]bool{".git": true}
	for _, d := range watch.DefaultSkip {
		if !strings.Contains(pattern, d) {
			skip[d] = true
		}
	}
	ignored := map[string]bool{}
	if list, err := e.ws.Ignored(ctx); err == nil { // without it, nothing is left out
		for _, p := range list {
			ignored[strings.TrimSuffix(p, "/")] = true
		}
	}
	var matches []string
	more := 0
	err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable corners are skipped, not fatal
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		rel := e.ws.Rel(p)
		if p != base && (ignored[rel] && !strings.Contains(pattern, d.Name()) || d.IsDir() && skip[d.Name()]) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		r, _ := filepath.Rel(base, p)
		if ok, _ := doublestar.Match(pattern, filepath.ToSlash(r)); ok {
			if len(matches) < maxGlobCollect {
				matches = append(matches, rel)
			} else {
				more++
			}
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if len(matches) == 0 {
		return "No files match " + pattern, nil
	}
	sort.Strings(matches) // before capping: walk order would let one big folder crowd out the rest
	if len(matches) > globCap {
		more += len(matches) - globCap
		matches = matches[:globCap]
	}
	out := strings.Join(matches, "\n") + "\n"
	if more > 0 {
		out += fmt.Sprintf("(capped at %d files: %d more match; narrow the pattern or the path)\n", globCap, more)
	}
	return out, nil
}

// maxGlobCollect bounds the matches held for sorting; beyond it they are only counted.
const maxGlobCollect = 100 * globCap
