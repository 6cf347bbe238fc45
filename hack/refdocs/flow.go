package main

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/types"
	"slices"
)

// flow follows string values through Berth's code, from the constants to
// the arguments of a call: into variables and struct fields, out of the
// functions that return them, and from a parameter back to the arguments
// of each call of its function. It is enough for the few calls that
// record events, and says so when it is not.
type flow struct {
	c *code
	// calls are the calls of each declared function and method.
	calls map[*types.Func][]call
	// assigned are the expressions assigned to each variable and field.
	assigned map[*types.Var][]expr
	// paramOf is the function and index of each parameter.
	paramOf map[*types.Var]param
	// returns are the results of each return statement of each function.
	returns map[*types.Func][][]ast.Expr
	pkgOf   map[*types.Func]*pkg
}

// call is a call and the function it is made in (nil outside one).
type call struct {
	expr *ast.CallExpr
	in   *types.Func
	pkg  *pkg
}

// expr is an expression of a package; index is which result of a call
// with several it is, -1 for the expression's own value.
type expr struct {
	e     ast.Expr
	pkg   *pkg
	index int
}

type param struct {
	fn    *types.Func
	index int
}

// value is a string a flow ends in, and its constant when it is one.
type value struct {
	s     string
	konst *types.Const
}

func newFlow(c *code) *flow {
	f := &flow{c: c, calls: map[*types.Func][]call{}, assigned: map[*types.Var][]expr{},
		paramOf: map[*types.Var]param{}, returns: map[*types.Func][][]ast.Expr{}, pkgOf: map[*types.Func]*pkg{}}
	for _, p := range c.pkgs {
		for _, file := range p.files {
			for _, decl := range file.Decls {
				fd, ok := decl.(*ast.FuncDecl)
				if !ok {
					f.index(p, nil, nil, decl)
					continue
				}
				fn, _ := p.info.Defs[fd.Name].(*types.Func)
				if fn == nil || fd.Body == nil {
					continue
				}
				f.pkgOf[fn] = p
				params := fn.Type().(*types.Signature).Params()
				for i := range params.Len() {
					f.paramOf[params.At(i)] = param{fn, i}
				}
				f.index(p, fn, fn, fd.Body)
			}
		}
	}
	return f
}

// index notes the calls, assignments and returns of node. Its calls are
// made in fn, whose parameters a function literal may use; its returns
// are owner's (nil in a function literal, whose returns are its own).
func (f *flow) index(p *pkg, fn, owner *types.Func, node ast.Node) {
	ast.Inspect(node, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			f.index(p, fn, nil, n.Body)
			return false
		case *ast.CallExpr:
			if callee := calleeOf(p, n); callee != nil && fn != nil {
				f.calls[callee] = append(f.calls[callee], call{n, fn, p})
			}
		case *ast.AssignStmt:
			f.assign(p, n.Lhs, n.Rhs)
		case *ast.ValueSpec:
			lhs := make([]ast.Expr, len(n.Names))
			for i, name := range n.Names {
				lhs[i] = name
			}
			f.assign(p, lhs, n.Values)
		case *ast.KeyValueExpr:
			if id, ok := n.Key.(*ast.Ident); ok {
				if v, ok := p.info.Uses[id].(*types.Var); ok && v.IsField() {
					f.assigned[v] = append(f.assigned[v], expr{n.Value, p, -1})
				}
			}
		case *ast.ReturnStmt:
			if owner != nil {
				f.returns[owner] = append(f.returns[owner], n.Results)
			}
		}
		return true
	})
}

func (f *flow) assign(p *pkg, lhs, rhs []ast.Expr) {
	for i, l := range lhs {
		v := varOf(p, l)
		switch {
		case v == nil:
		case len(lhs) == len(rhs):
			f.assigned[v] = append(f.assigned[v], expr{rhs[i], p, -1})
		case len(rhs) == 1:
			f.assigned[v] = append(f.assigned[v], expr{rhs[0], p, i})
		}
	}
}

// argsOf are the arguments at idx of a call, once for each way the call
// is reached: where an argument is a parameter of the function the call
// is in, once for each call of that function, with its argument there.
// The reason and the type of one event so stay together.
func (f *flow) argsOf(c call, idx ...int) ([][]expr, error) {
	args := make([]expr, len(idx))
	for i, j := range idx {
		args[i] = expr{c.expr.Args[j], c.pkg, -1}
	}
	return f.expand(args, c.in, 0)
}

