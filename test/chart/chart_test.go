// Package chart tests the Helm chart charts/berth with the real helm and
// kubectl of bin/: it lints; with its default values it renders the objects
// of `kubectl kustomize config/default` (berth.yaml's, but for the image);
// its generated templates are what hack/chart writes now; and its values
// change what they say they change. It needs no cluster.
package chart

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// root is two directories above the package, where go test runs it; made
// absolute because commands run there with paths under it.
var root = func() string {
	dir, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		panic(err)
	}
	return dir
}()

const (
	chartDir = "charts/berth"
	// The ConfigMap key that holds the controller's configuration.
	configKey = "controller_config.yaml"
)

// tools returns the paths of helm and kubectl, and skips the test when
// they are not built.
func tools(t *testing.T) (helm, kubectl string) {
	t.Helper()
	helm, kubectl = filepath.Join(root, "bin", "helm"), filepath.Join(root, "bin", "k8s", "kubectl")
	for _, p := range []string{helm, kubectl} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("chart: no %s; build it with hack/toolchain.sh helm kube (make toolchain)", p)
		}
	}
	return helm, kubectl
}

// run runs a command in the source tree and returns its standard output.
func run(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out, stderr.String())
	}
	return out
}

// object is one decoded manifest, its values as encoding/json decodes them.
type object = map[string]any

func key(o object) string {
	md, _ := o["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	name, _ := md["name"].(string)
	kind, _ := o["kind"].(string)
	return kind + " " + ns + "/" + name
}

// decode splits a multi-document stream and decodes each object; a
// ConfigMap's configuration is decoded too, so that it compares as data.
func decode(t *testing.T, data []byte) map[string]object {
	t.Helper()
	objs := map[string]object{}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatal(err)
		}
		var o object
		if err := yaml.Unmarshal(doc, &o); err != nil {
			t.Fatalf("decoding %s: %v", doc, err)
		}
		if len(o) == 0 {
			continue
		}
		if cfg, ok := get(o, "data", configKey).(string); ok {
			var parsed any
			if err := yaml.Unmarshal([]byte(cfg), &parsed); err != nil {
				t.Fatalf("%s: decoding %s: %v", key(o), configKey, err)
			}
			o["data"].(map[string]any)[configKey] = parsed
		}
		if _, dup := objs[key(o)]; dup {
			t.Fatalf("%s is rendered twice", key(o))
		}
		objs[key(o)] = o
	}
}

// get returns the value at path (map keys, or list indices as numbers),
// nil when there is none.
func get(v any, path ...string) any {
	for _, p := range path {
		switch c := v.(type) {
		case map[string]any:
			v = c[p]
		case []any:
			var i int
			if _, err := fmt.Sscan(p, &i); err != nil || i < 0 || i >= len(c) {
				return nil
			}
			v = c[i]
		default:
			return nil
		}
	}
	return v
}

func helmTemplate(t *testing.T, helm string, args ...string) map[string]object {
	t.Helper()
	return decode(t, run(t, helm, append([]string{"template", "berth", chartDir}, args...)...))
}

func TestLint(t *testing.T) {
	helm, _ := tools(t)
	cases := map[string][]string{
		"default values":                    nil,
		"cert-manager and a ServiceMonitor": {"--set", "certManager.enable=true", "--set", "metrics.serviceMonitor.enable=true"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			run(t, helm, append([]string{"lint", "--strict", chartDir}, args...)...)
		})
	}
}

// helmLabels and helmAnnotations are what the chart adds to the objects of
// config/default; nothing else may differ.
var (
	helmLabels      = []string{"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance", "app.kubernetes.io/version"}
	helmAnnotations = []string{"checksum/config"}
	// kustomize's configMapGenerator names a ConfigMap after a hash of its
	// data; the chart's ConfigMap has no hash, its checksum annotation
	// rolls the pods instead.
	hashSuffix = regexp.MustCompile(`-[a-z0-9]{10}$`)
)

const anyImage = "IMAGE"

// normaliseKustomize removes from config/default's objects what differs
// from the chart by design: the Namespace (Helm's is the release's,
// made by --create-namespace), the ConfigMap's hash suffix and the
// Deployment's reference to it, and the image name.
func normaliseKustomize(objs map[string]object) map[string]object {
	out := map[string]object{}
	renamed := map[string]string{}
	for _, o := range objs {
		switch o["kind"] {
		case "Namespace":
			continue
		case "ConfigMap":
			md := o["metadata"].(map[string]any)
			name := md["name"].(string)
			md["name"] = hashSuffix.ReplaceAllString(name, "")
			renamed[name] = md["name"].(string)
		}
		out[key(o)] = o
	}
	for _, o := range out {
		for _, v := range podSpecList(o, "volumes") {
			if cm, ok := get(v, "configMap").(map[string]any); ok && renamed[cm["name"].(string)] != "" {
				cm["name"] = renamed[cm["name"].(string)]
			}
		}
		normaliseImages(o)
	}
	return out
}

