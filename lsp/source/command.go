package source

import (
	"path"
	"regexp"
	"strings"
)

// Test commands are run by a shell from the repository root, so every argument that comes
// from the file (its path, a test's name) is quoted here.

// goTestCommand runs one top-level Go test in the package of relPath.
func goTestCommand(relPath, name string) string {
	// Test names are identifiers, so they need no quoting inside '^…$'.
	return "go test -run '^" + name + "$' " + shellWord(goPackageArg(relPath))
}

// goPackageArg is the package pattern for the file's directory: "./pkg/dir", or "." for
// the root (a bare "pkg/dir" would be read as an import path).
func goPackageArg(relPath string) string {
	dir := path.Dir(relPath)
	switch {
	case dir == ".":
		return "."
	case path.IsAbs(dir), strings.HasPrefix(dir, "../"), strings.HasPrefix(dir, "./"):
		return dir
	}
	return "./" + dir
}

// pytestCommand runs one pytest node: "path::Class::test".
func pytestCommand(relPath, nodeName string) string {
	return "python -m pytest " + shellWord(relPath+"::"+nodeName)
}

// jsTestCommand runs the tests whose full name matches pattern (a regular expression, as
// both Jest and Vitest read -t) in one file.
func jsTestCommand(relPath, pattern string, vitest bool) string {
	runner := "npx jest "
	if vitest {
		runner = "npx vitest run "
	}
	return runner + shellWord(relPath) + " -t " + doubleQuote(pattern)
}

// safeWord is what a shell passes through unchanged.
var safeWord = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// shellWord quotes s for a POSIX shell when it needs it.
func shellWord(s string) string {
	if safeWord.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// doubleQuote quotes s in double quotes, escaping the four characters that stay special
// there; test names with apostrophes read better this way than in single quotes.
func doubleQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "$", `\$`, "`", "\\`")
	return `"` + r.Replace(s) + `"`
}
