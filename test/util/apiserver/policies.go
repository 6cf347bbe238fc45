package apiserver

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// installPolicies creates the ValidatingAdmissionPolicies of
// config/validation and waits until the API server enforces them.
func (s *Server) installPolicies(ctx context.Context) error {
	files, err := filepath.Glob(filepath.Join(RepoRoot(), "config", "validation", "*.yaml"))
	if err != nil {
		return err
	}
	for _, file := range files {
		objs, err := ReadManifests(file)
		if err != nil {
			return err
		}
		for _, obj := range objs {
			if err := s.Client.Create(ctx, obj); err != nil {
				return fmt.Errorf("creating %s from %s: %w", obj.GetName(), file, err)
			}
		}
	}
	return s.waitForPolicies(ctx)
}

// waitForPolicies polls with a dry-run of a ClusterQueue with a negative
// quota until it is refused: policies take effect a moment after they are
// created.
func (s *Server) waitForPolicies(ctx context.Context) error {
	probe, err := decode([]byte(`apiVersion: berth.dev/v1alpha1
kind: ClusterQueue
metadata: {name: policy-probe}
spec:
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: probe, resources: [{name: cpu, nominalQuota: "-1"}]}]
`))
	if err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := s.Client.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "must not be negative"), nil
	})
}

// ReadManifests decodes every object of a YAML file with one or more
// documents.
func ReadManifests(file string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", file, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, err := decode(doc)
		if err != nil {
			return nil, fmt.Errorf("decoding %s: %w", file, err)
		}
		if obj.Object != nil {
			objs = append(objs, obj)
		}
	}
}

func decode(doc []byte) (*unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{}
	return obj, utilyaml.Unmarshal(doc, &obj.Object)
}
