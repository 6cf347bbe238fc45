package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// archive is one platform's kubectl-berth archive.
type archive struct {
	os, arch, file, sha256 string
}

// pluginArchives writes kubectl-berth_OS_ARCH.tar.gz for each plugin
// platform, holding the binary alone, with the fixed times and owners the
// images have.
func pluginArchives(o options) ([]archive, error) {
	var out []archive
	for _, p := range o.pluginPlatforms {
		goos, goarch, ok := strings.Cut(p, "/")
		if !ok {
			return nil, fmt.Errorf("platform %q is not OS/ARCH", p)
		}
		binary, err := os.ReadFile(filepath.Join(o.bin, goos+"_"+goarch, "kubectl-berth"))
		if err != nil {
			return nil, err
		}
		var tarred bytes.Buffer
		tw := tar.NewWriter(&tarred)
		if err := tw.WriteHeader(&tar.Header{Name: "kubectl-berth", Mode: 0o755, Size: int64(len(binary)),
			ModTime: o.created, Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(binary); err != nil {
			return nil, err
		}
		if err := tw.Close(); err != nil {
			return nil, err
		}
		var zipped bytes.Buffer
		zw := gzip.NewWriter(&zipped)
		if _, err := zw.Write(tarred.Bytes()); err != nil {
			return nil, err
		}
		if err := zw.Close(); err != nil {
			return nil, err
		}
		a := archive{os: goos, arch: goarch, file: fmt.Sprintf("kubectl-berth_%s_%s.tar.gz", goos, goarch)}
		sum := sha256.Sum256(zipped.Bytes())
		a.sha256 = hex.EncodeToString(sum[:])
		if err := os.WriteFile(filepath.Join(o.out, a.file), zipped.Bytes(), 0o644); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// krewManifest fills the krew manifest plugins/berth.yaml keeps (its
// descriptions) with the release's version and a platform per archive.
func krewManifest(o options, archives []archive) ([]byte, error) {
	tmpl, err := os.ReadFile(filepath.Join(o.root, "plugins", "berth.yaml"))
	if err != nil {
		return nil, err
	}
	var plugin map[string]any
	if err := yaml.Unmarshal(tmpl, &plugin); err != nil {
		return nil, fmt.Errorf("plugins/berth.yaml: %w", err)
	}
	spec, ok := plugin["spec"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("plugins/berth.yaml has no spec")
	}
	spec["version"] = o.version
	var platforms []any
	for _, a := range archives {
		platforms = append(platforms, map[string]any{
			"selector": map[string]any{"matchLabels": map[string]any{"os": a.os, "arch": a.arch}},
			"uri":      fmt.Sprintf("%s/releases/download/%s/%s", o.source, o.version, a.file),
			"sha256":   a.sha256,
			"bin":      "kubectl-berth",
		})
	}
	spec["platforms"] = platforms
	return yaml.Marshal(plugin)
}

// writeChecksums writes checksums.txt, in sha256sum's format, for every
// file at the top of dir.
func writeChecksums(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var lines []string
	for _, e := range entries {
		if !e.Type().IsRegular() || e.Name() == "checksums.txt" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		lines = append(lines, hex.EncodeToString(sum[:])+"  "+e.Name()+"\n")
	}
	slices.Sort(lines)
	return os.WriteFile(filepath.Join(dir, "checksums.txt"), []byte(strings.Join(lines, "")), 0o644)
}
