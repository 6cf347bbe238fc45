package kubectlberth

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/berth-dev/berth/pkg/fromkueue"
)

// convertCommand is kubectl berth convert: Kueue's manifests rewritten as
// Berth's, on the standard output, with what has no counterpart said on
// the standard error. It reads files, not the cluster.
func (o *options) convertCommand() *cobra.Command {
	var files []string
	cmd := &cobra.Command{
		Use:   "convert -f FILE...",
		Short: "Rewrite Kueue's objects and Kueue-labelled jobs as Berth's; say what has no counterpart",
		Example: "  kubectl berth convert -f kueue-setup.yaml > berth-setup.yaml\n" +
			"  kubectl berth convert -f - < job.yaml | kubectl apply -f -",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(files) == 0 {
				return errors.New("name the manifests with -f (- for the standard input)")
			}
			var out []*unstructured.Unstructured
			for _, f := range files {
				objs, err := o.convertFile(f)
				if err != nil {
					return err
				}
				out = append(out, objs...)
			}
			return o.writeObjects(out)
		},
	}
	cmd.Flags().StringSliceVarP(&files, "filename", "f", nil, "Manifests to convert; - reads the standard input.")
	return cmd
}

// convertFile converts every object of one file, and writes the notes.
func (o *options) convertFile(name string) ([]*unstructured.Unstructured, error) {
	r := o.streams.In
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	var out []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("reading %s: %w", name, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		objs := []*unstructured.Unstructured{obj}
		if obj.IsList() { // kubectl get -o yaml
			var err error
			if objs, err = items(obj); err != nil {
				return nil, fmt.Errorf("reading %s: %w", name, err)
			}
		}
		for _, obj := range objs {
			keep, notes := fromkueue.Convert(obj)
			for _, n := range notes {
				fmt.Fprintf(o.streams.ErrOut, "convert: %s\n", n)
			}
			if keep {
				out = append(out, obj)
			}
		}
	}
}

// items are the objects of a List.
func items(list *unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	err := list.EachListItem(func(o runtime.Object) error {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			return fmt.Errorf("a list item of type %T", o)
		}
		objs = append(objs, u)
		return nil
	})
	return objs, err
}

// writeObjects writes objs as a YAML stream, or with -o json as a List.
func (o *options) writeObjects(objs []*unstructured.Unstructured) error {
	if o.output == "json" {
		items := make([]map[string]any, len(objs))
		for i, obj := range objs {
			items[i] = obj.Object
		}
		data, err := json.MarshalIndent(map[string]any{"apiVersion": "v1", "kind": "List", "items": items}, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(o.streams.Out, "%s\n", data)
		return err
	}
	for i, obj := range objs {
		data, err := yaml.Marshal(obj.Object)
		if err != nil {
			return err
		}
		if i > 0 {
			fmt.Fprintln(o.streams.Out, "---")
		}
		if _, err := o.streams.Out.Write(data); err != nil {
			return err
		}
	}
	return nil
}
