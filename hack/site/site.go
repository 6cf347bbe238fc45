package main

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"sigs.k8s.io/yaml"
)

// page is one page of the site: site/content/<slug>.md, rendered.
type page struct {
	Slug   string
	Title  string
	Weight int
	// Body is the page's Markdown once its includes are expanded.
	Body []byte
	// HTML is the rendered body.
	HTML template.HTML
	// ids are the anchors of the page's headings.
	ids map[string]bool
	// links are the destinations of the page's links, as written.
	links []string
	// images are the paths of the page's images, as written.
	images []string
}

// frontMatter is what a page says of itself above its body.
type frontMatter struct {
	Title  string `json:"title"`
	Weight int    `json:"weight"`
}

// site is every page, in the order of the navigation.
type site struct {
	Pages []*page
}

// build reads the pages of root/site/content, expands their includes from
// root and renders them. It fails on a page without a title, an include of
// a file that is not there, and a link to a page or heading that is not.
func build(root string) (*site, error) {
	paths, err := filepath.Glob(filepath.Join(root, "site", "content", "*.md"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no pages in %s", filepath.Join(root, "site", "content"))
	}
	s := &site{}
	var errs []error
	for _, path := range paths {
		p, err := load(root, path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		s.Pages = append(s.Pages, p)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	slices.SortFunc(s.Pages, func(a, b *page) int {
		return cmp.Or(cmp.Compare(a.Weight, b.Weight), cmp.Compare(a.Slug, b.Slug))
	})
	if err := s.checkLinks(); err != nil {
		return nil, err
	}
	return s, nil
}

// load reads and renders one page.
func load(root, path string) (*page, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	slug := strings.TrimSuffix(filepath.Base(path), ".md")
	fm, body, err := splitFrontMatter(src)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", slug+".md", err)
	}
	if fm.Title == "" {
		return nil, fmt.Errorf("%s: the front matter has no title", slug+".md")
	}
	body, err = expandIncludes(root, body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", slug+".md", err)
	}
	p := &page{Slug: slug, Title: fm.Title, Weight: fm.Weight, Body: body, ids: map[string]bool{}}
	if err := p.render(); err != nil {
		return nil, fmt.Errorf("%s: %w", slug+".md", err)
	}
	var errs []error
	for _, img := range p.images {
		name, ok := strings.CutPrefix(img, "images/")
		if !ok || name != filepath.Base(name) {
			errs = append(errs, fmt.Errorf("%s.md: image %q: not a file of site/images", slug, img))
		} else if _, err := os.Stat(filepath.Join(root, "site", "images", name)); err != nil {
			errs = append(errs, fmt.Errorf("%s.md: image %q: %w", slug, img, err))
		}
	}
	return p, errors.Join(errs...)
}

// splitFrontMatter parses the YAML between the first two "---" lines of
// src, and returns what follows.
func splitFrontMatter(src []byte) (frontMatter, []byte, error) {
	var fm frontMatter
	rest, ok := bytes.CutPrefix(src, []byte("---\n"))
	if !ok {
		return fm, nil, errors.New(`the page does not start with front matter ("---")`)
	}
	head, body, ok := bytes.Cut(rest, []byte("\n---\n"))
	if !ok {
		return fm, nil, errors.New(`the front matter has no closing "---"`)
	}
	if err := yaml.UnmarshalStrict(head, &fm); err != nil {
		return fm, nil, fmt.Errorf("front matter: %w", err)
	}
	return fm, body, nil
}

// includeLine is a line that shows a file of the repository:
// {{include "config/samples/05-job.yaml"}}.
var includeLine = regexp.MustCompile(`(?m)^\{\{include "([^"]+)"\}\}[ \t]*$`)

// expandIncludes replaces each include line of body with a code block
// holding the file it names, read from root, so that the pages show the
// samples and configuration as they are.
func expandIncludes(root string, body []byte) ([]byte, error) {
	var errs []error
	out := includeLine.ReplaceAllFunc(body, func(line []byte) []byte {
		name := string(includeLine.FindSubmatch(line)[1])
		if !filepath.IsLocal(name) {
			errs = append(errs, fmt.Errorf("include %q: not a path inside the repository", name))
			return line
		}
		content, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			errs = append(errs, fmt.Errorf("include %q: %w", name, err))
			return line
		}
		fence := "```"
		for bytes.Contains(content, []byte(fence)) {
			fence += "`"
		}
		lang := strings.TrimPrefix(filepath.Ext(name), ".")
		var b bytes.Buffer
		fmt.Fprintf(&b, "`%s`:\n\n%s%s\n%s", name, fence, lang, content)
		if !bytes.HasSuffix(content, []byte("\n")) {
			b.WriteByte('\n')
		}
		b.WriteString(fence)
		return b.Bytes()
	})
	return out, errors.Join(errs...)
}

var markdown = goldmark.New(
	goldmark.WithExtensions(extension.GFM),
	goldmark.WithParserOptions(parser.WithAutoHeadingID()),
)

// render turns the page's body into HTML, noting its headings' anchors
// and its links, and pointing links to other pages at their HTML.
func (p *page) render() error {
	doc := markdown.Parser().Parse(text.NewReader(p.Body))
	err := ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Heading:
			if id, ok := n.AttributeString("id"); ok {
				p.ids[string(id.([]byte))] = true
			}
		case *ast.Link:
			dest := string(n.Destination)
			p.links = append(p.links, dest)
			n.Destination = []byte(htmlDestination(dest))
		case *ast.Image:
			p.images = append(p.images, string(n.Destination))
		case *ast.RawHTML, *ast.HTMLBlock:
			return ast.WalkStop, errors.New("raw HTML is not allowed: write Markdown")
		}
		return ast.WalkContinue, nil
	})
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := markdown.Renderer().Render(&b, p.Body, doc); err != nil {
		return err
	}
	// Safe as HTML: goldmark escapes text, and raw HTML is refused above.
	p.HTML = template.HTML(b.String())
	return nil
}

