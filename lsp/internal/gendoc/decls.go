package main

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/frognano/frognano/lsp"
)

// setting is one lsp.SettingDoc with its JSON type resolved.
type setting struct {
	lsp.SettingDoc
	typ string // JSON schema type: string, integer, number, boolean, object
}

// decls is everything the generated files say.
type decls struct {
	settings []setting // in SettingDocs' order
	actions  []lsp.ActionDoc
}

// declarations pairs each SettingDoc with its field of lsp.Settings, and checks that the two
// agree: every field is declared once, and every server setting is a field.
func declarations() (*decls, error) {
	return declarationsOf(reflect.TypeFor[lsp.Settings](), lsp.SettingDocs, lsp.ActionDocs())
}

func declarationsOf(st reflect.Type, docs []lsp.SettingDoc, actions []lsp.ActionDoc) (*decls, error) {
	fields := map[string]reflect.Type{}
	var order []string
	for i := range st.NumField() {
		f := st.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			return nil, fmt.Errorf("lsp.Settings.%s has no JSON name", f.Name)
		}
		fields[name] = f.Type
		order = append(order, name)
	}
	d := &decls{actions: actions}
	seen := map[string]bool{}
	for _, s := range docs {
		if seen[s.Key] {
			return nil, fmt.Errorf("setting %s is declared twice in lsp.SettingDocs", s.Key)
		}
		seen[s.Key] = true
		typ := s.Type
		if s.Editor == "" {
			ft, ok := fields[s.Key]
			if !ok {
				return nil, fmt.Errorf("lsp.SettingDocs declares %s for the server, but lsp.Settings has no field with that JSON name", s.Key)
			}
			if typ = jsonType(ft); typ == "" {
				return nil, fmt.Errorf("lsp.Settings field %s: no JSON type for Go type %s", s.Key, ft)
			}
			if s.Type != "" && s.Type != typ {
				return nil, fmt.Errorf("lsp.SettingDocs gives %s type %s, its field is %s", s.Key, s.Type, typ)
			}
		} else if typ == "" {
			return nil, fmt.Errorf("lsp.SettingDocs: the editor setting %s needs a Type", s.Key)
		}
		if s.Doc == "" {
			return nil, fmt.Errorf("lsp.SettingDocs: %s has no Doc", s.Key)
		}
		d.settings = append(d.settings, setting{s, typ})
	}
	for _, name := range order {
		if !seen[name] {
			return nil, fmt.Errorf("lsp.Settings field %s is not declared in lsp.SettingDocs: add it there (with its Doc and Default), then run go generate ./lsp", name)
		}
	}
	return d, nil
}

func jsonType(t reflect.Type) string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Int, reflect.Int32, reflect.Int64:
		return "integer"
	case reflect.Float64:
		return "number"
	case reflect.Bool:
		return "boolean"
	case reflect.Map, reflect.Struct:
		return "object"
	}
	return ""
}

// server lists the server's settings (the "frognano" section), in order.
func (d *decls) server() []setting {
	var out []setting
	for _, s := range d.settings {
		if s.Editor == "" {
			out = append(out, s)
		}
	}
	return out
}

// forEditor lists the settings an editor shows: the server's and its own.
func (d *decls) forEditor(editor string) []setting {
	var out []setting
	for _, s := range d.settings {
		if s.Editor == "" || s.Editor == editor {
			out = append(out, s)
		}
	}
	return out
}

// actionIDs is the list of action ids as Markdown code, for the actions setting's doc.
func (d *decls) actionIDs() string {
	var ids []string
	for _, a := range d.actions {
		ids = append(ids, "`"+a.ID+"`")
	}
	return strings.Join(ids, ", ")
}

// doc is a setting's description; the actions setting's names the ids.
func (d *decls) doc(s setting) string {
	if s.Key == "actions" {
		return s.Doc + " Ids: " + d.actionIDs() + "."
	}
	return s.Doc
}
