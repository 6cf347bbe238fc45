// Command site renders Berth's documentation site: the Markdown pages of
// site/content, with the repository files they include, into HTML pages
// with a navigation bar in the pages' order. It fails on a page it cannot
// render, an include of a missing file and a link to a page or heading the
// site does not have, so a page that went stale fails `make test`.
//
//	go run ./hack/site -out _output/site
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	root := flag.String("root", ".", "the repository's root")
	out := flag.String("out", "_output/site", "the directory to write the site to")
	flag.Parse()
	s, err := build(*root)
	if err == nil {
		err = s.write(*root, *out)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "site:", err)
		os.Exit(1)
	}
	fmt.Printf("site: %d pages in %s\n", len(s.Pages), *out)
}