// htmlDestination is dest with a link to a page's Markdown turned into a
// link to its HTML.
func htmlDestination(dest string) string {
	u, err := url.Parse(dest)
	if err != nil || u.Scheme != "" || !strings.HasSuffix(u.Path, ".md") {
		return dest
	}
	u.Path = strings.TrimSuffix(u.Path, ".md") + ".html"
	return u.String()
}

// checkLinks fails on every link to a page or a heading the site does not
// have, and on relative links that are not to a page: the site is
// published on its own, without the repository around it.
func (s *site) checkLinks() error {
	bySlug := map[string]*page{}
	for _, p := range s.Pages {
		bySlug[p.Slug] = p
	}
	var errs []error
	for _, p := range s.Pages {
		for _, dest := range p.links {
			u, err := url.Parse(dest)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s.md: link %q: %w", p.Slug, dest, err))
				continue
			}
			if u.Scheme != "" {
				continue // another site
			}
			target := p
			if u.Path != "" {
				slug, ok := strings.CutSuffix(u.Path, ".md")
				target = bySlug[slug]
				if !ok || target == nil {
					errs = append(errs, fmt.Errorf("%s.md: link %q: no such page", p.Slug, dest))
					continue
				}
			}
			if u.Fragment != "" && !target.ids[u.Fragment] {
				errs = append(errs, fmt.Errorf("%s.md: link %q: %s.md has no heading #%s", p.Slug, dest, target.Slug, u.Fragment))
			}
		}
	}
	return errors.Join(errs...)
}

// write renders every page with root/site/layout.html into dir, with the
// stylesheet and site/images next to them.
func (s *site) write(root, dir string) error {
	layout, err := template.ParseFiles(filepath.Join(root, "site", "layout.html"))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, p := range s.Pages {
		var b bytes.Buffer
		if err := layout.Execute(&b, struct {
			Site *site
			Page *page
		}{s, p}); err != nil {
			return fmt.Errorf("%s.md: %w", p.Slug, err)
		}
		if err := os.WriteFile(filepath.Join(dir, p.Slug+".html"), b.Bytes(), 0o644); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(filepath.Join(dir, "images")); err != nil {
		return err
	}
	if err := os.CopyFS(filepath.Join(dir, "images"), os.DirFS(filepath.Join(root, "site", "images"))); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	css, err := os.ReadFile(filepath.Join(root, "site", "style.css"))
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "style.css"), css, 0o644)
}
