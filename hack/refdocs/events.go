package main

import (
	"errors"
	"fmt"
	"go/ast"
	"go/types"
	"maps"
	"slices"
	"strings"
)

// The call that records an event: events.EventRecorder's
// Eventf(regarding, related, eventtype, reason, action, note, args...).
// events.EventRecorder is an alias of the interface of client-go's
// internal package, which declares the method.
const (
	recorderPackage = "k8s.io/client-go/tools/internal/events"
	recorderMethod  = "Eventf"
	// oldRecorderPackage is the older API of events, whose calls the page
	// does not follow.
	oldRecorderPackage = "k8s.io/client-go/tools/record"
	typeArg            = 2
	reasonArg          = 3
	actionArg          = 4
)

// conditionType is metav1.Condition, whose Type and Reason must be
// constants of the API.
const conditionType = "k8s.io/apimachinery/pkg/apis/meta/v1.Condition"

// eventReason is one reason of the events Berth records, with every type
// and action it is recorded with, and the constants that name it.
type eventReason struct {
	reason  string
	types   map[string]bool
	actions map[string]bool
	consts  []*types.Const
}

func eventsPage(c *code) (string, error) {
	reasons, err := eventReasons(c)
	if err := errors.Join(err, conditionLiterals(c)); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("## Events\n\n")
	b.WriteString("Each reason with the types and actions it is recorded with. A reason that is a condition type of a Workload is recorded when Berth sets the condition, and is described by it.\n\n")
	var rows [][]string
	for _, r := range reasons {
		var docs []string
		for _, k := range r.consts {
			d := c.constOf[k]
			docs = append(docs, withoutName(d.obj.Name(), prose(d.doc)))
		}
		rows = append(rows, []string{codeSpan(r.reason), codeList(r.types), codeList(r.actions), strings.Join(docs, " ")})
	}
	table(&b, []string{"reason", "type", "action", "description"}, rows)
	b.WriteString("## Conditions\n\n")
	b.WriteString("Each condition is set with the object's generation as its `observedGeneration`; its `lastTransitionTime` moves only when its status changes.\n\n")
	sections, err := conditionSections(c)
	for _, s := range sections {
		fmt.Fprintf(&b, "### %s\n\n", s.title)
		table(&b, []string{"value", "description"}, s.rows)
	}
	return b.String(), err
}

// eventReasons are the reasons of every event Berth records, sorted,
// found from the calls that record them. Each reason must be a constant
// with a doc comment.
func eventReasons(c *code) ([]*eventReason, error) {
	f := newFlow(c)
	byReason := map[string]*eventReason{}
	var errs []error
	for callee, calls := range f.calls {
		switch {
		case callee.Pkg() == nil:
			continue
		case callee.Pkg().Path() == oldRecorderPackage && (strings.HasSuffix(callee.Name(), "Event") || strings.HasSuffix(callee.Name(), "Eventf")):
			for _, call := range calls {
				errs = append(errs, fmt.Errorf("%s: record events with events.EventRecorder, whose calls the reference page follows", c.pos(call.expr.Pos())))
			}
			continue
		case callee.Pkg().Path() != recorderPackage || callee.Name() != recorderMethod:
			continue
		}
		for _, call := range calls {
			errs = append(errs, f.recordEvent(call, byReason))
		}
	}
	if len(byReason) == 0 {
		errs = append(errs, fmt.Errorf("no call of %s.%s found", recorderPackage, recorderMethod))
	}
	reasons := slices.SortedFunc(maps.Values(byReason), func(a, b *eventReason) int { return strings.Compare(a.reason, b.reason) })
	for _, r := range reasons {
		slices.SortFunc(r.consts, func(a, b *types.Const) int { return strings.Compare(a.Name(), b.Name()) })
		for _, k := range r.consts {
			if d := c.constOf[k]; d == nil || len(d.doc) == 0 {
				errs = append(errs, fmt.Errorf("%s: %s, the reason of an event, has no doc comment", c.pos(k.Pos()), k.Name()))
			}
		}
	}
	return reasons, errors.Join(errs...)
}

