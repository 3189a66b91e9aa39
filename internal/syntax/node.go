package syntax

import (
	ts "github.com/tree-sitter/go-tree-sitter"
)

// Node is one node of a Tree. The zero Node is "no node" ([Node.Valid] is false): what
// Field, Child, Parent and the like return when there is none; its methods return zero
// values. A Node is a small value; copy it freely.
type Node struct {
	n ts.Node
	t *Tree
}

func (t *Tree) node(n ts.Node) Node { return Node{n: n, t: t} }

// wrap turns the binding's optional node into a Node.
func (n Node) wrap(c *ts.Node) Node {
	if c == nil {
		return Node{}
	}
	return Node{n: *c, t: n.t}
}

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
	id := int(n.n.KindId())
	if id < len(n.t.g.kinds) {
		return n.t.g.kinds[id]
	}
	return n.n.Kind()
}

// IsNamed is false for anonymous tokens (punctuation, keywords, operators).
func (n Node) IsNamed() bool { return n.Valid() && n.n.IsNamed() }

// IsError reports an ERROR node: text the parser skipped.
func (n Node) IsError() bool { return n.Valid() && n.n.IsError() }

// IsMissing reports a token the parser invented to recover from an error (a missing ")").
func (n Node) IsMissing() bool { return n.Valid() && n.n.IsMissing() }

// HasError reports an ERROR or MISSING node in n's subtree.
func (n Node) HasError() bool { return n.Valid() && n.n.HasError() }

// IsExtra reports a node the grammar allows anywhere, such as a comment.
func (n Node) IsExtra() bool { return n.Valid() && n.n.IsExtra() }

// Start and End are n's byte offsets in its tree's text: n is text[Start:End].
func (n Node) Start() int {
	if !n.Valid() {
		return 0
	}
	return int(n.n.StartByte())
}

// End: see Start.
func (n Node) End() int {
	if !n.Valid() {
		return 0
	}
	return int(n.n.EndByte())
}

// Range is [Start, End).
func (n Node) Range() Range { return Range{n.Start(), n.End()} }

// Line is the 0-based line n starts on.
func (n Node) Line() int {
	if !n.Valid() {
		return 0
	}
	return int(n.n.StartPosition().Row)
}

// Text is n's text.
func (n Node) Text() string {
	if !n.Valid() {
		return ""
	}
	return string(n.t.src[n.Start():n.End()])
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
	return n.wrap(n.n.ChildByFieldId(id))
}

// FieldAll returns every child of n in the named field, in order.
func (n Node) FieldAll(name string) []Node {
	var out []Node
	n.eachChild(func(c Node, field string) {
		if field == name {
			out = append(out, c)
		}
	})
	return out
}

// ChildCount counts n's children, anonymous tokens included.
func (n Node) ChildCount() int {
	if !n.Valid() {
		return 0
	}
	return int(n.n.ChildCount())
}

// Child returns n's i-th child (anonymous tokens included), or the zero Node.
func (n Node) Child(i int) Node {
	if !n.Valid() || i < 0 {
		return Node{}
	}
	return n.wrap(n.n.Child(uint(i)))
}

// NamedChildCount counts n's named children.
func (n Node) NamedChildCount() int {
	if !n.Valid() {
		return 0
	}
	return int(n.n.NamedChildCount())
}

// NamedChild returns n's i-th named child, or the zero Node.
func (n Node) NamedChild(i int) Node {
	if !n.Valid() || i < 0 {
		return Node{}
	}
	return n.wrap(n.n.NamedChild(uint(i)))
}

// Children returns all of n's children, anonymous tokens included.
func (n Node) Children() []Node {
	var out []Node
	n.eachChild(func(c Node, _ string) { out = append(out, c) })
	return out
}

// NamedChildren returns n's named children.
func (n Node) NamedChildren() []Node {
	var out []Node
	n.eachChild(func(c Node, _ string) {
		if c.n.IsNamed() {
			out = append(out, c)
		}
	})
	return out
}

// eachChild calls fn with each child of n and the field it is in ("" for none).
func (n Node) eachChild(fn func(c Node, field string)) {
	if !n.Valid() {
		return
	}
	c := n.n.Walk()
	defer c.Close()
	for ok := c.GotoFirstChild(); ok; ok = c.GotoNextSibling() {
		field := ""
		if c.FieldId() != 0 {
			field = c.FieldName()
		}
		fn(n.wrap(c.Node()), field)
	}
}

// Parent returns the node n is a child of, or the zero Node for the root.
func (n Node) Parent() Node {
	if !n.Valid() {
		return Node{}
	}
	return n.wrap(n.n.Parent())
}

// NextSibling and PrevSibling return the children of n's parent next to n, tokens
// included; NextNamedSibling and PrevNamedSibling skip anonymous tokens.
func (n Node) NextSibling() Node {
	if !n.Valid() {
		return Node{}
	}
	return n.wrap(n.n.NextSibling())
}

// PrevSibling: see NextSibling.
func (n Node) PrevSibling() Node {
	if !n.Valid() {
		return Node{}
	}
	return n.wrap(n.n.PrevSibling())
}

// NextNamedSibling: see NextSibling.
func (n Node) NextNamedSibling() Node {
	if !n.Valid() {
		return Node{}
	}
	return n.wrap(n.n.NextNamedSibling())
}

// PrevNamedSibling: see NextSibling.
func (n Node) PrevNamedSibling() Node {
	if !n.Valid() {
		return Node{}
	}
	return n.wrap(n.n.PrevNamedSibling())
}

// DescendantAt returns the smallest named node in n's subtree that spans [start, end),
// or n itself when none is smaller.
func (n Node) DescendantAt(start, end int) Node {
	if !n.Valid() {
		return Node{}
	}
	return n.wrap(n.n.NamedDescendantForByteRange(uint(start), uint(end)))
}

// Equal reports whether a and b are the same node of the same tree.
func (n Node) Equal(o Node) bool {
	if !n.Valid() || !o.Valid() {
		return !n.Valid() && !o.Valid()
	}
	return n.t == o.t && n.n.Equals(o.n)
}

// String renders n's subtree as an S-expression, for tests and debugging.
func (n Node) String() string {
	if !n.Valid() {
		return "<no node>"
	}
	return n.n.ToSexp()
}

// Walk visits n and its subtree in source order (parents before children). visit
// returns whether to go into the node's children; anonymous tokens are visited too, so
// that operators and keywords can be found (check IsNamed to skip them).
func (n Node) Walk(visit func(Node) bool) {
	if !n.Valid() {
		return
	}
	c := n.n.Walk()
	defer c.Close()
	for {
		if visit(n.wrap(c.Node())) && c.GotoFirstChild() {
			continue
		}
		// The cursor cannot leave n: at n, GotoNextSibling and GotoParent are false.
		for !c.GotoNextSibling() {
			if !c.GotoParent() || c.Depth() == 0 {
				return
			}
		}
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