// normaliseChart removes Helm's labels and annotations from the chart's
// objects and their pod templates, and the image name.
func normaliseChart(objs map[string]object) map[string]object {
	for _, o := range objs {
		for _, md := range []any{o["metadata"], get(o, "spec", "template", "metadata")} {
			md, ok := md.(map[string]any)
			if !ok {
				continue
			}
			deleteKeys(md, "labels", helmLabels)
			deleteKeys(md, "annotations", helmAnnotations)
		}
		normaliseImages(o)
	}
	return objs
}

func deleteKeys(md map[string]any, field string, keys []string) {
	m, ok := md[field].(map[string]any)
	if !ok {
		return
	}
	for _, k := range keys {
		delete(m, k)
	}
	if len(m) == 0 {
		delete(md, field)
	}
}

func podSpecList(o object, field string) []any {
	l, _ := get(o, "spec", "template", "spec", field).([]any)
	return l
}

func normaliseImages(o object) {
	for _, c := range podSpecList(o, "containers") {
		if c, ok := c.(map[string]any); ok {
			c["image"] = anyImage
		}
	}
}

// TestDefaultsRenderKustomize compares, object by object, the chart
// rendered with its default values in berth-system with config/default.
func TestDefaultsRenderKustomize(t *testing.T) {
	helm, kubectl := tools(t)
	want := normaliseKustomize(decode(t, run(t, kubectl, "kustomize", "config/default")))
	got := normaliseChart(helmTemplate(t, helm, "-n", "berth-system"))
	if msg := compare(want, got); msg != "" {
		t.Fatal(msg)
	}
}

