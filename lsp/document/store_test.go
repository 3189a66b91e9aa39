package document

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
)

func rng(l1, c1, l2, c2 uint32) *Range {
	return &Range{Start: Position{l1, c1}, End: Position{l2, c2}}
}

func TestStoreChange(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		batches [][]Change // one didChange notification each, versions 2, 3, ...
		want    string
	}{
		{"insert", "hello world", [][]Change{{{rng(0, 5, 0, 5), ","}}}, "hello, world"},
		{"delete across lines", "ab\ncd\nef", [][]Change{{{rng(0, 1, 2, 1), ""}}}, "af"},
		{"replace across lines", "one\ntwo\nthree\n", [][]Change{{{rng(0, 1, 1, 2), "X\nY"}}}, "oX\nYo\nthree\n"},
		{"insert a new line", "a\nc\n", [][]Change{{{rng(1, 0, 1, 0), "b\n"}}}, "a\nb\nc\n"},
		{
			// Against the original text the second change would delete "b"; applied to the
			// result of the first, as the spec says, it deletes the "x" just inserted.
			"several changes apply in order", "abc",
			[][]Change{{{rng(0, 0, 0, 0), "x"}, {rng(0, 0, 0, 1), ""}, {rng(0, 3, 0, 3), "!"}}},
			"abc!",
		},
		{
			"emoji inserted then deleted by UTF-16 range", "ab",
			[][]Change{{{rng(0, 1, 0, 1), "😀"}}, {{rng(0, 1, 0, 3), ""}}},
			"ab",
		},
		{
			"text after an emoji is addressed past both units", "a😀b",
			[][]Change{{{rng(0, 3, 0, 4), "B"}}},
			"a😀B",
		},
		{"CJK replacement", "中文abc", [][]Change{{{rng(0, 1, 0, 2), "国"}}}, "中国abc"},
		{"after é", "héllo", [][]Change{{{rng(0, 2, 0, 4), "LL"}}}, "héLLo"},
		{"CRLF line", "a\r\nbc\r\n", [][]Change{{{rng(1, 1, 1, 2), "X"}}}, "a\r\nbX\r\n"},
		{"delete a CRLF line", "a\r\nbc\r\nd", [][]Change{{{rng(1, 0, 2, 0), ""}}}, "a\r\nd"},
		{"character past end clamps", "ab\ncd", [][]Change{{{rng(0, 99, 0, 99), "!"}}}, "ab!\ncd"},
		{"end+1 line is the end of the text", "ab\n", [][]Change{{{rng(2, 0, 2, 0), "x"}}}, "ab\nx"},
		{"whole document by range", "ab\ncd\n", [][]Change{{{rng(0, 0, 3, 0), "new"}}}, "new"},
		{"full replacement", "old text", [][]Change{{{nil, "new\ntext"}}}, "new\ntext"},
		{
			"full replacement then incremental", "old",
			[][]Change{{{nil, "x\ny"}, {rng(1, 1, 1, 1), "z"}}},
			"x\nyz",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewStore()
			s.Open("file:///a.go", "go", 1, tt.text)
			for i, changes := range tt.batches {
				if err := s.Change("file:///a.go", int32(i+2), changes); err != nil {
					t.Fatalf("change %d: %v", i, err)
				}
			}
			got, ok := s.Get("file:///a.go")
			if !ok {
				t.Fatal("document is gone")
			}
			want := Snapshot{URI: "file:///a.go", LanguageID: "go", Version: int32(len(tt.batches) + 1), Text: tt.want}
			if got != want {
				t.Errorf("got %+v, want %+v", got, want)
			}
		})
	}
}

func TestStoreChangeErrors(t *testing.T) {
	tests := []struct {
		name    string
		uri     string
		version int32
		changes []Change
		err     error
	}{
		{"unknown uri", "file:///other.go", 6, []Change{{nil, "x"}}, ErrNotOpen},
		{"same version", "file:///a.go", 5, []Change{{nil, "x"}}, ErrStaleVersion},
		{"older version", "file:///a.go", 4, []Change{{nil, "x"}}, ErrStaleVersion},
		{"line past end+1", "file:///a.go", 6, []Change{{rng(3, 0, 3, 0), "x"}}, ErrOutOfRange},
		{"start after end", "file:///a.go", 6, []Change{{rng(1, 0, 0, 1), "x"}}, ErrOutOfRange},
		{
			// The first change is valid; the document must not keep it.
			"bad second change", "file:///a.go", 6,
			[]Change{{rng(0, 0, 0, 0), "x"}, {rng(9, 0, 9, 0), "y"}}, ErrOutOfRange,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewStore()
			s.Open("file:///a.go", "go", 5, "ab\n")
			err := s.Change(tt.uri, tt.version, tt.changes)
			if !errors.Is(err, tt.err) {
				t.Fatalf("Change error = %v, want %v", err, tt.err)
			}
			got, _ := s.Get("file:///a.go")
			if got.Text != "ab\n" || got.Version != 5 {
				t.Errorf("after a failed change the document is %+v, want it unchanged", got)
			}
		})
	}
}

func TestStoreOpenCloseAll(t *testing.T) {
	s := NewStore()
	s.Open("file:///c.go", "go", 1, "c")
	s.Open("file:///a.go", "go", 1, "a")
	s.Open("file:///b.md", "markdown", 3, "b")
	s.Open("file:///a.go", "go", 7, "a2") // reopening replaces
	s.Close("file:///c.go")
	s.Close("file:///never.go")
	want := []Snapshot{
		{URI: "file:///a.go", LanguageID: "go", Version: 7, Text: "a2"},
		{URI: "file:///b.md", LanguageID: "markdown", Version: 3, Text: "b"},
	}
	if got := s.All(); !slices.Equal(got, want) {
		t.Errorf("All() = %+v, want %+v", got, want)
	}
	if _, ok := s.Get("file:///c.go"); ok {
		t.Error("closed document is still there")
	}
	if err := s.Change("file:///c.go", 2, nil); !errors.Is(err, ErrNotOpen) {
		t.Errorf("change to a closed document: %v, want ErrNotOpen", err)
	}
}

// TestStoreConcurrent is for -race: readers take snapshots while one goroutine changes a
// document and another opens and closes others. Each version of the document is that many
// "x"s, so a torn snapshot shows as a length that does not match its version.
func TestStoreConcurrent(t *testing.T) {
	const uri, versions = "file:///x.txt", 300
	s := NewStore()
	s.Open(uri, "plaintext", 0, "")
	var wg sync.WaitGroup
	done := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				snap, ok := s.Get(uri)
				if !ok || len(snap.Text) != int(snap.Version) {
					t.Errorf("torn snapshot: ok=%v version %d, %d bytes", ok, snap.Version, len(snap.Text))
					return
				}
				for _, d := range s.All() {
					if d.URI == uri && len(d.Text) != int(d.Version) {
						t.Errorf("torn snapshot in All: version %d, %d bytes", d.Version, len(d.Text))
						return
					}
				}
			}
		})
	}
	wg.Go(func() {
		for i := range versions {
			other := fmt.Sprintf("file:///other%d.txt", i%5)
			s.Open(other, "plaintext", 1, "o")
			s.Close(other)
		}
	})
	for v := int32(1); v <= versions; v++ {
		at := Position{0, uint32(v - 1)}
		if err := s.Change(uri, v, []Change{{&Range{at, at}, "x"}}); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
	if snap, _ := s.Get(uri); snap.Version != versions || len(snap.Text) != versions {
		t.Errorf("final snapshot: version %d, %d bytes", snap.Version, len(snap.Text))
	}
}
