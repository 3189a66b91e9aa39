package syntax

/*
#include <stddef.h>

// From tree-sitter's api.h (compiled into github.com/tree-sitter/go-tree-sitter).
void ts_set_allocator(void *(*)(size_t), void *(*)(size_t, size_t), void *(*)(void *, size_t), void (*)(void *));

static void syntax_use_libc_allocator(void) { ts_set_allocator(NULL, NULL, NULL, NULL); }
*/
import "C"

// The binding's init points tree-sitter's allocator at Go functions (so that a Go program
// can plug in its own), which call C's malloc and free: every allocation of the parser
// becomes a call from C into Go and back, microseconds each. Parsing a 10,000-line file
// spent most of its time there (580 ms where 20 would do, on this machine under load).
// tree-sitter's own defaults are those same C functions, called directly; the binding's
// go_free, which frees what tree-sitter returns (changed ranges), calls C's free too.
// Nothing in frognano sets another allocator. This runs after the binding's init: Go
// initialises a package's imports first.
func init() { C.syntax_use_libc_allocator() }
