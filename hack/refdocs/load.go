package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// module is Berth's module path.
const module = "github.com/berth-dev/berth"

// code is Berth's packages, type-checked from their sources, with the
// packages they import read from the compiler's export data.
type code struct {
	root string
	fset *token.FileSet
	// pkgs are Berth's packages in the order of their imports: a package
	// comes after those it imports.
	pkgs   []*pkg
	byPath map[string]*pkg
	// consts are the package-level constants of every package, in the
	// order of their files.
	consts  []*constDecl
	constOf map[types.Object]*constDecl
}

// pkg is one of Berth's packages.
type pkg struct {
	path string
	// dir is the package's folder relative to the repository's root.
	dir   string
	files []*ast.File
	types *types.Package
	info  *types.Info
}

// constDecl is a package-level constant and what its comments say.
type constDecl struct {
	obj *types.Const
	pkg *pkg
	// doc is the constant's comment without its markers; block is the
	// comment of the const ( ... ) group it is in.
	doc, markers, block []string
}

// listed is what go list says of a package.
type listed struct {
	ImportPath, Dir, Export string
	GoFiles                 []string
	Module                  *struct{ Path string }
}

// load type-checks the packages of root that match the patterns. It runs
// go list, which compiles what they import as go build does, without cgo
// and with the GOFLAGS of the environment (the Makefile's -trimpath), so
// that it finds the compilation of `make build` in the build cache.
func load(root string, patterns ...string) (*code, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	args := append([]string{"list", "-export", "-deps", "-json=ImportPath,Dir,Export,GoFiles,Module"}, patterns...)
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w: %s", err, stderr.String())
	}
	c := &code{root: root, fset: token.NewFileSet(), byPath: map[string]*pkg{}, constOf: map[types.Object]*constDecl{}}
	exports := map[string]string{}
	imp := importer.ForCompiler(c.fset, "gc", func(path string) (io.ReadCloser, error) {
		if exports[path] == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(exports[path])
	})
	conf := types.Config{Importer: importerFunc(func(path string) (*types.Package, error) {
		if p := c.byPath[path]; p != nil {
			return p.types, nil
		}
		return imp.Import(path)
	})}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var l listed
		if err := dec.Decode(&l); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		exports[l.ImportPath] = l.Export
		if l.Module == nil || l.Module.Path != module {
			continue
		}
		// go list names a package after those it imports, so each of
		// Berth's imports is checked before the package that needs it.
		if err := c.check(&conf, l); err != nil {
			return nil, err
		}
	}
	return c, nil
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }

// check parses and type-checks one of Berth's packages.
func (c *code) check(conf *types.Config, l listed) error {
	rel, err := filepath.Rel(c.root, l.Dir)
	if err != nil {
		return err
	}
	p := &pkg{path: l.ImportPath, dir: filepath.ToSlash(rel)}
	for _, name := range l.GoFiles {
		f, err := parser.ParseFile(c.fset, filepath.Join(l.Dir, name), nil, parser.ParseComments)
		if err != nil {
			return err
		}
		p.files = append(p.files, f)
	}
	return c.add(conf, p)
}

// add type-checks a parsed package and adds it to the code.
func (c *code) add(conf *types.Config, p *pkg) error {
	p.info = &types.Info{
		Types:      map[ast.Expr]types.TypeAndValue{},
		Defs:       map[*ast.Ident]types.Object{},
		Uses:       map[*ast.Ident]types.Object{},
		Selections: map[*ast.SelectorExpr]*types.Selection{},
	}
	var err error
	if p.types, err = conf.Check(p.path, c.fset, p.files, p.info); err != nil {
		return fmt.Errorf("%s: %w", p.dir, err)
	}
	c.pkgs = append(c.pkgs, p)
	c.byPath[p.path] = p
	c.collectConsts(p)
	return nil
}

// collectConsts notes the package-level constants of p with their
// comments.
func (c *code) collectConsts(p *pkg) {
	for _, f := range p.files {
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			block, _ := splitComment(gd.Doc)
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				doc, markers := splitComment(vs.Doc)
				if vs.Doc == nil && len(gd.Specs) == 1 {
					// const X = ...: the comment is the declaration's.
					doc, markers = splitComment(gd.Doc)
					block = nil
				}
				for _, name := range vs.Names {
					obj, ok := p.info.Defs[name].(*types.Const)
					if !ok {
						continue
					}
					d := &constDecl{obj: obj, pkg: p, doc: doc, markers: markers, block: block}
					c.consts = append(c.consts, d)
					c.constOf[obj] = d
				}
			}
		}
	}
}

// pos is where a node is, relative to the repository's root.
func (c *code) pos(p token.Pos) string {
	position := c.fset.Position(p)
	if rel, err := filepath.Rel(c.root, position.Filename); err == nil {
		position.Filename = filepath.ToSlash(rel)
	}
	return position.String()
}

// splitComment separates a comment's text from its markers (lines that
// start with +).
func splitComment(cg *ast.CommentGroup) (text, markers []string) {
	if cg == nil {
		return nil, nil
	}
	for _, line := range strings.Split(strings.TrimSpace(cg.Text()), "\n") {
		line = strings.TrimSpace(line)
		if m, ok := strings.CutPrefix(line, "+"); ok {
			markers = append(markers, m)
			continue
		}
		text = append(text, line)
	}
	return text, markers
}
