package lsp

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/frognano/frognano/agent/workspace"
	"github.com/frognano/frognano/lsp/document"
)

const annotationID = "frognano"

// buildEdit turns the agent's file changes into one WorkspaceEdit.
//
// Text edits are computed against what each file holds now: the open buffer (versioned, so
// a client rejects the edit if the buffer moves on before it applies) or the file on disk.
// If the user changed the file while the agent ran, the agent's change is re-based onto
// the user's when the two touch different lines, and left out (named in skipped) when
// they overlap: never a corrupted file.
func buildEdit(c *workspace.Changes, base map[string]document.Snapshot, docs *document.Store, root string,
	caps clientCaps, preview bool, title, answer string) (*protocol.WorkspaceEdit, []string, error) {
	annotate := caps.annotations && preview
	var ann protocol.ChangeAnnotationIdentifier
	edit := &protocol.WorkspaceEdit{}
	if annotate {
		ann = annotationID
		desc := answer
		edit.ChangeAnnotations = map[protocol.ChangeAnnotationIdentifier]protocol.ChangeAnnotation{
			ann: {Label: "FrogNano: " + title, NeedsConfirmation: ptr(true), Description: &desc},
		}
	}
	var skipped []string
	var needs []string
	for _, s := range c.Skipped {
		skipped = append(skipped, s.Path+" ("+s.Why+")")
	}
	for _, f := range c.Files {
		u := uri.File(filepath.Join(root, filepath.FromSlash(f.Path)))
		// Every path must lead through real folders of the user's: an editor follows a link
		// on the way, and nothing removes a link before the edit (links are the server's).
		if err := checkPaths(root, f); err != nil {
			skipped = append(skipped, err.Error())
			continue
		}
		if touchesLink(f) {
			if err := linkAllowed(root, f); err != nil {
				skipped = append(skipped, err.Error())
			}
			continue // not expressible in a WorkspaceEdit: see linkChanges
		}
		switch f.Kind {
		case workspace.Modified:
			du, version, current, err := currentText(docs, u, f.Path, root)
			if err != nil {
				skipped = append(skipped, fmt.Sprintf("%s (%v)", f.Path, err))
				continue
			}
			target, err := rebase(string(f.Base), current, string(f.Content))
			if err != nil {
				skipped = append(skipped, f.Path+" ("+err.Error()+")")
				continue
			}
			if !caps.documentChanges {
				if edit.Changes == nil {
					edit.Changes = map[uri.URI][]protocol.TextEdit{}
				}
				for _, e := range document.Edits(current, target) {
					edit.Changes[du] = append(edit.Changes[du], protocol.TextEdit{Range: toRange(e.Range), NewText: e.NewText})
				}
				continue
			}
			edit.DocumentChanges = append(edit.DocumentChanges, textEdit(du, version, current, target, ann))
		case workspace.Created:
			needs = append(needs, "create")
			if _, err := os.Lstat(u.FsPath()); err == nil {
				skipped = append(skipped, f.Path+" (it now exists)")
				continue
			}
			edit.DocumentChanges = append(edit.DocumentChanges,
				&protocol.CreateFile{Kind: "create", URI: u, ResourceOperation: protocol.ResourceOperation{Kind: "create", AnnotationID: ann},
					Options: &protocol.CreateFileOptions{Overwrite: ptr(false), IgnoreIfExists: ptr(false)}},
				textEdit(u, nil, "", string(f.Content), ann))
		case workspace.Deleted:
			// Only what the agent saw is deleted: the user's newer text is never lost.
			if _, _, current, err := currentText(docs, u, f.Path, root); err != nil || current != string(f.Base) {
				skipped = append(skipped, f.Path+" (you changed it since the agent started; not deleted)")
				continue
			}
			needs = append(needs, "delete")
			edit.DocumentChanges = append(edit.DocumentChanges,
				&protocol.DeleteFile{Kind: "delete", URI: u, ResourceOperation: protocol.ResourceOperation{Kind: "delete", AnnotationID: ann}})
		case workspace.Renamed:
			old := uri.File(filepath.Join(root, filepath.FromSlash(f.OldPath)))
			_, _, current, err := currentText(docs, old, f.OldPath, root)
			if err != nil {
				skipped = append(skipped, fmt.Sprintf("%s (%v)", f.OldPath, err))
				continue
			}
			target, err := rebase(string(f.Base), current, string(f.Content))
			if err != nil {
				skipped = append(skipped, f.OldPath+" -> "+f.Path+" ("+err.Error()+"; not renamed)")
				continue
			}
			needs = append(needs, "rename")
			edit.DocumentChanges = append(edit.DocumentChanges,
				&protocol.RenameFile{Kind: "rename", OldURI: old, NewURI: u, ResourceOperation: protocol.ResourceOperation{Kind: "rename", AnnotationID: ann}})
			if current != target {
				edit.DocumentChanges = append(edit.DocumentChanges, textEdit(u, nil, current, target, ann))
			}
		}
	}
	for _, op := range needs {
		if !caps.documentChanges || !caps.resourceOps[op] {
			return nil, skipped, fmt.Errorf("the agent's change needs to %s files, which your editor does not support in workspace edits", op)
		}
	}
	if len(edit.DocumentChanges) == 0 && len(edit.Changes) == 0 && len(linkChanges(c, root).Files) == 0 {
		return nil, skipped, fmt.Errorf("nothing of the agent's change can be applied: %s", strings.Join(skipped, "; "))
	}
	return edit, skipped, nil
}

