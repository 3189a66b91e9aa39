package modelgen

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Token types as GGUF stores them (tokenizer.ggml.token_type).
const (
	tokenNormal  int32 = 1
	tokenControl int32 = 3
)

// Special tokens of the ChatML family that frognano's templates use.
const (
	EndOfText = "<|endoftext|>"
	ImStart   = "<|im_start|>"
	ImEnd     = "<|im_end|>"
)

// byteToRune is GPT-2's byte-level alphabet: every byte maps to one printable rune, so a
// vocabulary entry can spell any byte string. Both of Ollama's engines decode with it.
var byteToRune = func() [256]rune {
	var m [256]rune
	n := 0
	for b := 0; b < 256; b++ {
		switch {
		case b >= '!' && b <= '~', b >= 0xa1 && b <= 0xac, b >= 0xae && b <= 0xff:
			m[b] = rune(b)
		default:
			m[b] = rune(256 + n)
			n++
		}
	}
	return m
}()

// encodeBytes spells s in the byte-level alphabet, as a vocabulary entry.
func encodeBytes(s string) string {
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		sb.WriteRune(byteToRune[s[i]])
	}
	return sb.String()
}

// vocab is a GPT-2 style byte-level BPE vocabulary under construction. Entries must be
// unique: llama.cpp asserts that no two tokens share a spelling.
type vocab struct {
	tokens []string
	types  []int32
	merges []string
	ids    map[string]int32
}

func newVocab() *vocab {
	v := &vocab{ids: map[string]int32{}}
	for b := 0; b < 256; b++ {
		v.add(string(byteToRune[b]), tokenNormal)
	}
	return v
}

func (v *vocab) add(spelling string, typ int32) int32 {
	id := int32(len(v.tokens))
	v.tokens = append(v.tokens, spelling)
	v.types = append(v.types, typ)
	v.ids[spelling] = id
	return id
}

func (v *vocab) has(spelling string) bool {
	_, ok := v.ids[spelling]
	return ok
}

// byteID is the token of a single byte.
func (v *vocab) byteID(b byte) int32 { return v.ids[string(byteToRune[b])] }

// addPiece adds text as output-only tokens: spellings that no merge produces, so they are
// emitted by the model but never appear in a tokenized prompt. Text already spelled by
// another token is split at a rune boundary into two fresh halves (each a token may have
// only one successor in a scripted model, and llama.cpp forbids duplicate spellings).
func (v *vocab) addPiece(text string) ([]int32, error) {
	if text == "" {
		return nil, nil
	}
	whole := encodeBytes(text)
	if len(text) >= 2 && !v.has(whole) {
		return []int32{v.add(whole, tokenNormal)}, nil
	}
	for k := 2; k <= len(text)-2; k++ {
		if !utf8.RuneStart(text[k]) {
			continue
		}
		a, b := encodeBytes(text[:k]), encodeBytes(text[k:])
		if a != b && !v.has(a) && !v.has(b) {
			return []int32{v.add(a, tokenNormal), v.add(b, tokenNormal)}, nil
		}
	}
	return nil, fmt.Errorf("modelgen: cannot give %q tokens of its own; make the scripted text longer or different", text)
}

// addWord adds a word of ASCII letters as one token reachable through BPE merges, so the
// word in a prompt tokenizes to exactly that token. Its prefixes must already be tokens.
func (v *vocab) addWord(word string) int32 {
	prefix := word[:len(word)-1]
	last := word[len(word)-1:]
	v.merges = append(v.merges, prefix+" "+last)
	return v.add(word, tokenNormal)
}
