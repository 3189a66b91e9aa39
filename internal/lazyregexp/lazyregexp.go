// Package lazyregexp is a regexp.Regexp compiled on first use, after the Go tree's own
// internal/lazyregexp: a package-level regexp.MustCompile runs at every start of the
// binary, and frognano starts for every editor session (`frognano lsp`), mostly never
// reaching the code that matches. Use [New] where a package-level variable would call
// regexp.MustCompile.
package lazyregexp

import (
	"os"
	"regexp"
	"strings"
	"sync"
)

// Regexp is a regexp.Regexp compiled on first use; it is safe for concurrent use.
type Regexp struct {
	str  string
	once sync.Once
	rx   *regexp.Regexp
}

func (r *Regexp) re() *regexp.Regexp {
	r.once.Do(func() { r.rx = regexp.MustCompile(r.str) })
	return r.rx
}

// inTest says the binary is a test: there every expression compiles at once, so that a bad
// one fails the package's tests instead of panicking on first use.
var inTest = strings.HasSuffix(os.Args[0], ".test")

// New returns a Regexp for str, which must compile (regexp.MustCompile).
func New(str string) *Regexp {
	r := &Regexp{str: str}
	if inTest {
		r.re()
	}
	return r
}

func (r *Regexp) MatchString(s string) bool                  { return r.re().MatchString(s) }
func (r *Regexp) FindAllIndex(b []byte, n int) [][]int       { return r.re().FindAllIndex(b, n) }
func (r *Regexp) FindSubmatch(s []byte) [][]byte             { return r.re().FindSubmatch(s) }
func (r *Regexp) FindStringSubmatch(s string) []string       { return r.re().FindStringSubmatch(s) }
func (r *Regexp) FindStringSubmatchIndex(s string) []int     { return r.re().FindStringSubmatchIndex(s) }
func (r *Regexp) FindAllString(s string, n int) []string     { return r.re().FindAllString(s, n) }
func (r *Regexp) ReplaceAllString(src, repl string) string   { return r.re().ReplaceAllString(src, repl) }
func (r *Regexp) FindAllStringIndex(s string, n int) [][]int { return r.re().FindAllStringIndex(s, n) }
func (r *Regexp) FindAllStringSubmatch(s string, n int) [][]string {
	return r.re().FindAllStringSubmatch(s, n)
}