// recordEvent adds the reasons, types and actions of one call that
// records events to byReason.
func (f *flow) recordEvent(call call, byReason map[string]*eventReason) error {
	ways, err := f.argsOf(call, typeArg, reasonArg, actionArg)
	if err != nil {
		return err
	}
	for _, args := range ways {
		var vals [3][]value
		for i, a := range args {
			if vals[i], err = f.values(a); err != nil {
				return err
			}
		}
		for _, reason := range vals[1] {
			if reason.konst == nil {
				return fmt.Errorf("%s: the event reason %q is not a named constant", f.c.pos(args[1].e.Pos()), reason.s)
			}
			r := byReason[reason.s]
			if r == nil {
				r = &eventReason{reason: reason.s, types: map[string]bool{}, actions: map[string]bool{}}
				byReason[reason.s] = r
			}
			if !slices.Contains(r.consts, reason.konst) {
				r.consts = append(r.consts, reason.konst)
			}
			for _, t := range vals[0] {
				r.types[t.s] = true
			}
			for _, a := range vals[2] {
				r.actions[a.s] = true
			}
		}
	}
	return nil
}

// section is a table of condition types or reasons.
type section struct {
	title string
	rows  [][]string
}

// conditionSections are the groups of constants of the API whose comment
// says they are condition types or reasons, in the order of their file.
func conditionSections(c *code) ([]section, error) {
	var out []section
	var errs []error
	for _, d := range c.consts {
		if d.pkg.path != apiPackage || !isConditionBlock(d.block) {
			continue
		}
		title := strings.TrimSuffix(strings.Join(d.block, " "), ".")
		if len(out) == 0 || out[len(out)-1].title != title {
			out = append(out, section{title: title})
		}
		value, _ := stringValue(d)
		if len(d.doc) == 0 {
			errs = append(errs, fmt.Errorf("%s: %s has no doc comment", c.pos(d.obj.Pos()), d.obj.Name()))
		}
		s := &out[len(out)-1]
		s.rows = append(s.rows, []string{codeSpan(value), withoutName(d.obj.Name(), prose(d.doc))})
	}
	if len(out) == 0 {
		errs = append(errs, fmt.Errorf("%s has no group of constants whose comment starts with Condition types or Reasons", apiPackage))
	}
	return out, errors.Join(errs...)
}

func isConditionBlock(block []string) bool {
	return len(block) > 0 && (strings.HasPrefix(block[0], "Condition types") || strings.HasPrefix(block[0], "Reasons"))
}

// conditionLiterals fails on a metav1.Condition whose Type or Reason is
// written as a literal, or as a constant outside the API's, which the page
// would not list.
func conditionLiterals(c *code) error {
	var errs []error
	for _, p := range c.pkgs {
		for _, file := range p.files {
			ast.Inspect(file, func(n ast.Node) bool {
				lit, ok := n.(*ast.CompositeLit)
				if !ok || p.info.Types[lit].Type == nil || types.TypeString(p.info.Types[lit].Type, nil) != conditionType {
					return true
				}
				for _, elt := range lit.Elts {
					kv, ok := elt.(*ast.KeyValueExpr)
					if id, _ := kv.Key.(*ast.Ident); !ok || id == nil || (id.Name != "Type" && id.Name != "Reason") {
						continue
					}
					if err := c.checkConditionValue(p, kv.Value); err != nil {
						errs = append(errs, err)
					}
				}
				return true
			})
		}
	}
	return errors.Join(errs...)
}

func (c *code) checkConditionValue(p *pkg, e ast.Expr) error {
	k := constOf(p, ast.Unparen(e))
	if tv := p.info.Types[e]; tv.Value == nil {
		return nil // a variable: its values are the caller's
	}
	if d := c.constOf[k]; k == nil || d == nil || d.pkg.path != apiPackage || !isConditionBlock(d.block) {
		return fmt.Errorf("%s: %s: a condition's type and reason are constants of %s, in a group whose comment starts with Condition types or Reasons", c.pos(e.Pos()), types.ExprString(e), apiPackage)
	}
	return nil
}

// codeList is the keys of set in backquotes, sorted.
func codeList(set map[string]bool) string {
	var out []string
	for _, s := range slices.Sorted(maps.Keys(set)) {
		out = append(out, codeSpan(s))
	}
	return strings.Join(out, ", ")
}
