// Command apiref writes the API reference pages of the site from the doc
// comments of apis/: every type of a package, and every field with its JSON
// name, its type (linked when the package defines it), whether it is
// optional, its default and its limits, and what its comment says.
//
//	go run ./hack/apiref -pkg apis/berth/v1alpha1 -title "API reference" -weight 95 -out site/content/reference-api.md
//
// It is Berth's own because the generators that exist (crd-ref-docs,
// gen-crd-api-reference-docs) bring templates and configuration larger
// than this file, and the site wants plain Markdown its link check reads.
// `make verify` regenerates the pages and fails when they differ.
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

func main() {
	pkg := flag.String("pkg", "", "The package's folder.")
	title := flag.String("title", "", "The page's title.")
	weight := flag.Int("weight", 100, "The page's place in the site's navigation.")
	intro := flag.String("intro", "", "The page's first paragraph.")
	out := flag.String("out", "", "The page to write.")
	flag.Parse()
	page, err := render(*pkg, *title, *intro, *weight)
	if err == nil {
		err = os.WriteFile(*out, []byte(page), 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "apiref:", err)
		os.Exit(1)
	}
}

// typeDoc is one type of the package.
type typeDoc struct {
	name   string
	doc    []string
	root   bool
	fields []fieldDoc
	// values are the constants of a string type.
	values []string
}

type fieldDoc struct {
	name, typ string
	doc       []string
	markers   []string
}