// compare names the first object (by kind, namespace and name) that
// differs and the first field where it does, and how many others differ.
func compare(want, got map[string]object) string {
	var keys []string
	for k := range want {
		keys = append(keys, k)
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var diffs []string
	for _, k := range keys {
		w, inWant := want[k]
		g, inGot := got[k]
		switch {
		case !inGot:
			diffs = append(diffs, fmt.Sprintf("%s: in config/default, not rendered by the chart", k))
		case !inWant:
			diffs = append(diffs, fmt.Sprintf("%s: rendered by the chart, not in config/default", k))
		default:
			if path, wv, gv, ok := firstDiff("", w, g); ok {
				diffs = append(diffs, fmt.Sprintf("%s: at %s, config/default has %s and the chart %s", k, path, brief(wv), brief(gv)))
			}
		}
	}
	if len(diffs) == 0 {
		return ""
	}
	msg := diffs[0]
	if len(diffs) > 1 {
		msg += fmt.Sprintf(" (and %d more objects differ)", len(diffs)-1)
	}
	return msg + "; the chart's templates under generated/ come from go run ./hack/chart, the others are written by hand"
}

// firstDiff walks want and got in the order of their sorted keys and
// returns the path of the first value that differs.
func firstDiff(path string, want, got any) (string, any, any, bool) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return path, want, got, true
		}
		var keys []string
		for k := range w {
			keys = append(keys, k)
		}
		for k := range g {
			if _, ok := w[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			child := path + "." + k
			if strings.ContainsAny(k, "./") {
				child = fmt.Sprintf("%s[%q]", path, k)
			}
			wv, inW := w[k]
			gv, inG := g[k]
			if !inW || !inG {
				return child, orAbsent(wv, inW), orAbsent(gv, inG), true
			}
			if p, a, b, ok := firstDiff(child, wv, gv); ok {
				return p, a, b, true
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok {
			return path, want, got, true
		}
		for i := range min(len(w), len(g)) {
			if p, a, b, ok := firstDiff(fmt.Sprintf("%s[%d]", path, i), w[i], g[i]); ok {
				return p, a, b, true
			}
		}
		if len(w) != len(g) {
			return path, want, got, true
		}
	default:
		if !reflect.DeepEqual(want, got) {
			return path, want, got, true
		}
	}
	return "", nil, nil, false
}

type absent struct{}

func orAbsent(v any, present bool) any {
	if !present {
		return absent{}
	}
	return v
}

// brief prints a value as compact JSON, cut to a line.
func brief(v any) string {
	if _, ok := v.(absent); ok {
		return "nothing"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 200 {
		return string(b[:200]) + "..."
	}
	return string(b)
}

func TestCompareNamesTheDifference(t *testing.T) {
	base := func() map[string]object {
		return map[string]object{"Deployment ns/d": {"kind": "Deployment", "metadata": map[string]any{"labels": map[string]any{}}, "spec": map[string]any{
			"replicas": 2.0, "template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"args": []any{"a"}}}}}}}}
	}
	cases := map[string]struct {
		change  func(map[string]object)
		wantMsg string
	}{
		"equal": {change: func(map[string]object) {}},
		"a field": {
			change:  func(o map[string]object) { o["Deployment ns/d"]["spec"].(map[string]any)["replicas"] = 3.0 },
			wantMsg: "Deployment ns/d: at .spec.replicas, config/default has 2 and the chart 3",
		},
		"a list": {
			change: func(o map[string]object) {
				c := get(o["Deployment ns/d"], "spec", "template", "spec", "containers", "0").(map[string]any)
				c["args"] = []any{"a", "b"}
			},
			wantMsg: `Deployment ns/d: at .spec.template.spec.containers[0].args, config/default has ["a"] and the chart ["a","b"]`,
		},
		"a key": {
			change: func(o map[string]object) {
				get(o["Deployment ns/d"], "metadata", "labels").(map[string]any)["a.b/c"] = "x"
			},
			wantMsg: `Deployment ns/d: at .metadata.labels["a.b/c"], config/default has nothing and the chart "x"`,
		},
		"an object": {
			change:  func(o map[string]object) { o["Service ns/s"] = object{} },
			wantMsg: "Service ns/s: rendered by the chart, not in config/default",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := base()
			tc.change(got)
			msg, _, _ := strings.Cut(compare(base(), got), "; the chart's templates")
			if diff := cmp.Diff(tc.wantMsg, msg); diff != "" {
				t.Errorf("compare (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGeneratedUpToDate runs hack/chart into a temporary folder and
// compares what it writes with charts/berth/templates/generated.
func TestGeneratedUpToDate(t *testing.T) {
	_, kubectl := tools(t)
	dir := t.TempDir()
	run(t, "go", "run", "./hack/chart", "-kubectl", kubectl, "-out", dir)
	committed := filepath.Join(root, chartDir, "templates", "generated")
	want, got := readDir(t, dir), readDir(t, committed)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s is not what go run ./hack/chart writes now; run it (-want fresh +got committed):\n%s", committed, diff)
	}
}

func readDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = string(b)
	}
	return files
}

// field is a value wanted at a path of a rendered object, as YAML;
// "absent" wants the object not rendered at all.
type field struct {
	obj  string
	path []string
	want string
}

const (
	deployment = "Deployment berth-system/berth-controller"
	configMap  = "ConfigMap berth-system/berth-controller-config"
	mutating   = "MutatingWebhookConfiguration /berth-mutating-webhook-configuration"
	validating = "ValidatingWebhookConfiguration /berth-validating-webhook-configuration"
)

var injectCA = []string{"metadata", "annotations", "cert-manager.io/inject-ca-from"}

// inContainer is the path of a field of the controller's container.
func inContainer(f string) []string {
	return []string{"spec", "template", "spec", "containers", "0", f}
}

func TestValues(t *testing.T) {
	helm, _ := tools(t)
	cases := map[string]struct {
		args       []string
		wantFields []field
	}{
		"replicas": {
			args:       []string{"--set", "replicas=3"},
			wantFields: []field{{deployment, []string{"spec", "replicas"}, "3"}},
		},
		"frameworks": {
			args:       []string{"--set", "integrations.frameworks={batch/job}"},
			wantFields: []field{{configMap, []string{"data", configKey, "integrations", "frameworks"}, "[batch/job]"}},
		},
		"fair sharing": {
			args:       []string{"--set", "fairSharing.enable=true"},
			wantFields: []field{{configMap, []string{"data", configKey, "fairSharing"}, "{enable: true}"}},
		},
		"cert-manager": {
			args: []string{"--set", "certManager.enable=true"},
			wantFields: []field{
				{"Certificate berth-system/berth-serving-cert", []string{"spec", "secretName"}, "berth-webhook-server-cert"},
				{"Certificate berth-system/berth-serving-cert", []string{"spec", "dnsNames"},
					"[berth-webhook-service.berth-system.svc, berth-webhook-service.berth-system.svc.cluster.local, berth-visibility.berth-system.svc, berth-visibility.berth-system.svc.cluster.local]"},
				{"Issuer berth-system/berth-selfsigned-issuer", []string{"spec"}, "{selfSigned: {}}"},
				{configMap, []string{"data", configKey, "internalCertManagement", "enable"}, "false"},
				{mutating, injectCA, "berth-system/berth-serving-cert"},
				{validating, injectCA, "berth-system/berth-serving-cert"},
				{"APIService /v1alpha1.visibility.berth.dev", injectCA, "berth-system/berth-serving-cert"},
				{deployment, []string{"spec", "template", "spec", "volumes", "1"}, "{name: webhook-certs, secret: {secretName: berth-webhook-server-cert}}"},
			},
		},
		"no cert-manager": {
			wantFields: []field{
				{"Certificate berth-system/berth-serving-cert", nil, "absent"},
				{mutating, injectCA, "null"},
				{"APIService /v1alpha1.visibility.berth.dev", injectCA, "null"},
				{configMap, []string{"data", configKey, "internalCertManagement", "enable"}, "true"},
			},
		},
		"image by digest": {
			args:       []string{"--set", "image.digest=sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "--set", "image.tag=v9"},
			wantFields: []field{{deployment, inContainer("image"), "ghcr.io/berth-dev/berth@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}},
		},
		"image by tag": {
			args:       []string{"--set", "image.repository=registry.example.com/berth", "--set", "image.tag=v9", "--set", "image.pullPolicy=Always"},
			wantFields: []field{{deployment, inContainer("image"), "registry.example.com/berth:v9"}, {deployment, inContainer("imagePullPolicy"), "Always"}},
		},
		"extra args": {
			args:       []string{"--set-json", `extraArgs=["--zap-log-level=2","--stock"]`},
			wantFields: []field{{deployment, inContainer("args"), "[--config=/etc/berth/controller_config.yaml, --zap-log-level=2, --stock]"}},
		},
		"ServiceMonitor": {
			args:       []string{"--set", "metrics.serviceMonitor.enable=true"},
			wantFields: []field{{"ServiceMonitor berth-system/berth-controller-metrics", []string{"spec", "endpoints", "0", "port"}, "https-metrics"}},
		},
		"no CRDs": {
			args:       []string{"--set", "crds.install=false"},
			wantFields: []field{{"CustomResourceDefinition /workloads.berth.dev", nil, "absent"}},
		},
		"another namespace": {
			args: []string{"-n", "batch"},
			wantFields: []field{
				{"Deployment batch/berth-controller", []string{"metadata", "name"}, "berth-controller"},
				{"RoleBinding batch/berth-controller", []string{"subjects", "0", "namespace"}, "batch"},
				{mutating, []string{"webhooks", "0", "clientConfig", "service", "namespace"}, "batch"},
				{mutating, []string{"webhooks", "0", "namespaceSelector", "matchExpressions", "0", "values"}, "[kube-system, batch]"},
				{"ConfigMap batch/berth-controller-config", []string{"data", configKey, "leaderElection", "resourceNamespace"}, "batch"},
				{"ConfigMap batch/berth-controller-config", []string{"data", configKey, "internalCertManagement", "webhookServiceNamespace"}, "batch"},
				{"ConfigMap batch/berth-controller-config", []string{"data", configKey, "managedJobsNamespaceSelector", "matchExpressions", "0", "values"},
					"[kube-system, berth-system, batch]"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			args := tc.args
			if !slices.Contains(args, "-n") {
				args = append(args, "-n", "berth-system")
			}
			objs := helmTemplate(t, helm, args...)
			for _, f := range tc.wantFields {
				o, ok := objs[f.obj]
				if f.want == "absent" {
					if ok {
						t.Errorf("%s is rendered, want it absent", f.obj)
					}
					continue
				}
				if !ok {
					t.Errorf("%s is not rendered", f.obj)
					continue
				}
				var want any
				if err := yaml.Unmarshal([]byte(f.want), &want); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, get(o, f.path...)); diff != "" {
					t.Errorf("%s %s (-want +got):\n%s", f.obj, strings.Join(f.path, "."), diff)
				}
			}
		})
	}
}

// TestChecksumFollowsConfiguration checks that a change of configuration
// changes the pods' template, so that the Deployment rolls.
func TestChecksumFollowsConfiguration(t *testing.T) {
	helm, _ := tools(t)
	path := []string{"spec", "template", "metadata", "annotations", "checksum/config"}
	before := get(helmTemplate(t, helm, "-n", "berth-system")[deployment], path...)
	after := get(helmTemplate(t, helm, "-n", "berth-system", "--set", "configuration.waitForPodsReady.enable=true")[deployment], path...)
	if before == nil || before == after {
		t.Errorf("checksum/config is %v before and %v after a change of configuration, want two different values", before, after)
	}
}
