package main

import (
	"archive/tar"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gcrname "github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// testSpec is an image of two platforms whose binaries are files written
// at different times into dir.
func testSpec(t *testing.T, dir string, mtime time.Time) imageSpec {
	t.Helper()
	spec := imageSpec{
		name: "berth", platforms: []string{"linux/amd64", "linux/arm64"}, binaries: map[string]string{},
		version: "v1.2.3", commit: "abc", source: "https://example.com/berth", created: time.Unix(1700000000, 0).UTC(),
	}
	for _, p := range spec.platforms {
		file := filepath.Join(dir, filepath.Base(p))
		if err := os.WriteFile(file, []byte("binary for "+p), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(file, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		spec.binaries[p] = file
	}
	return spec
}

// TestImagesAreReproducible: two builds of the same binaries, from files
// of other times, modes and places, give one digest, written to disk too.
func TestImagesAreReproducible(t *testing.T) {
	a := testSpec(t, t.TempDir(), time.Now())
	b := testSpec(t, t.TempDir(), time.Now().Add(-time.Hour))
	if err := os.Chmod(b.binaries["linux/amd64"], 0o755); err != nil {
		t.Fatal(err)
	}
	da, err := writeImage(a, filepath.Join(t.TempDir(), "a"))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // a clock that leaked in would show
	db, err := writeImage(b, filepath.Join(t.TempDir(), "b"))
	if err != nil {
		t.Fatal(err)
	}
	if da != db {
		t.Errorf("two builds of the same binaries: digests %s and %s", da, db)
	}
	c := testSpec(t, t.TempDir(), time.Now())
	c.commit = "def"
	if dc, _ := writeImage(c, filepath.Join(t.TempDir(), "c")); dc == da {
		t.Errorf("another commit gave the same digest %s", dc)
	}
}

// TestImageShape: the index has a manifest per platform, each image runs
// its binary as uid 65532, carries the version and commit, and holds only
// the base files and the binary, owned by root but the user's home.
func TestImageShape(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "layout")
	spec := testSpec(t, t.TempDir(), time.Now())
	digest, err := writeImage(spec, dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The layout's index.json is the image index itself, byte for byte:
	// what make push pushes, with the digest the manifests pin.
	inner, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	if d, err := inner.Digest(); err != nil || d != digest {
		t.Fatalf("the layout's index has digest %s (%v), want %s", d, err, digest)
	}
	m, err := inner.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 2 {
		t.Fatalf("index has %d manifests, want 2", len(m.Manifests))
	}
	for i, want := range spec.platforms {
		d := m.Manifests[i]
		if d.Platform == nil || d.Platform.String() != want {
			t.Errorf("manifest %d is for %v, want %s", i, d.Platform, want)
		}
		img, err := inner.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.Config.User != "65532:65532" || len(cf.Config.Entrypoint) != 1 || cf.Config.Entrypoint[0] != "/berth" {
			t.Errorf("%s runs %v as %q, want /berth as 65532:65532", want, cf.Config.Entrypoint, cf.Config.User)
		}
		if cf.Config.Labels["org.opencontainers.image.version"] != "v1.2.3" || cf.Config.Labels["org.opencontainers.image.revision"] != "abc" {
			t.Errorf("%s labels %v lack the version and commit", want, cf.Config.Labels)
		}
		if cf.OS+"/"+cf.Architecture != want {
			t.Errorf("%s's config says %s/%s", want, cf.OS, cf.Architecture)
		}
		files := imageFiles(t, img)
		if got := string(files["berth"].body); got != "binary for "+want {
			t.Errorf("%s's /berth holds %q", want, got)
		}
		if files["berth"].mode != 0o755 {
			t.Errorf("%s's /berth has mode %o, want 755", want, files["berth"].mode)
		}
		if len(files) != len(baseFiles())+1 {
			t.Errorf("%s holds %d files, want the %d base files and the binary", want, len(files), len(baseFiles()))
		}
		for name, f := range files {
			if f.uid != 0 && name != "home/nonroot/" {
				t.Errorf("%s: %s is owned by %d", want, name, f.uid)
			}
		}
	}
}

// imageFiles reads every entry of img's layers.
func imageFiles(t *testing.T, img v1.Image) map[string]entry {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]entry{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[h.Name] = entry{name: h.Name, mode: h.Mode, uid: h.Uid, body: body}
		}
		rc.Close()
	}
	return files
}

// TestPushImages pushes the layouts to a registry (go-containerregistry's
// own, served over HTTP on loopback) and reads the indexes back by tag:
// the digests the manifests pin are what the registry holds.
func TestPushImages(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	o := options{version: "v1.2.3", registry: host + "/berth", out: t.TempDir()}
	want := map[string]v1.Hash{}
	for _, name := range images {
		spec := testSpec(t, t.TempDir(), time.Now())
		spec.name = name
		d, err := writeImage(spec, filepath.Join(o.out, "images", name))
		if err != nil {
			t.Fatal(err)
		}
		want[name] = d
	}
	if err := pushImages(o); err != nil {
		t.Fatal(err)
	}
	for _, name := range images {
		ref, err := gcrname.NewTag(o.registry+"/"+name+":v1.2.3", gcrname.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		idx, err := remote.Index(ref)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := idx.Digest(); got != want[name] {
			t.Errorf("%s: the registry holds %s, the layout %s", name, got, want[name])
		}
	}
}