// parseFiles parses the folder's Go files in name order, generated ones
// left out.
func parseFiles(dir string) ([]*ast.File, error) {
	fset := token.NewFileSet()
	// The folder's files in name order, generated ones left out; apis/
	// has no build tags, so no file is for another platform.
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var files []*ast.File
	for _, path := range paths {
		base := filepath.Base(path)
		if strings.HasPrefix(base, "zz_") || strings.HasSuffix(base, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

// collectTypes lists the exported types of files, the kinds first, with
// their fields and, for string types, their constants.
func collectTypes(files []*ast.File) ([]*typeDoc, map[string]*typeDoc) {
	typesByName := map[string]*typeDoc{}
	var order []*typeDoc
	for _, f := range files {
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok {
				continue
			}
			switch gd.Tok {
			case token.TYPE:
				for _, spec := range gd.Specs {
					ts := spec.(*ast.TypeSpec)
					if !ts.Name.IsExported() || strings.HasSuffix(ts.Name.Name, "List") {
						continue
					}
					comment := ts.Doc
					if comment == nil {
						comment = gd.Doc
					}
					doc, markers := splitComment(comment)
					t := &typeDoc{name: ts.Name.Name, doc: doc, root: slices.Contains(markers, "kubebuilder:object:root=true")}
					if st, ok := ts.Type.(*ast.StructType); ok {
						t.fields = fieldsOf(st)
					}
					typesByName[t.name] = t
					order = append(order, t)
				}
			case token.CONST:
				for _, spec := range gd.Specs {
					vs := spec.(*ast.ValueSpec)
					if id, ok := vs.Type.(*ast.Ident); ok && len(vs.Values) == 1 {
						if t := typesByName[id.Name]; t != nil {
							if lit, ok := vs.Values[0].(*ast.BasicLit); ok {
								t.values = append(t.values, lit.Value)
							}
						}
					}
				}
			}
		}
	}
	// The kinds first, in the order of their files, then the types they
	// are made of.
	slices.SortStableFunc(order, func(a, b *typeDoc) int {
		switch {
		case a.root && !b.root:
			return -1
		case b.root && !a.root:
			return 1
		}
		return 0
	})

	return order, typesByName
}

func render(dir, title, intro string, weight int) (string, error) {
	files, err := parseFiles(dir)
	if err != nil {
		return "", err
	}
	order, typesByName := collectTypes(files)
	var b strings.Builder
	fmt.Fprintf(&b, "---\ntitle: %s\nweight: %d\n---\n\n", title, weight)
	fmt.Fprintf(&b, "This page is generated from the doc comments of `%s` (hack/apiref).\n\n", filepath.ToSlash(dir))
	if intro != "" {
		fmt.Fprintf(&b, "%s\n\n", intro)
	}
	for _, t := range order {
		fmt.Fprintf(&b, "## %s\n\n", t.name)
		if t.root {
			b.WriteString("*Kind.*\n\n")
		}
		if len(t.doc) > 0 {
			fmt.Fprintf(&b, "%s\n\n", strings.Join(t.doc, "\n"))
		}
		if len(t.values) > 0 {
			fmt.Fprintf(&b, "One of: `%s`.\n\n", strings.Join(unquoted(t.values), "`, `"))
		}
		if len(t.fields) == 0 {
			continue
		}
		b.WriteString("| field | type | description |\n|---|---|---|\n")
		for _, f := range t.fields {
			typ := "`" + f.typ + "`"
			if base := strings.TrimLeft(f.typ, "[]*"); typesByName[base] != nil && base != t.name {
				typ = fmt.Sprintf("[%s](#%s)", f.typ, strings.ToLower(base))
				typ = strings.ReplaceAll(typ, "*", `\*`)
			}
			desc := strings.Join(f.doc, " ")
			if len(f.markers) > 0 {
				desc = "*" + strings.Join(f.markers, "; ") + ".* " + desc
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s |\n", f.name, typ, cell(desc))
		}
		b.WriteString("\n")
	}
	return b.String(), nil
}

// fieldsOf lists a struct's serialised fields; embedded ones with inline
// JSON are named as their type.
func fieldsOf(st *ast.StructType) []fieldDoc {
	var out []fieldDoc
	for _, f := range st.Fields.List {
		tag := ""
		if f.Tag != nil {
			s, _ := strconv.Unquote(f.Tag.Value)
			tag = reflect.StructTag(s).Get("json")
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		typ := types.ExprString(f.Type)
		if name == "" {
			if len(f.Names) > 0 {
				name = f.Names[0].Name
			} else if strings.Contains(opts, "inline") {
				if strings.HasPrefix(typ, "metav1.") {
					continue // TypeMeta: apiVersion and kind
				}
				name = "(inline)"
			} else {
				continue
			}
		}
		doc, markers := splitComment(f.Doc)
		out = append(out, fieldDoc{name: name, typ: typ, doc: doc, markers: describe(markers, strings.Contains(opts, "omitempty"))})
	}
	return out
}

// splitComment separates a comment's text from its markers (+...).
func splitComment(cg *ast.CommentGroup) (text, markers []string) {
	if cg == nil {
		return nil, nil
	}
	for _, line := range strings.Split(cg.Text(), "\n") {
		line = strings.TrimSpace(line)
		if m, ok := strings.CutPrefix(line, "+"); ok {
			markers = append(markers, m)
			continue
		}
		text = append(text, line)
	}
	for len(text) > 0 && text[len(text)-1] == "" {
		text = text[:len(text)-1]
	}
	return text, markers
}

// describe turns a field's markers into what a reader needs: optional or
// required, its default, its limits.
func describe(markers []string, omitempty bool) []string {
	var out []string
	optional := omitempty
	for _, m := range markers {
		key, value, _ := strings.Cut(m, "=")
		switch key {
		case "optional":
			optional = true
		case "required", "kubebuilder:validation:Required":
			optional = false
		case "kubebuilder:default":
			out = append(out, "default "+value)
		case "kubebuilder:validation:Minimum":
			out = append(out, "minimum "+value)
		case "kubebuilder:validation:Maximum":
			out = append(out, "maximum "+value)
		case "kubebuilder:validation:MaxItems":
			out = append(out, "at most "+value+" items")
		case "kubebuilder:validation:MaxLength":
			out = append(out, "at most "+value+" characters")
		case "kubebuilder:validation:Enum":
			out = append(out, "one of "+strings.ReplaceAll(value, ";", ", "))
		case "kubebuilder:validation:Pattern":
			out = append(out, "matches `"+strings.Trim(value, "`")+"`")
		}
	}
	if optional {
		return append([]string{"optional"}, out...)
	}
	return append([]string{"required"}, out...)
}

func unquoted(values []string) []string {
	out := make([]string, 0, len(values))
	for _, v := range values {
		if s, err := strconv.Unquote(v); err == nil {
			v = s
		}
		out = append(out, v)
	}
	return out
}

// cell makes text fit in a table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.Join(strings.Fields(s), " ")
}