// touchesLink reports whether a change makes, changes or removes a symbolic link. A
// WorkspaceEdit can only carry text, so an editor would write the link's target as a
// file's content, or its change through the link into the file it points to.
func touchesLink(f workspace.FileChange) bool { return f.IsLink() || f.BaseIsLink() }

// linkAllowed: a link is made only when its target stays inside the folder.
func linkAllowed(root string, f workspace.FileChange) error {
	if !f.IsLink() {
		return nil
	}
	return workspace.CheckLink(root, f.Path, string(f.Content))
}

// checkPaths refuses a change whose path, or old path, is not plain or leads through a link
// or a file in the user's folder.
func checkPaths(root string, f workspace.FileChange) error {
	for _, p := range []string{f.Path, f.OldPath} {
		if p == "" {
			continue
		}
		if err := workspace.CheckPath(root, p); err != nil {
			return err
		}
	}
	return nil
}

// linkChanges are the changes the server applies itself, after the editor applied the
// rest (workspace.Apply: links only when their target stays in the folder, nothing through
// a link, and only if the user's entry is still what the agent saw).
func linkChanges(c *workspace.Changes, root string) *workspace.Changes {
	out := &workspace.Changes{}
	for _, f := range c.Files {
		if touchesLink(f) && checkPaths(root, f) == nil && linkAllowed(root, f) == nil {
			out.Files = append(out.Files, f)
		}
	}
	return out
}

// currentText is the file as the editor has it: the open buffer with its version (and the
// URI as the editor spells it), else the file on disk (no version).
func currentText(docs *document.Store, u uri.URI, rel, root string) (uri.URI, *int32, string, error) {
	if snap, ok := findDoc(docs, u.FsPath()); ok {
		v := snap.Version
		return uri.URI(snap.URI), &v, snap.Text, nil
	}
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return u, nil, "", err
	}
	return u, nil, string(b), nil
}

func textEdit(u uri.URI, version *int32, before, after string, ann protocol.ChangeAnnotationIdentifier) *protocol.TextDocumentEdit {
	td := &protocol.TextDocumentEdit{TextDocument: protocol.OptionalVersionedTextDocumentIdentifier{
		TextDocumentIdentifier: protocol.TextDocumentIdentifier{URI: u}, Version: version}}
	for _, e := range document.Edits(before, after) {
		te := protocol.TextEdit{Range: toRange(e.Range), NewText: e.NewText}
		if ann != "" {
			td.Edits = append(td.Edits, &protocol.AnnotatedTextEdit{TextEdit: te, AnnotationID: ann})
		} else {
			td.Edits = append(td.Edits, &te)
		}
	}
	return td
}

// rebase returns the agent's version of a file carried over onto the user's current one:
// agent = the agent's result from base, current = the user's. Both edit sets are taken
// against base; when they do not overlap they compose; when they do, it is a conflict.
func rebase(base, current, agent string) (string, error) {
	if current == base {
		return agent, nil
	}
	if current == agent {
		return agent, nil
	}
	type span struct {
		start, end int
		text       string
	}
	spans := func(after string) ([]span, error) {
		var out []span
		for _, e := range document.Edits(base, after) {
			s, err := document.OffsetOf(base, e.Range.Start)
			if err != nil {
				return nil, err
			}
			t, err := document.OffsetOf(base, e.Range.End)
			if err != nil {
				return nil, err
			}
			out = append(out, span{s, t, e.NewText})
		}
		return out, nil
	}
	a, err := spans(agent)
	if err != nil {
		return "", err
	}
	u, err := spans(current)
	if err != nil {
		return "", err
	}
	all := append(append([]span{}, a...), u...)
	sort.Slice(all, func(i, j int) bool { return all[i].start < all[j].start })
	for i := 1; i < len(all); i++ {
		// Touching edits count as overlapping: an insertion at the boundary of another
		// change has no well-defined order.
		if all[i].start <= all[i-1].end {
			return "", errors.New("you changed the same lines the agent did")
		}
	}
	var out []byte
	pos := 0
	for _, sp := range all {
		out = append(out, base[pos:sp.start]...)
		out = append(out, sp.text...)
		pos = sp.end
	}
	out = append(out, base[pos:]...)
	return string(out), nil
}

// findDoc finds an open document by file path: clients spell URIs in different ways
// (percent-encoding, drive letters), so paths are compared, not URI strings.
func findDoc(docs *document.Store, path string) (document.Snapshot, bool) {
	for _, d := range docs.All() {
		if uri.URI(d.URI).FsPath() == path {
			return d, true
		}
	}
	return document.Snapshot{}, false
}
