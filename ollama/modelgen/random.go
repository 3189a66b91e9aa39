package modelgen

import "math/rand/v2"

// Random writes a tiny model with random weights: it loads, tokenizes and generates
// (gibberish), which is all plumbing tests need. The same seed gives the same file.
func Random(path string, arch Arch, seed uint64) (*Model, error) {
	v := newVocab()
	for _, s := range []string{EndOfText, ImStart, ImEnd} {
		v.add(s, tokenControl)
	}
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	noise := func(m *matrix) {
		for i := range m.data {
			m.data[i] = float32(r.NormFloat64() * 0.05)
		}
	}
	s := shapeFor(64)
	embd, out := newMatrix(len(v.tokens), s.hidden), newMatrix(len(v.tokens), s.hidden)
	noise(embd)
	noise(out)
	if err := writeGGUF(path, arch, s, v, embd, out, noise); err != nil {
		return nil, err
	}
	return &Model{
		Path:          path,
		Template:      ChatMLTemplate(true, false),
		Parameters:    map[string]any{"stop": []string{ImEnd}},
		ContextLength: s.context,
	}, nil
}
