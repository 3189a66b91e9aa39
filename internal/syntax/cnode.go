package syntax

/*
#include <stdbool.h>
#include <stdint.h>

// Declarations from tree-sitter's api.h (v0.25, compiled into the binding): reading a
// node's children in one call from Go instead of several per child. Each call from Go
// into C costs more than tree-sitter's work for a node; walking a 10,000-line file's
// 70,000 nodes through the binding's one-call-per-question API took most of the time.
typedef struct { uint32_t context[4]; const void *id; const void *tree; } TSNode;
typedef struct { const void *tree; const void *id; uint32_t context[3]; } TSTreeCursor;
TSTreeCursor ts_tree_cursor_new(TSNode);
void ts_tree_cursor_delete(TSTreeCursor *);
bool ts_tree_cursor_goto_first_child(TSTreeCursor *);
bool ts_tree_cursor_goto_next_sibling(TSTreeCursor *);
TSNode ts_tree_cursor_current_node(const TSTreeCursor *);
uint16_t ts_tree_cursor_current_field_id(const TSTreeCursor *);
uint16_t ts_node_symbol(TSNode);
uint32_t ts_node_start_byte(TSNode);
uint32_t ts_node_end_byte(TSNode);
uint32_t ts_node_child_count(TSNode);
bool ts_node_is_named(TSNode);
bool ts_node_is_extra(TSNode);
bool ts_node_is_missing(TSNode);
bool ts_node_is_error(TSNode);
bool ts_node_has_error(TSNode);

enum { NAMED = 1, EXTRA = 2, MISSING = 4, ERROR = 8, HAS_ERROR = 16 };

typedef struct {
	TSNode node;
	uint32_t start, end, children;
	uint16_t symbol, field;
	uint8_t flags;
} syntax_info;

static void syntax_fill(TSNode n, uint16_t field, syntax_info *out) {
	out->node = n;
	out->start = ts_node_start_byte(n);
	out->end = ts_node_end_byte(n);
	out->children = ts_node_child_count(n);
	out->symbol = ts_node_symbol(n);
	out->field = field;
	out->flags = (ts_node_is_named(n) ? NAMED : 0) | (ts_node_is_extra(n) ? EXTRA : 0) |
		(ts_node_is_missing(n) ? MISSING : 0) | (ts_node_is_error(n) ? ERROR : 0) |
		(ts_node_has_error(n) ? HAS_ERROR : 0);
}

// syntax_children fills out with n's children (at most cap) and returns their number.
static uint32_t syntax_children(TSNode n, syntax_info *out, uint32_t cap) {
	TSTreeCursor c = ts_tree_cursor_new(n);
	uint32_t k = 0;
	if (ts_tree_cursor_goto_first_child(&c)) {
		do {
			if (k == cap) break;
			syntax_fill(ts_tree_cursor_current_node(&c), ts_tree_cursor_current_field_id(&c), &out[k++]);
		} while (ts_tree_cursor_goto_next_sibling(&c));
	}
	ts_tree_cursor_delete(&c);
	return k;
}

static void syntax_fill_one(TSNode n, syntax_info *out) { syntax_fill(n, 0, out); }

typedef struct TSParser TSParser;
typedef struct TSTree TSTree;
TSTree *ts_parser_parse_string(TSParser *, const TSTree *, const char *, uint32_t);

static TSTree *syntax_parse(TSParser *p, const TSTree *old, const char *s, uint32_t n) {
	return ts_parser_parse_string(p, old, n ? s : "", n);
}
*/
import "C"

import (
	"unsafe"

	ts "github.com/tree-sitter/go-tree-sitter"
)

// info is what this package reads of a node in the one call that finds it.
type info = C.syntax_info

const (
	flagNamed    uint8 = C.NAMED
	flagExtra    uint8 = C.EXTRA
	flagMissing  uint8 = C.MISSING
	flagError    uint8 = C.ERROR
	flagHasError uint8 = C.HAS_ERROR
)

// The binding's Node is a struct of one C.TSNode, laid out as this package's: the
// conversions reinterpret the same bytes.
func toC(n *ts.Node) C.TSNode    { return *(*C.TSNode)(unsafe.Pointer(n)) }
func fromC(n *C.TSNode) *ts.Node { return (*ts.Node)(unsafe.Pointer(n)) }

// fill reads n's info.
func fill(n *ts.Node) info {
	var in info
	C.syntax_fill_one(toC(n), &in)
	return in
}

// children reads the info of n's count children.
func children(n *C.TSNode, count uint32) []info {
	if count == 0 {
		return nil
	}
	out := make([]info, count)
	k := C.syntax_children(*n, &out[0], C.uint32_t(count))
	return out[:k]
}

// parseBytes parses src with p, reusing old (edited to match src) when it is not nil. The
// binding's Parse reads the text through a callback from C into Go that copies each piece
// it hands over into C memory: an incremental parse of a 10,000-line file asked for
// pieces at every reused node, copying and calling back for each, and spent more time
// there than parsing. tree-sitter reads the text straight from Go memory here (it holds no
// Go pointers, and tree-sitter keeps no reference to it after the call). The binding's
// Parser and Tree are structs of one C pointer, reinterpreted as such.
func parseBytes(p *ts.Parser, old *ts.Tree, src []byte) *ts.Tree {
	cp := *(**C.TSParser)(unsafe.Pointer(p))
	var co *C.TSTree
	if old != nil {
		co = *(**C.TSTree)(unsafe.Pointer(old))
	}
	var s *C.char
	if len(src) > 0 {
		s = (*C.char)(unsafe.Pointer(&src[0]))
	}
	ct := C.syntax_parse(cp, co, s, C.uint32_t(len(src)))
	if ct == nil {
		return nil
	}
	t := new(ts.Tree)
	*(**C.TSTree)(unsafe.Pointer(t)) = ct
	return t
}
