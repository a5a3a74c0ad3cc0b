package apicheck

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Packages are the public packages whose API is listed, as directories
// relative to the module root.
var Packages = []string{
	"admin", "assignor", "election", "offsets", "offsets/bolt", "offsets/consul", "offsets/etcd", "offsets/memory",
	"offsets/postgres", "rebalance", "shard", "shard/consul", "shard/etcd", "shard/memory", "worker", "worker/exec",
}

// List returns the exported declarations of the package in dir (test files
// excluded), one a line, sorted as go doc sorts them: constants,
// variables, functions, then each type with its exported fields or
// methods, constructors and methods.
func List(dir string) ([]string, error) {
	fset := token.NewFileSet()
	var files []*ast.File
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("apicheck: no Go files in %s: %w", dir, fs.ErrNotExist)
	}
	p, err := doc.NewFromFiles(fset, files, "example.com/"+filepath.ToSlash(dir))
	if err != nil {
		return nil, err
	}
	l := lister{fset: fset}
	for _, v := range p.Consts {
		l.values("const", v)
	}
	for _, v := range p.Vars {
		l.values("var", v)
	}
	for _, f := range p.Funcs {
		l.fn(f)
	}
	for _, t := range p.Types {
		l.typ(t)
	}
	return l.lines, l.err
}

type lister struct {
	fset  *token.FileSet
	lines []string
	err   error
}

func (l *lister) print(node any) string {
	var b bytes.Buffer
	if err := printer.Fprint(&b, l.fset, node); err != nil && l.err == nil {
		l.err = err
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

func (l *lister) values(kind string, v *doc.Value) {
	for _, s := range v.Decl.Specs {
		for _, n := range s.(*ast.ValueSpec).Names {
			if n.IsExported() {
				l.lines = append(l.lines, kind+" "+n.Name)
			}
		}
	}
}

func (l *lister) fn(f *doc.Func) {
	d := *f.Decl
	d.Doc, d.Body = nil, nil
	l.lines = append(l.lines, l.print(&d))
}

func (l *lister) typ(t *doc.Type) {
	for _, s := range t.Decl.Specs {
		ts := s.(*ast.TypeSpec)
		if !ts.Name.IsExported() {
			continue
		}
		switch u := ts.Type.(type) {
		case *ast.StructType:
			l.lines = append(l.lines, "type "+ts.Name.Name+" struct")
			for _, f := range u.Fields.List {
				l.member(ts.Name.Name, f)
			}
		case *ast.InterfaceType:
			l.lines = append(l.lines, "type "+ts.Name.Name+" interface")
			for _, f := range u.Methods.List {
				l.member(ts.Name.Name, f)
			}
		default:
			eq := " "
			if ts.Assign.IsValid() {
				eq = " = "
			}
			l.lines = append(l.lines, "type "+ts.Name.Name+l.typeParams(ts.TypeParams)+eq+l.print(ts.Type))
		}
	}
	for _, v := range t.Consts {
		l.values("const", v)
	}
	for _, v := range t.Vars {
		l.values("var", v)
	}
	for _, f := range t.Funcs {
		l.fn(f)
	}
	for _, f := range t.Methods {
		l.fn(f)
	}
}

// member lists an exported field or interface method of type owner; an
// embedded one is listed by its type.
func (l *lister) member(owner string, f *ast.Field) {
	typ := l.print(f.Type)
	if len(f.Names) == 0 {
		l.lines = append(l.lines, "    "+owner+" embeds "+typ)
		return
	}
	for _, n := range f.Names {
		if n.IsExported() {
			l.lines = append(l.lines, "    "+owner+"."+n.Name+" "+typ)
		}
	}
}

// typeParams prints a type's parameter list, "" when it has none.
func (l *lister) typeParams(fl *ast.FieldList) string {
	if fl == nil {
		return ""
	}
	var ps []string
	for _, f := range fl.List {
		var names []string
		for _, n := range f.Names {
			names = append(names, n.Name)
		}
		ps = append(ps, strings.Join(names, ", ")+" "+l.print(f.Type))
	}
	return "[" + strings.Join(ps, ", ") + "]"
}