func (f *flow) expand(args []expr, in *types.Func, depth int) ([][]expr, error) {
	params := map[int]int{}
	for i, a := range args {
		if id, ok := a.e.(*ast.Ident); ok {
			if v, ok := a.pkg.info.Uses[id].(*types.Var); ok && in != nil && f.paramOf[v].fn == in {
				params[i] = f.paramOf[v].index
			}
		}
	}
	if len(params) == 0 {
		return [][]expr{args}, nil
	}
	if depth > 8 || len(f.calls[in]) == 0 {
		return nil, fmt.Errorf("%s: the arguments of %s cannot be followed to its calls", f.c.pos(args[0].e.Pos()), in.Name())
	}
	var out [][]expr
	for _, c := range f.calls[in] {
		next := slices.Clone(args)
		for i, k := range params {
			next[i] = expr{c.expr.Args[k], c.pkg, -1}
		}
		more, err := f.expand(next, c.in, depth+1)
		if err != nil {
			return nil, err
		}
		out = append(out, more...)
	}
	return out, nil
}

// values are the strings x can be.
func (f *flow) values(x expr) ([]value, error) {
	return f.follow(x, map[ast.Expr]bool{})
}

func (f *flow) follow(x expr, seen map[ast.Expr]bool) ([]value, error) {
	e := ast.Unparen(x.e)
	if tv := x.pkg.info.Types[e]; x.index < 0 && tv.Value != nil && tv.Value.Kind() == constant.String {
		return []value{{constant.StringVal(tv.Value), constOf(x.pkg, e)}}, nil
	}
	if seen[e] {
		return nil, nil
	}
	seen[e] = true
	var from []expr
	if v := varOf(x.pkg, e); v != nil && x.index < 0 {
		from = f.assigned[v]
		if p, ok := f.paramOf[v]; ok {
			for _, c := range f.calls[p.fn] {
				from = append(from, expr{c.expr.Args[p.index], c.pkg, -1})
			}
		}
	} else if ce, ok := e.(*ast.CallExpr); ok {
		from = f.results(x.pkg, ce, max(x.index, 0))
	}
	if len(from) == 0 {
		return nil, fmt.Errorf("%s: cannot tell what %s is: make it a constant", f.c.pos(e.Pos()), types.ExprString(e))
	}
	var out []value
	for _, y := range from {
		vs, err := f.follow(y, seen)
		if err != nil {
			return nil, err
		}
		out = append(out, vs...)
	}
	return out, nil
}

// results are the expressions a call of one of Berth's functions returns
// as its result i.
func (f *flow) results(p *pkg, ce *ast.CallExpr, i int) []expr {
	fn := calleeOf(p, ce)
	var out []expr
	for _, ret := range f.returns[fn] {
		switch {
		case len(ret) > i:
			out = append(out, expr{ret[i], f.pkgOf[fn], -1})
		case len(ret) == 1:
			// return g(): g's results are fn's.
			out = append(out, expr{ret[0], f.pkgOf[fn], i})
		}
	}
	return out
}

// calleeOf is the function or method a call calls, nil for a conversion,
// a built-in or a function value.
func calleeOf(p *pkg, ce *ast.CallExpr) *types.Func {
	var obj types.Object
	switch fun := ast.Unparen(ce.Fun).(type) {
	case *ast.Ident:
		obj = p.info.Uses[fun]
	case *ast.SelectorExpr:
		if sel := p.info.Selections[fun]; sel != nil {
			obj = sel.Obj()
		} else {
			obj = p.info.Uses[fun.Sel]
		}
	}
	if fn, ok := obj.(*types.Func); ok {
		return fn.Origin()
	}
	return nil
}

// varOf is the variable or field e names, if it names one.
func varOf(p *pkg, e ast.Expr) *types.Var {
	var obj types.Object
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		obj = p.info.Defs[e]
		if obj == nil {
			obj = p.info.Uses[e]
		}
	case *ast.SelectorExpr:
		if sel := p.info.Selections[e]; sel != nil {
			obj = sel.Obj()
		} else {
			obj = p.info.Uses[e.Sel]
		}
	}
	v, _ := obj.(*types.Var)
	return v
}

// constOf is the constant e names, if it names one.
func constOf(p *pkg, e ast.Expr) *types.Const {
	var obj types.Object
	switch e := e.(type) {
	case *ast.Ident:
		obj = p.info.Uses[e]
	case *ast.SelectorExpr:
		obj = p.info.Uses[e.Sel]
	}
	k, _ := obj.(*types.Const)
	return k
}
