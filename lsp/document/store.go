package document

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Snapshot is one version of an open document. It is a value: changes made to the Store
// later never alter a Snapshot already handed out, so a feature can work on it unlocked.
type Snapshot struct {
	URI        string
	LanguageID string
	Version    int32
	Text       string
}

// Change is one entry of a didChange notification's contentChanges.
type Change struct {
	Range *Range // nil replaces the whole document (full sync)
	Text  string
}

var (
	// ErrNotOpen reports a change to a document the client never opened, or closed.
	ErrNotOpen = errors.New("document is not open")
	// ErrStaleVersion reports a change whose version is not newer than the document's: the
	// spec requires versions to increase, so an older one means a notification was reordered.
	ErrStaleVersion = errors.New("document version is not newer than the current one")
)

// Store holds the open documents. It is safe for concurrent use: the handlers of
// notifications write while request handlers read.
type Store struct {
	mu   sync.RWMutex
	docs map[string]Snapshot // guarded by mu; keyed by URI
}

// NewStore returns an empty Store.
func NewStore() *Store {
	return &Store{docs: make(map[string]Snapshot)}
}

// Open records a document the client opened. Opening a URI already open replaces it: the
// client's didOpen is the authority on the text.
func (s *Store) Open(uri, languageID string, version int32, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.docs[uri] = Snapshot{URI: uri, LanguageID: languageID, Version: version, Text: text}
}

// Change applies the content changes of one didChange notification, in order, each against
// the result of the previous one as the spec says, and records version. It changes nothing
// when it returns an error, so a bad notification cannot leave a half-applied document.
func (s *Store) Change(uri string, version int32, changes []Change) error {
	// The text is computed under the write lock: changes are linear in the document's size,
	// and holding the lock keeps two changes to one document from racing.
	s.mu.Lock()
	defer s.mu.Unlock()
	doc, ok := s.docs[uri]
	if !ok {
		return fmt.Errorf("%w: %s", ErrNotOpen, uri)
	}
	if version <= doc.Version {
		return fmt.Errorf("%w: %s is at version %d, the change is for version %d", ErrStaleVersion, uri, doc.Version, version)
	}
	text, err := applyChanges(doc.Text, changes)
	if err != nil {
		return fmt.Errorf("%s version %d: %w", uri, version, err)
	}
	doc.Text, doc.Version = text, version
	s.docs[uri] = doc
	return nil
}

// Close forgets a document. Closing one that is not open does nothing.
func (s *Store) Close(uri string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.docs, uri)
}

// Get returns the current snapshot of uri, and whether it is open.
func (s *Store) Get(uri string) (Snapshot, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	doc, ok := s.docs[uri]
	return doc, ok
}

// All returns a snapshot of every open document, sorted by URI so callers see a stable order.
func (s *Store) All() []Snapshot {
	s.mu.RLock()
	all := make([]Snapshot, 0, len(s.docs))
	for _, doc := range s.docs {
		all = append(all, doc)
	}
	s.mu.RUnlock()
	slices.SortFunc(all, func(a, b Snapshot) int { return strings.Compare(a.URI, b.URI) })
	return all
}

// applyChanges is Change without the Store: the text after changes, applied in order.
func applyChanges(text string, changes []Change) (string, error) {
	for i, c := range changes {
		if c.Range == nil {
			text = c.Text
			continue
		}
		// Two conversions, each scanning only as far as its line: no line index of the
		// whole text (see OffsetOf).
		start, err := OffsetOf(text, c.Range.Start)
		if err != nil {
			return "", fmt.Errorf("change %d: start: %w", i, err)
		}
		end, err := OffsetOf(text, c.Range.End)
		if err != nil {
			return "", fmt.Errorf("change %d: end: %w", i, err)
		}
		if start > end {
			return "", fmt.Errorf("change %d: %w: start %v is after end %v", i, ErrOutOfRange, c.Range.Start, c.Range.End)
		}
		text = text[:start] + c.Text + text[end:]
	}
	return text, nil
}
