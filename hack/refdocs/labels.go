package main

import (
	"errors"
	"fmt"
	"go/ast"
	"go/constant"
	"go/token"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// apiPackage is the API whose constants the pages list.
const apiPackage = module + "/apis/berth/v1alpha1"

var (
	// berthKey is a key of Berth's, as the site's claims test reads them.
	berthKey = regexp.MustCompile(`^berth\.dev/[a-z0-9][a-z0-9.-]*$`)
	// apiVersion is a berth.dev/ string that is an API version, not a key.
	apiVersion = regexp.MustCompile(`^berth\.dev/v[0-9]+((alpha|beta)[0-9]+)?$`)
)

// notKeys are the berth.dev/ names outside the API that no object
// carries, by package and constant, with what they are.
var notKeys = map[string]string{
	module + "/pkg/controller.localQueueIndex": "the cache's index of Workloads by LocalQueue",
}

// keyKinds are the kinds of key in the order of the page, each named by
// the suffix of its constants' names.
var keyKinds = []struct{ suffix, title string }{
	{"Label", "Labels"},
	{"Annotation", "Annotations"},
	{"Gate", "Scheduling gates"},
	{"Finalizer", "Finalizers"},
	{"ControllerName", "Admission check controller names"},
}

// setByMarker says who sets a key: +berth:setBy=user, Berth, or both
// (user,Berth).
const setByMarker = "berth:setBy"

// key is one of Berth's keys.
type key struct {
	name, value, kind, setBy string
	doc                      []string
}

func labelsPage(c *code) (string, error) {
	keys, err := apiKeys(c)
	if err := errors.Join(err, keysOutsideAPI(c)); err != nil {
		return "", err
	}
	var b strings.Builder
	for _, kind := range keyKinds {
		var rows [][]string
		for _, k := range keys {
			if k.kind == kind.suffix {
				rows = append(rows, []string{codeSpan(k.value), k.setBy, withoutName(k.name, prose(k.doc))})
			}
		}
		if len(rows) > 0 {
			fmt.Fprintf(&b, "## %s\n\n", kind.title)
			table(&b, []string{"key", "set by", "description"}, rows)
		}
	}
	return b.String(), nil
}

// withoutName is a doc comment for readers of the page, who know the key
// and not its Go name: "QueueNameLabel names the LocalQueue" becomes
// "Names the LocalQueue", "ManagedLabel is set to" becomes "Set to".
func withoutName(name, doc string) string {
	rest, ok := strings.CutPrefix(doc, name+" ")
	if !ok {
		return doc
	}
	for _, verb := range []string{"is ", "means "} {
		rest = strings.TrimPrefix(rest, verb)
	}
	return strings.ToUpper(rest[:1]) + rest[1:]
}

// apiKeys are the berth.dev/ keys of the API, sorted. Each needs a doc
// comment, a name that says its kind and a marker that says who sets it.
func apiKeys(c *code) ([]key, error) {
	var keys []key
	var errs []error
	for _, d := range c.consts {
		value, ok := stringValue(d)
		if d.pkg.path != apiPackage || !ok || !berthKey.MatchString(value) || apiVersion.MatchString(value) {
			continue
		}
		k := key{name: d.obj.Name(), value: value, doc: d.doc}
		for _, kind := range keyKinds {
			if strings.HasSuffix(d.obj.Name(), kind.suffix) {
				k.kind = kind.suffix
			}
		}
		var err error
		k.setBy, err = setBy(d.markers)
		switch {
		case k.kind == "":
			err = fmt.Errorf("its name ends in none of Label, Annotation, Gate, Finalizer, ControllerName")
		case len(d.doc) == 0:
			err = errors.New("it has no doc comment")
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %s (%s): %w", c.pos(d.obj.Pos()), d.obj.Name(), value, err))
		}
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int { return strings.Compare(a.value, b.value) })
	return keys, errors.Join(errs...)
}

// setBy reads the +berth:setBy marker.
func setBy(markers []string) (string, error) {
	for _, m := range markers {
		value, ok := strings.CutPrefix(m, setByMarker+"=")
		if !ok {
			continue
		}
		who := strings.Split(value, ",")
		for _, w := range who {
			if w != "user" && w != "Berth" {
				return "", fmt.Errorf("+%s=%s: want user, Berth or user,Berth", setByMarker, value)
			}
		}
		return strings.Join(who, ", "), nil
	}
	return "", fmt.Errorf("no +%s marker says who sets it", setByMarker)
}

// keysOutsideAPI fails on a berth.dev/ key written outside the API: a key
// is part of the API, documented where users find the others.
func keysOutsideAPI(c *code) error {
	var errs []error
	for _, p := range c.pkgs {
		if p.path == apiPackage {
			continue
		}
		// The values of the constants of notKeys.
		allowed := map[ast.Expr]bool{}
		for _, f := range p.files {
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.ValueSpec:
					for i, name := range n.Names {
						if _, ok := notKeys[p.path+"."+name.Name]; ok && i < len(n.Values) {
							allowed[n.Values[i]] = true
						}
					}
				case *ast.BasicLit:
					s, err := strconv.Unquote(n.Value)
					if n.Kind == token.STRING && err == nil && berthKey.MatchString(s) && !apiVersion.MatchString(s) && !allowed[n] {
						errs = append(errs, fmt.Errorf("%s: %q: a key of Berth's is a constant of %s, with a doc comment and +%s", c.pos(n.Pos()), s, apiPackage, setByMarker))
					}
				}
				return true
			})
		}
	}
	return errors.Join(errs...)
}

// stringValue is the value of a string constant.
func stringValue(d *constDecl) (string, bool) {
	if d.obj.Val().Kind() != constant.String {
		return "", false
	}
	return constant.StringVal(d.obj.Val()), true
}
