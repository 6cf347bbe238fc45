package main

import (
	"bytes"
	"fmt"
	"os/exec"
	"regexp"
)

// render renders a kustomization with kubectl's kustomize.
func render(kubectl, dir string) ([]byte, error) {
	var stderr bytes.Buffer
	cmd := exec.Command(kubectl, "kustomize", dir)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("kubectl kustomize %s: %w: %s", dir, err, stderr.String())
	}
	return out, nil
}

// pinImage replaces every container image named placeholder in a rendered
// manifest with ref, and fails when there is none: a manifest whose
// Deployment was renamed must not ship with a name no registry has.
func pinImage(manifest []byte, placeholder, ref string) ([]byte, error) {
	re := regexp.MustCompile(`(?m)^(\s*(?:- )?image: )` + regexp.QuoteMeta(placeholder) + `$`)
	if !re.Match(manifest) {
		return nil, fmt.Errorf("no container with image %q", placeholder)
	}
	return re.ReplaceAll(manifest, []byte("${1}"+ref)), nil
}
