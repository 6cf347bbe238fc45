// Command release packages a Berth release from binaries hack/release.sh
// built: the OCI images of the controller and berth-scheduler (an image
// layout each, with an index of every platform), the install manifests with
// those images pinned by digest, and kubectl-berth's archives with their
// checksums and the krew manifest. With -push it pushes the image layouts
// to a registry instead.
//
// It is Berth's own because the steps are few and each is a call into a
// library: go-containerregistry builds, writes and pushes the images (no
// Docker engine, no base image pulled), kustomize (through kubectl) renders
// config/. Everything it writes is a function of the binaries and the
// source commit's time, so two runs on one commit give the same bytes.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	var o options
	flag.StringVar(&o.version, "version", "v0.0.0-dev", "The release's version.")
	flag.StringVar(&o.commit, "commit", "unknown", "The source commit.")
	flag.Int64Var(&o.epoch, "epoch", 0, "The source commit's time, in seconds since 1970: every time stamp of the images and archives.")
	flag.StringVar(&o.source, "source", "https://github.com/berth-dev/berth", "The source repository, in the images' labels and the krew manifest's URLs.")
	flag.StringVar(&o.registry, "registry", "ghcr.io/berth-dev", "Where the images are published: the manifests name them there, by digest.")
	flag.StringVar(&o.bin, "bin", "_output/release/bin", "The binaries, in a folder per platform (linux_amd64/berth).")
	flag.StringVar(&o.out, "out", "_output/release", "Where the release is written.")
	flag.StringVar(&o.kubectl, "kubectl", "bin/k8s/kubectl", "The kubectl whose kustomize renders config/.")
	flag.StringVar(&o.root, "root", ".", "The source tree.")
	platforms := flag.String("platforms", "linux/amd64,linux/arm64", "The images' platforms.")
	plugins := flag.String("plugin-platforms", "linux/amd64,linux/arm64,darwin/amd64,darwin/arm64", "kubectl-berth's platforms.")
	imagesOnly := flag.Bool("images-only", false, "Build the image layouts alone.")
	push := flag.Bool("push", false, "Push the image layouts under -out to -registry, tagged with -version, instead of building.")
	flag.Parse()
	o.platforms = strings.Split(*platforms, ",")
	o.pluginPlatforms = strings.Split(*plugins, ",")
	o.created = time.Unix(o.epoch, 0).UTC()
	o.imagesOnly = *imagesOnly

	var err error
	if *push {
		err = pushImages(o)
	} else {
		err = build(o)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

type options struct {
	version, commit, source, registry string
	epoch                             int64
	created                           time.Time
	bin, out, kubectl, root           string
	platforms, pluginPlatforms        []string
	imagesOnly                        bool
}

// images are the release's images, each named for its binary.
var images = []string{"berth", "berth-scheduler"}

// manifests are the release's install manifests: the kustomization each is
// rendered from, and the placeholder image name each replaces.
var manifests = []struct{ file, kustomization, image, placeholder string }{
	{file: "berth.yaml", kustomization: "config/default", image: "berth", placeholder: "berth-controller"},
	{file: "berth-scheduler.yaml", kustomization: "config/scheduler", image: "berth-scheduler", placeholder: "berth-scheduler"},
}

func build(o options) error {
	refs := map[string]string{}
	for _, name := range images {
		spec := imageSpec{
			name: name, platforms: o.platforms, binaries: map[string]string{},
			version: o.version, commit: o.commit, source: o.source, created: o.created,
		}
		for _, p := range o.platforms {
			spec.binaries[p] = filepath.Join(o.bin, strings.ReplaceAll(p, "/", "_"), name)
		}
		digest, err := writeImage(spec, filepath.Join(o.out, "images", name))
		if err != nil {
			return err
		}
		refs[name] = fmt.Sprintf("%s/%s:%s@%s", o.registry, name, o.version, digest)
		fmt.Printf("image %s\n", refs[name])
	}
	if o.imagesOnly {
		return nil
	}
	for _, m := range manifests {
		rendered, err := render(o.kubectl, filepath.Join(o.root, m.kustomization))
		if err != nil {
			return err
		}
		pinned, err := pinImage(rendered, m.placeholder, refs[m.image])
		if err != nil {
			return fmt.Errorf("%s: %w", m.file, err)
		}
		if err := os.WriteFile(filepath.Join(o.out, m.file), pinned, 0o644); err != nil {
			return err
		}
	}
	archives, err := pluginArchives(o)
	if err != nil {
		return err
	}
	krew, err := krewManifest(o, archives)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(o.out, "berth-krew.yaml"), krew, 0o644); err != nil {
		return err
	}
	return writeChecksums(o.out)
}
