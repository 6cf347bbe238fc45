package kubectlberth

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/yaml"
)

// print writes v as JSON or YAML, or as the table that table writes.
func (o *options) print(v any, table func(w io.Writer) error) error {
	switch o.output {
	case "json":
		data, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(o.streams.Out, "%s\n", data)
		return err
	case "yaml":
		data, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = o.streams.Out.Write(data)
		return err
	}
	w := printers.GetNewTabWriter(o.streams.Out)
	if err := table(w); err != nil {
		return err
	}
	return w.Flush()
}

// row writes one tab-separated table row.
func row(w io.Writer, cells ...any) {
	parts := make([]string, len(cells))
	for i, c := range cells {
		parts[i] = fmt.Sprint(c)
	}
	fmt.Fprintln(w, strings.Join(parts, "\t"))
}

// orDash is s, or "-" for nothing.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
