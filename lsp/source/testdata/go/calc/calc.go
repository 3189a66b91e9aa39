// Package calc is a fixture: a calculator with finished and unfinished functions.
package calc

import (
	"errors"
	"fmt"
)

// Calc accumulates.
type Calc struct{ total int }

// Add is finished.
func (c *Calc) Add(a, b int) int {
	c.total += a + b
	return a + b
}

// Reset has an empty body: a stub.
func (c *Calc) Reset() {}

// Mul says TODO and returns a zero value.
func (c *Calc) Mul(a, b int) int {
	// TODO: multiply
	return 0
}

// Div panics with "not implemented".
func (c *Calc) Div(a, b int) (int, error) {
	panic("not implemented")
}

// Pow uses GoLand's words.
func Pow(a, b int) int {
	panic("implement me")
}

// Mod returns a not-implemented error.
func Mod(a, b int) (int, error) {
	return 0, errors.New("mod: not yet implemented")
}

// Format has braces and "func" in strings, and a function literal.
func Format(v int) string {
	wrap := func(s string) string { return "{" + s + "}" }
	_ = "func Fake() {"
	return wrap(fmt.Sprint(v)) // a real body, whatever this comment says: TODO
}

// Must panics, but it is not a stub.
func Must(err error) {
	if err != nil {
		panic(err)
	}
}

// Unreachable panics without a marker: not a stub.
func Unreachable() {
	panic("unreachable")
}

// Stack is generic.
type Stack[T any] struct{ items []T }

// Push is a method of a generic type.
func (s *Stack[T]) Push(v T) { s.items = append(s.items, v) }

// Noop's comment is no marker: not a stub.
func Noop() {
	// nothing to do: callers rely on this being cheap
}
