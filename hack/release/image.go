package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	gcrname "github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// nonRoot is the user and group every image runs as: not root, and the
// number distroless images use, so that policies written for those admit
// Berth's too.
const nonRoot = 65532

// imageSpec is one image: a static binary per platform, run as its
// entrypoint by nonRoot.
type imageSpec struct {
	// name is the image's name and the binary's path in it (/name).
	name string
	// binaries maps each platform ("linux/amd64") to its binary's file.
	binaries map[string]string
	// platforms is the order of the index's manifests.
	platforms []string
	version   string
	commit    string
	source    string
	// created is the time written into every image and tar entry: the
	// source commit's, so that two builds of one commit are byte for byte
	// the same.
	created time.Time
}

// buildIndex builds spec's image index, one manifest per platform, each
// an OCI image of two layers: a base of the few files a non-root user needs
// (built here from nothing, no distribution's image underneath) and the
// binary.
func buildIndex(spec imageSpec) (v1.ImageIndex, error) {
	base, err := layer(spec.created, baseFiles())
	if err != nil {
		return nil, err
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	labels := map[string]string{
		"org.opencontainers.image.title":    spec.name,
		"org.opencontainers.image.version":  spec.version,
		"org.opencontainers.image.revision": spec.commit,
		"org.opencontainers.image.source":   spec.source,
		"org.opencontainers.image.created":  spec.created.UTC().Format(time.RFC3339),
	}
	var adds []mutate.IndexAddendum
	for _, platform := range spec.platforms {
		file, ok := spec.binaries[platform]
		if !ok {
			return nil, fmt.Errorf("no %s binary for %s", spec.name, platform)
		}
		img, err := platformImage(spec, platform, file, base, labels)
		if err != nil {
			return nil, fmt.Errorf("%s for %s: %w", spec.name, platform, err)
		}
		p, err := v1.ParsePlatform(platform)
		if err != nil {
			return nil, err
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: p}})
	}
	idx = mutate.AppendManifests(idx, adds...)
	return mutate.Annotations(idx, labels).(v1.ImageIndex), nil
}

func platformImage(spec imageSpec, platform, file string, base v1.Layer, labels map[string]string) (v1.Image, error) {
	binary, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	bin, err := layer(spec.created, []entry{{name: spec.name, mode: 0o755, body: binary}})
	if err != nil {
		return nil, err
	}
	p, err := v1.ParsePlatform(platform)
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, History: v1.History{Created: v1.Time{Time: spec.created}, CreatedBy: "berth: base for uid 65532"}},
		mutate.Addendum{Layer: bin, History: v1.History{Created: v1.Time{Time: spec.created}, CreatedBy: "berth: /" + spec.name}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Created = v1.Time{Time: spec.created}
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Config = v1.Config{
		Entrypoint: []string{"/" + spec.name},
		User:       fmt.Sprintf("%d:%d", nonRoot, nonRoot),
		WorkingDir: "/",
		Env:        []string{"PATH=/", "HOME=/home/nonroot"},
		Labels:     labels,
	}
	return mutate.ConfigFile(img, cf)
}

// entry is one file or directory of a layer.
type entry struct {
	name string
	mode int64
	dir  bool
	uid  int
	body []byte
}

// baseFiles are what a process of nonRoot expects to find: its name in
// /etc/passwd and /etc/group, its home, and a /tmp. No CA certificates:
// the binaries speak TLS only to the API server, whose CA comes from the
// service account's mount.
func baseFiles() []entry {
	return []entry{
		{name: "etc", mode: 0o755, dir: true},
		{name: "etc/passwd", mode: 0o644, body: fmt.Appendf(nil, "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", nonRoot, nonRoot)},
		{name: "etc/group", mode: 0o644, body: fmt.Appendf(nil, "root:x:0:\nnonroot:x:%d:\n", nonRoot)},
		{name: "home", mode: 0o755, dir: true},
		{name: "home/nonroot", mode: 0o700, dir: true, uid: nonRoot},
		{name: "tmp", mode: 0o1777, dir: true},
	}
}

// layer writes entries into a tar with fixed times and owners, and makes
// it a gzip-compressed OCI layer.
func layer(created time.Time, entries []entry) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{
			Name:    e.name,
			Mode:    e.mode,
			ModTime: created,
			Uid:     e.uid,
			Gid:     e.uid,
			Format:  tar.FormatPAX,
		}
		if e.dir {
			h.Typeflag, h.Name = tar.TypeDir, path.Clean(e.name)+"/"
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// writeImage builds spec's index into an OCI image layout at dir, replacing
// what was there, and returns the index's digest.
func writeImage(spec imageSpec, dir string) (v1.Hash, error) {
	idx, err := buildIndex(spec)
	if err != nil {
		return v1.Hash{}, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return v1.Hash{}, err
	}
	if _, err := layout.Write(dir, idx); err != nil {
		return v1.Hash{}, err
	}
	return idx.Digest()
}

// pushImages pushes each image layout under o.out to o.registry, tagged
// with o.version. Credentials come from the Docker configuration
// (~/.docker/config.json) and its helpers, as docker and crane find them.
func pushImages(o options) error {
	for _, name := range images {
		p, err := layout.FromPath(filepath.Join(o.out, "images", name))
		if err != nil {
			return fmt.Errorf("%s: %w (run make release first)", name, err)
		}
		// The layout's index.json is the image index written, whose
		// digest the manifests pin.
		idx, err := p.ImageIndex()
		if err != nil {
			return err
		}
		digest, err := idx.Digest()
		if err != nil {
			return err
		}
		ref, err := gcrname.NewTag(fmt.Sprintf("%s/%s:%s", o.registry, name, o.version))
		if err != nil {
			return err
		}
		if err := remote.WriteIndex(ref, idx, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
			return fmt.Errorf("pushing %s: %w", ref, err)
		}
		fmt.Printf("pushed %s@%s\n", ref, digest)
	}
	return nil
}
