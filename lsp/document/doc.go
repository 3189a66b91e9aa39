// Package document is the language server's store of open documents and the position
// arithmetic the protocol requires.
//
// Start with [Store]: the textDocument/didOpen, didChange and didClose handlers call
// [Store.Open], [Store.Change] and [Store.Close], and every feature reads an immutable
// [Snapshot] from [Store.Get]. Positions are [Position] values counted in UTF-16 code units,
// the spec's default position encoding ("utf-16"); [OffsetOf] and [PositionOf] convert them
// to and from byte offsets, and a [Lines] index of one text converts many of them at the
// cost of one scan ([Lines.Update] carries it over to the next version, see [Changed]).
// [Edits] turns a whole new text (the agent's, a formatter's) into
// the few [TextEdit]s a WorkspaceEdit carries, and [Apply] is its inverse.
//
// The package has its own small Position and Range types rather than the wire library's, so
// that it depends on nothing but the standard library; the handlers convert at the boundary.
package document
