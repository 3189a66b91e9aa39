// Command gendoc writes what the editors and the READMEs declare about the server's settings
// and code actions from their one declaration in Go (lsp.SettingDocs, lsp.Settings and the
// actions table, lsp.ActionDocs), as gopls's doc generator and rust-analyzer's xtask do. Run it
// with `go generate ./lsp`; TestGeneratedFilesAreCurrent fails while a written file is stale.
//
// It writes whole files (the extension's src/server.gen.ts, the Neovim plugin's
// lua/frognano/server.lua) and parts of others, leaving the rest byte for byte: package.json's
// contributes.configuration and its restricted settings, and the READMEs' sections between
// "<!-- BEGIN GENERATED: name ... -->" and "<!-- END GENERATED: name -->".
package main

import (
	"bytes"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("gendoc: ")
	root, err := repoRoot()
	if err != nil {
		log.Fatal(err)
	}
	files, err := generate(root)
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range files {
		p := filepath.Join(root, f.path)
		old, _ := os.ReadFile(p)
		if bytes.Equal(old, f.content) {
			continue
		}
		if err := os.WriteFile(p, f.content, 0o644); err != nil {
			log.Fatal(err)
		}
		log.Printf("wrote %s", f.path)
	}
}

// repoRoot is the folder holding go.mod, above the current one (go generate runs in lsp/).
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the current folder: run it with `go generate ./lsp` in the repository")
		}
		dir = parent
	}
}

// file is one generated file, by its path relative to the repository root.
type file struct {
	path    string
	content []byte
}

// generate computes every generated file from the declarations and, for the files it writes
// only part of, their current content under root.
func generate(root string) ([]file, error) {
	decl, err := declarations()
	if err != nil {
		return nil, err
	}
	read := func(rel string) ([]byte, error) { return os.ReadFile(filepath.Join(root, rel)) }
	var out []file
	add := func(rel string, content []byte, err error) error {
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		out = append(out, file{rel, content})
		return nil
	}
	if err := add("editors/vscode/src/server.gen.ts", typescript(decl), nil); err != nil {
		return nil, err
	}
	if err := add("editors/nvim/lua/frognano/server.lua", lua(decl), nil); err != nil {
		return nil, err
	}
	for _, part := range []struct {
		path     string
		generate func(decl *decls, old []byte) ([]byte, error)
	}{
		{"editors/vscode/package.json", packageJSON},
		{"README.md", rootReadme},
		{"editors/vscode/README.md", vscodeReadme},
	} {
		old, err := read(part.path)
		if err != nil {
			return nil, err
		}
		content, err := part.generate(decl, old)
		if err := add(part.path, content, err); err != nil {
			return nil, err
		}
	}
	return out, nil
}
