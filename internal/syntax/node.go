package syntax

import (
	ts "github.com/tree-sitter/go-tree-sitter"
)

// Node is one node of a Tree. The zero Node is "no node" ([Node.Valid] is false): what
// Field, Child, Parent and the like return when there is none; its methods return zero
// values. A Node is a small value; copy it freely. Its kind, range and flags are read
// once, when it is found, so asking for them costs nothing.
type Node struct {
	in info
	t  *Tree
}

func (t *Tree) node(n ts.Node) Node { return Node{in: fill(&n), t: t} }

// wrap turns the binding's optional node into a Node.
func (n Node) wrap(c *ts.Node) Node {
	if c == nil {
		return Node{}
	}
	return Node{in: fill(c), t: n.t}
}

// ts is n as the binding's Node.
func (n *Node) ts() *ts.Node { return fromC(&n.in.node) }

// Valid reports whether n is a node rather than the zero Node.
func (n Node) Valid() bool {
	if n.t == nil {
		return false
	}
	n.t.live()
	return true
}

// Kind is the node's type in the grammar: "function_definition", "identifier", or for an
// anonymous token its text: "==", "(", "def".
func (n Node) Kind() string {
	if !n.Valid() {
		return ""
	}
	if id := int(n.in.symbol); id < len(n.t.g.kinds) {
		return n.t.g.kinds[id]
	}
	return n.ts().Kind()
}

func (n Node) flag(f uint8) bool { return n.Valid() && uint8(n.in.flags)&f != 0 }

// IsNamed is false for anonymous tokens (punctuation, keywords, operators).
func (n Node) IsNamed() bool { return n.flag(flagNamed) }

// IsError reports an ERROR node: text the parser skipped.
func (n Node) IsError() bool { return n.flag(flagError) }

// IsMissing reports a token the parser invented to recover from an error (a missing ")").
func (n Node) IsMissing() bool { return n.flag(flagMissing) }

// HasError reports an ERROR or MISSING node in n's subtree.
func (n Node) HasError() bool { return n.flag(flagHasError) }

// IsExtra reports a node the grammar allows anywhere, such as a comment.
func (n Node) IsExtra() bool { return n.flag(flagExtra) }

// Start and End are n's byte offsets in its tree's text: n is text[Start:End].
func (n Node) Start() int {
	if !n.Valid() {
		return 0
	}
	return int(n.in.start)
}

// End: see Start.
func (n Node) End() int {
	if !n.Valid() {
		return 0
	}
	return int(n.in.end)
}

// Range is [Start, End).
func (n Node) Range() Range { return Range{n.Start(), n.End()} }

// Line is the 0-based line n starts on.
func (n Node) Line() int {
	if !n.Valid() {
		return 0
	}
	return int(n.ts().StartPosition().Row)
}

// Text is n's text.
func (n Node) Text() string {
	if !n.Valid() {
		return ""
	}
	return string(n.t.src[n.in.start:n.in.end])
}

// Tree is the tree n belongs to.
func (n Node) Tree() *Tree { return n.t }

// Field returns n's child in the named field ("name", "body", "condition", "operator",
// "left", "right", "arguments", ...), or the zero Node. When a field holds several
// children (a decorated definition's decorators), it returns the first; see FieldAll.
func (n Node) Field(name string) Node {
	if !n.Valid() {
		return Node{}
	}
	id, ok := n.t.g.fields[name]
	if !ok {
		return Node{}
	}
	return n.wrap(n.ts().ChildByFieldId(id))
}

// FieldAll returns every child of n in the named field, in order.
func (n Node) FieldAll(name string) []Node {
	if !n.Valid() {
		return nil
	}
	id, ok := n.t.g.fields[name]
	var out []Node
	for _, c := range children(&n.in.node, uint32(n.in.children)) {
		if ok && uint16(c.field) == id {
			out = append(out, Node{in: c, t: n.t})
		}
	}
	return out
}

// ChildCount counts n's children, anonymous tokens included.
func (n Node) ChildCount() int {
	if !n.Valid() {
		return 0
	}
	return int(n.in.children)
}

