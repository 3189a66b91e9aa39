//go:build !jsonrpc2poison

package lsp

// frognanoTags are the build tags of this test binary that the frognano binary the
// process tests run must share: none here (see tags_poison_test.go).
var frognanoTags []string
