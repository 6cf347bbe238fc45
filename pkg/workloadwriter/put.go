package workloadwriter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/go-json-experiment/json/jsontext"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// New returns the production Writer (NewPut) for the API server of cfg,
// sharing httpClient's connections.
func New(cfg *rest.Config, httpClient *http.Client, scheme *runtime.Scheme) (Writer, error) {
	gvk := berthv1alpha1.GroupVersion.WithKind("Workload")
	workloads, err := apiutil.RESTClientForGVK(gvk, false, false, cfg, serializer.NewCodecFactory(scheme), httpClient)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", gvk, err)
	}
	return NewPut(workloads), nil
}

// NewPut returns a Writer that sends each status as a PUT through
// workloads, a REST client for Workloads, answered with the object's
// metadata alone.
//
// A merge patch of the status makes the API server encode the stored
// Workload, merge the patch into it and decode the result; a PUT is
// decoded once. On a 2-core machine a Workload status PUT cost the API
// server 0.81 to 0.92 of a merge patch's CPU (three rounds of 1,500 writes
// each), and the API server is where the perf baseline's time goes.
// Encoding the whole Workload costs the controller what encoding a patch
// did (5 µs).
func NewPut(workloads rest.Interface) Writer { return putWriter{workloads} }

type putWriter struct{ workloads rest.Interface }

// metadataOnly asks the API server to answer with the object's metadata.
const metadataOnly = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"

// statusBody is the Workload a status PUT sends: without its spec. The API
// server keeps the stored spec on a write of the status, and leaves the
// spec out when it works out who owns which field, so sending it only made
// both sides encode and decode the pod templates again: a quarter of the
// bytes of the benchmark's Workloads, whose template is one container, and
// most of them for a real pod template. The metadata stays: it is
// compared with the stored metadata to keep the managed fields, and
// without the labels, say, the creator would lose them.
type statusBody struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Status            *berthv1alpha1.WorkloadStatus `json:"status"`
}

// WriteStatus sends wl's metadata and status. wl should have no managed
// fields, as the cache keeps Workloads: the API server keeps the stored
// ones when the object it is given has none.
func (p putWriter) WriteStatus(ctx context.Context, wl *berthv1alpha1.Workload) error {
	body := statusBody{
		TypeMeta:   metav1.TypeMeta{APIVersion: berthv1alpha1.GroupVersion.String(), Kind: "Workload"},
		ObjectMeta: wl.ObjectMeta,
		Status:     &wl.Status,
	}
	body.ManagedFields = nil
	data, err := json.Marshal(&body)
	if err != nil {
		return err
	}
	raw, err := p.workloads.Put().Namespace(wl.Namespace).Resource("workloads").Name(wl.Name).SubResource("status").
		SetHeader("Accept", metadataOnly).SetHeader("Content-Type", "application/json").
		Body(data).Do(ctx).Raw()
	if err != nil {
		return err
	}
	rv, err := resourceVersionOf(raw)
	if err != nil {
		return err
	}
	wl.ResourceVersion = rv
	return nil
}

// Create sends wl as a POST answered with its metadata alone. The whole
// Workload that the API server answers a create with by default, pod
// templates and managed fields, was the largest part of creating a job's
// Workload in the controller's CPU profiles; nothing reads it, the
// Workload coming back through the watch.
func (p putWriter) Create(ctx context.Context, wl *berthv1alpha1.Workload) error {
	body := *wl
	body.TypeMeta = metav1.TypeMeta{APIVersion: berthv1alpha1.GroupVersion.String(), Kind: "Workload"}
	data, err := json.Marshal(&body)
	if err != nil {
		return err
	}
	raw, err := p.workloads.Post().Namespace(wl.Namespace).Resource("workloads").
		SetHeader("Accept", metadataOnly).SetHeader("Content-Type", "application/json").
		Body(data).Do(ctx).Raw()
	if err != nil {
		return err
	}
	var answer metav1.PartialObjectMetadata
	if err := json.Unmarshal(raw, &answer); err != nil {
		return fmt.Errorf("reading the answer to creating Workload %s/%s: %w", wl.Namespace, wl.Name, err)
	}
	answer.ManagedFields = nil // as the cache keeps them
	wl.ObjectMeta = answer.ObjectMeta
	return nil
}

// resourceVersionOf reads metadata.resourceVersion from the JSON of an
// object, and nothing after it. The API server writes the resourceVersion
// before the managed fields, which are most of a Workload's metadata:
// 1.6 to 2.3 µs against 10.8 to 11.8 µs to decode the answer with encoding/json
// (BenchmarkResourceVersionOf), which in the perf baseline was a fifth of
// the write's CPU.
func resourceVersionOf(raw []byte) (string, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(raw))
	// Into each object of the path, up to the name's value.
	for _, name := range []string{"metadata", "resourceVersion"} {
		if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
			return "", fmt.Errorf("reading the answer's resourceVersion: no object holds %q (%v)", name, err)
		}
		for {
			if dec.PeekKind() != '"' {
				return "", fmt.Errorf("reading the answer's resourceVersion: no %q", name)
			}
			tok, err := dec.ReadToken()
			if err != nil {
				return "", fmt.Errorf("reading the answer's resourceVersion: %w", err)
			}
			if tok.String() == name {
				break
			}
			if err := dec.SkipValue(); err != nil {
				return "", fmt.Errorf("reading the answer's resourceVersion: %w", err)
			}
		}
	}
	tok, err := dec.ReadToken()
	if err != nil || tok.Kind() != '"' || tok.String() == "" {
		return "", fmt.Errorf("reading the answer's resourceVersion: %v is not a version (%v)", tok, err)
	}
	return tok.String(), nil
}