// Child returns n's i-th child (anonymous tokens included), or the zero Node.
func (n Node) Child(i int) Node {
	if !n.Valid() || i < 0 {
		return Node{}
	}
	return n.wrap(n.ts().Child(uint(i)))
}

// NamedChildCount counts n's named children.
func (n Node) NamedChildCount() int {
	if !n.Valid() {
		return 0
	}
	return int(n.ts().NamedChildCount())
}

// NamedChild returns n's i-th named child, or the zero Node.
func (n Node) NamedChild(i int) Node {
	if !n.Valid() || i < 0 {
		return Node{}
	}
	return n.wrap(n.ts().NamedChild(uint(i)))
}

// Children returns all of n's children, anonymous tokens included.
func (n Node) Children() []Node {
	if !n.Valid() {
		return nil
	}
	cs := children(&n.in.node, uint32(n.in.children))
	out := make([]Node, len(cs))
	for i, c := range cs {
		out[i] = Node{in: c, t: n.t}
	}
	return out
}

// NamedChildren returns n's named children.
func (n Node) NamedChildren() []Node {
	if !n.Valid() {
		return nil
	}
	var out []Node
	for _, c := range children(&n.in.node, uint32(n.in.children)) {
		if uint8(c.flags)&flagNamed != 0 {
			out = append(out, Node{in: c, t: n.t})
		}
	}
	return out
}

// Parent returns the node n is a child of, or the zero Node for the root.
func (n Node) Parent() Node {
	if !n.Valid() {
		return Node{}
	}
	return n.wrap(n.ts().Parent())
}

// NextSibling and PrevSibling return the children of n's parent next to n, tokens
// included; NextNamedSibling and PrevNamedSibling skip anonymous tokens.
func (n Node) NextSibling() Node {
	if !n.Valid() {
		return Node{}
	}
	return n.wrap(n.ts().NextSibling())
}

// PrevSibling: see NextSibling.
func (n Node) PrevSibling() Node {
	if !n.Valid() {
		return Node{}
	}
	return n.wrap(n.ts().PrevSibling())
}

// NextNamedSibling: see NextSibling.
func (n Node) NextNamedSibling() Node {
	if !n.Valid() {
		return Node{}
	}
	return n.wrap(n.ts().NextNamedSibling())
}

// PrevNamedSibling: see NextSibling.
func (n Node) PrevNamedSibling() Node {
	if !n.Valid() {
		return Node{}
	}
	return n.wrap(n.ts().PrevNamedSibling())
}

// DescendantAt returns the smallest named node in n's subtree that spans [start, end),
// or n itself when none is smaller.
func (n Node) DescendantAt(start, end int) Node {
	if !n.Valid() {
		return Node{}
	}
	return n.wrap(n.ts().NamedDescendantForByteRange(uint(start), uint(end)))
}

// Equal reports whether a and b are the same node of the same tree.
func (n Node) Equal(o Node) bool {
	if !n.Valid() || !o.Valid() {
		return !n.Valid() && !o.Valid()
	}
	return n.t == o.t && n.in.node.id == o.in.node.id
}

// String renders n's subtree as an S-expression, for tests and debugging.
func (n Node) String() string {
	if !n.Valid() {
		return "<no node>"
	}
	return n.ts().ToSexp()
}

// Walk visits n and its subtree in source order (parents before children). visit
// returns whether to go into the node's children; anonymous tokens are visited too, so
// that operators and keywords can be found (check IsNamed to skip them).
func (n Node) Walk(visit func(Node) bool) {
	if !n.Valid() || !visit(n) || n.in.children == 0 {
		return
	}
	for _, c := range children(&n.in.node, uint32(n.in.children)) {
		Node{in: c, t: n.t}.Walk(visit)
	}
}

// Find returns the nodes of n's subtree (n included) whose kind is one of kinds, in
// source order.
func (n Node) Find(kinds ...string) []Node {
	var out []Node
	n.Walk(func(c Node) bool {
		k := c.Kind()
		for _, want := range kinds {
			if k == want {
				out = append(out, c)
				break
			}
		}
		return true
	})
	return out
}
