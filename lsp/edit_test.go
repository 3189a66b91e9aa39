package lsp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/frognano/frognano/agent/workspace"
	"github.com/frognano/frognano/lsp/document"
)

// buildEdit against hostile change sets (found in review): what the agent changed must
// never make the editor write outside the folder, or lose text the user wrote meanwhile.
func TestBuildEditRefusesHostileChanges(t *testing.T) {
	t.Parallel()
	root, outside := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(root, "del.go"), []byte("user's newer text\n"), 0o644)
	os.WriteFile(filepath.Join(root, "old.go"), []byte("a\nb\nc\nd\ne\nuser\n"), 0o644)
	os.WriteFile(filepath.Join(root, "clash.go"), []byte("user's\n"), 0o644)
	os.Symlink(outside, filepath.Join(root, "shared"))
	os.Symlink("/etc", filepath.Join(root, "etc"))
	caps := clientCaps{documentChanges: true, resourceOps: map[string]bool{"create": true, "rename": true, "delete": true}}
	c := &workspace.Changes{Files: []workspace.FileChange{
		// The agent replaced the user's link by a folder with a file in it.
		{Kind: workspace.Deleted, Path: "shared", BaseMode: workspace.ModeLink, Base: []byte(outside)},
		{Kind: workspace.Created, Path: "shared/authorized_keys", Mode: workspace.ModeFile, Content: []byte("key\n")},
		// A link inside the folder by its text, out through the user's own link.
		{Kind: workspace.Created, Path: "sh", Mode: workspace.ModeLink, Content: []byte("etc/shadow")},
		// Deleting and renaming files the user has changed since.
		{Kind: workspace.Deleted, Path: "del.go", BaseMode: workspace.ModeFile, Base: []byte("base\n")},
		{Kind: workspace.Renamed, OldPath: "old.go", Path: "new.go", BaseMode: workspace.ModeFile, Mode: workspace.ModeFile,
			Base: []byte("a\nb\nc\nd\ne\nf\n"), Content: []byte("A\nb\nc\nd\ne\nf\n")},
		{Kind: workspace.Renamed, OldPath: "clash.go", Path: "clash2.go", BaseMode: workspace.ModeFile, Mode: workspace.ModeFile,
			Base: []byte("base\n"), Content: []byte("agent's\n")},
	}}
	edit, skipped, err := buildEdit(c, nil, document.NewStore(), root, caps, false, "t", "")
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, dc := range edit.DocumentChanges {
		switch x := dc.(type) {
		case *protocol.CreateFile:
			ops = append(ops, "create "+rel(root, x.URI))
		case *protocol.DeleteFile:
			ops = append(ops, "delete "+rel(root, x.URI))
		case *protocol.RenameFile:
			ops = append(ops, "rename "+rel(root, x.OldURI)+" "+rel(root, x.NewURI))
		case *protocol.TextDocumentEdit:
			ops = append(ops, "edit "+rel(root, x.TextDocument.URI))
		}
	}
	if got := strings.Join(ops, ", "); got != "rename old.go new.go, edit new.go" {
		t.Errorf("edit: %s", got)
	}
	all := strings.Join(skipped, "\n")
	for _, want := range []string{
		"shared/authorized_keys: shared is a symbolic link in your folder",
		"sh: a symbolic link to etc/shadow, which goes through the link etc",
		"del.go (you changed it since the agent started; not deleted)",
		"clash.go -> clash2.go (you changed the same lines",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("skipped lacks %q:\n%s", want, all)
		}
	}
	if links := linkChanges(c, root); len(links.Files) != 1 || links.Files[0].Path != "shared" {
		t.Errorf("links the server would apply: %+v", links.Files)
	}
	for _, e := range edit.DocumentChanges {
		if te, ok := e.(*protocol.TextDocumentEdit); ok && rel(root, te.TextDocument.URI) == "new.go" {
			got := applyEdits(t, "a\nb\nc\nd\ne\nuser\n", te)
			if got != "A\nb\nc\nd\ne\nuser\n" {
				t.Errorf("the rename's edit is not rebased on the user's text: %q", got)
			}
		}
	}
}

func rel(root string, u uri.URI) string {
	r, _ := filepath.Rel(root, u.FsPath())
	return filepath.ToSlash(r)
}

// applyEdits applies a text document edit to text, as an editor would.
func applyEdits(t *testing.T, text string, te *protocol.TextDocumentEdit) string {
	t.Helper()
	var edits []document.TextEdit
	for _, e := range te.Edits {
		var r protocol.Range
		var nt string
		switch x := e.(type) {
		case *protocol.TextEdit:
			r, nt = x.Range, x.NewText
		case *protocol.AnnotatedTextEdit:
			r, nt = x.Range, x.NewText
		}
		edits = append(edits, document.TextEdit{Range: document.Range{
			Start: document.Position{Line: r.Start.Line, Character: r.Start.Character},
			End:   document.Position{Line: r.End.Line, Character: r.End.Character}}, NewText: nt})
	}
	out, err := document.Apply(text, edits)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
