//go:build !bare

package main

// The rest of what the design names for the language server, linked (their package
// initialisation runs) but not used: the cost of carrying them.
import (
	_ "net/http"

	_ "github.com/fsnotify/fsnotify"
	_ "github.com/ollama/ollama/api"
)
