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
		if filepath.Base(file) == "kustomization.yaml" {
			continue // how config/default includes the policies
		}
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

// waitForPolicies waits until the API server enforces both policies:
// they take effect a moment after they are created, each on its own.
func (s *Server) waitForPolicies(ctx context.Context) error {
	if err := s.waitForQuotaPolicy(ctx); err != nil {
		return err
	}
	return s.waitForWorkloadPolicy(ctx)
}

// waitForWorkloadPolicy polls with a dry-run change of the queue of a
// Workload holding quota until it is refused.
func (s *Server) waitForWorkloadPolicy(ctx context.Context) error {
	probe, err := decode([]byte(`apiVersion: berth.dev/v1alpha1
kind: Workload
metadata: {name: policy-probe, namespace: default}
spec:
  queueName: probe
  podSets: [{name: main, count: 1, template: {spec: {containers: [{name: c, image: probe}]}}}]
`))
	if err != nil {
		return err
	}
	if err := s.Client.Create(ctx, probe); err != nil {
		return fmt.Errorf("creating the policy probe: %w", err)
	}
	defer func() { _ = s.Client.Delete(context.WithoutCancel(ctx), probe) }()
	cond := map[string]any{"type": "QuotaReserved", "status": "True", "reason": "Probe", "message": "Probe", "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}
	if err := unstructured.SetNestedSlice(probe.Object, []any{cond}, "status", "conditions"); err != nil {
		return err
	}
	if err := s.Client.Status().Update(ctx, probe); err != nil {
		return fmt.Errorf("reserving quota for the policy probe: %w", err)
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		changed := probe.DeepCopy()
		if err := unstructured.SetNestedField(changed.Object, "other", "spec", "queueName"); err != nil {
			return false, err
		}
		err := s.Client.Update(ctx, changed, client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "immutable while quota is reserved"), nil
	})
}

// waitForQuotaPolicy polls with a dry-run of a ClusterQueue with a
// negative quota until it is refused.
func (s *Server) waitForQuotaPolicy(ctx context.Context) error {
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
	objs, err := DecodeManifests(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return objs, nil
}

// DecodeManifests decodes the objects of a multi-document YAML stream,
// skipping empty documents.
func DecodeManifests(data []byte) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading: %w", err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, err := decode(doc)
		if err != nil {
			return nil, fmt.Errorf("decoding: %w", err)
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
