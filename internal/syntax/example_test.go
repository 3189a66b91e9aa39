package syntax_test

import (
	"fmt"

	"github.com/frognano/frognano/internal/syntax"
)

// A mutation as a synthesizer makes one: find the comparisons, and replace an operator's
// bytes in the text.
func Example() {
	src := []byte("def clamp(x, hi):\n    if x > hi:\n        return hi\n    return x\n")
	tree, err := syntax.Parse(syntax.LangOf("clamp.py"), src)
	if err != nil {
		panic(err)
	}
	defer tree.Close()
	for _, cmp := range tree.Root().Find("comparison_operator") {
		op := cmp.Field("operators") // Python names the field "operators": a < b < c has two
		fmt.Printf("%s: operator %q at [%d:%d]\n", cmp.Text(), op.Text(), op.Start(), op.End())
		mutant := string(src[:op.Start()]) + ">=" + string(src[op.End():])
		fmt.Print(mutant)
	}
	// Output:
	// x > hi: operator ">" at [27:28]
	// def clamp(x, hi):
	//     if x >= hi:
	//         return hi
	//     return x
}
