package fromkueue

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// group is Kueue's API group and the prefix of its labels and annotations.
const group = "kueue.x-k8s.io"

// kinds are Kueue's kinds that Berth has under the same name.
var kinds = []string{"ResourceFlavor", "ClusterQueue", "LocalQueue", "Cohort", "WorkloadPriorityClass", "AdmissionCheck", "ProvisioningRequestConfig"}

// keys are Kueue's label and annotation keys that Berth reads, and Berth's
// name for each.
var keys = map[string]string{
	group + "/queue-name":            berthv1alpha1.QueueNameLabel,
	group + "/priority-class":        berthv1alpha1.PriorityClassLabel,
	group + "/pod-group-name":        berthv1alpha1.PodGroupNameLabel,
	group + "/pod-group-total-count": berthv1alpha1.PodGroupTotalCountAnnotation,
	group + "/job-min-parallelism":   berthv1alpha1.JobMinParallelismAnnotation,
	group + "/max-exec-time-seconds": berthv1alpha1.MaxExecTimeSecondsLabel,
}

// removed are the fields of Kueue's kinds that Berth's do not have, by
// kind, with why; strict validation would refuse them.
var removed = map[string]map[string]string{
	"ResourceFlavor": {"spec.topologyName": "Berth has no topology-aware admission yet; removed"},
}

// kept are fields Berth accepts and does not act on.
var kept = map[string]map[string]string{
	"ClusterQueue": {"spec.concurrentAdmissionPolicy": "kept; Berth admits in one flavor at a time and says so in the UnusedSettings condition"},
}

// Note is something of the input that Berth has no counterpart for, or
// keeps without acting on, with where it is.
type Note struct {
	// Object is the object, as Kind namespace/name.
	Object string `json:"object"`
	// Field is the field or key.
	Field string `json:"field"`
	// Message says what became of it.
	Message string `json:"message"`
}

func (n Note) String() string { return fmt.Sprintf("%s: %s: %s", n.Object, n.Field, n.Message) }

// Convert rewrites obj in place into Berth's. keep is false for an object
// of a Kueue kind that Berth has no counterpart for: it is left out.
func Convert(obj *unstructured.Unstructured) (keep bool, notes []Note) {
	c := converter{object: describe(obj)}
	if strings.HasPrefix(obj.GetAPIVersion(), "config."+group+"/") {
		c.note("kind", "Kueue's controller configuration is not converted: write Berth's, which has the same names where it has the setting; left out")
		return false, c.notes
	}
	if strings.HasPrefix(obj.GetAPIVersion(), group+"/") {
		kind := obj.GetKind()
		switch {
		case kind == "Workload":
			c.note("kind", "Berth makes its own Workload for each job it holds; left out")
			return false, c.notes
		case !slices.Contains(kinds, kind):
			c.note("kind", fmt.Sprintf("Berth has no %s yet; left out", kind))
			return false, c.notes
		}
		obj.SetAPIVersion(berthv1alpha1.GroupVersion.String())
		fresh(obj)
		c.spec(obj)
	}
	c.walk(obj.Object, "")
	c.leftovers(obj.Object, "")
	return true, c.notes
}

// fresh removes what the API server set on an object read from a cluster
// (kubectl get -o yaml): the converted object is a new one, of another
// group, which the API server would refuse to create with a
// resourceVersion, and whose status is Berth's to write.
func fresh(obj *unstructured.Unstructured) {
	for _, f := range []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink"} {
		unstructured.RemoveNestedField(obj.Object, "metadata", f)
	}
	delete(obj.Object, "status")
}

func describe(obj *unstructured.Unstructured) string {
	if ns := obj.GetNamespace(); ns != "" {
		return obj.GetKind() + " " + ns + "/" + obj.GetName()
	}
	return strings.TrimSpace(obj.GetKind() + " " + obj.GetName())
}

type converter struct {
	object string
	notes  []Note
}

// noted reports whether field has a note already.
func (c *converter) noted(field string) bool {
	return slices.ContainsFunc(c.notes, func(n Note) bool { return n.Field == field })
}

func (c *converter) note(field, msg string) {
	c.notes = append(c.notes, Note{Object: c.object, Field: field, Message: msg})
}

// spec turns the spec of one of Kueue's kinds into Berth's: v1beta1's names
// into v1beta2's, which Berth follows, Kueue's check controller and
// parameters' group into Berth's, and what Berth has not, out.
func (c *converter) spec(obj *unstructured.Unstructured) {
	spec, ok := obj.Object["spec"].(map[string]any)
	if !ok {
		return
	}
	rename(spec, "cohort", "cohortName")
	rename(spec, "parent", "parentName")
	if ff, ok := spec["flavorFungibility"].(map[string]any); ok {
		for _, f := range []string{"whenCanBorrow", "whenCanPreempt"} {
			// v1beta1's Borrow and Preempt are v1beta2's MayStopSearch.
			if v := ff[f]; v == "Borrow" || v == "Preempt" {
				ff[f] = "MayStopSearch"
			}
		}
	}
	if name, _ := spec["controllerName"].(string); name == group+"/provisioning-request" {
		spec["controllerName"] = berthv1alpha1.ProvisioningRequestControllerName
	} else if strings.HasPrefix(name, group+"/") {
		c.note("spec.controllerName", name+" has no counterpart in Berth yet; the check stays inactive")
	}
	if params, ok := spec["parameters"].(map[string]any); ok && params["apiGroup"] == group {
		params["apiGroup"] = berthv1alpha1.GroupVersion.Group
	}
	for field, why := range removed[obj.GetKind()] {
		if _, ok := spec[strings.TrimPrefix(field, "spec.")]; ok {
			delete(spec, strings.TrimPrefix(field, "spec."))
			c.note(field, why)
		}
	}
	for field, why := range kept[obj.GetKind()] {
		if _, ok := spec[strings.TrimPrefix(field, "spec.")]; ok {
			c.note(field, why)
		}
	}
}

func rename(m map[string]any, from, to string) {
	if v, ok := m[from]; ok {
		delete(m, from)
		m[to] = v
	}
}

// walk renames, in every metadata at any depth (the object's, its pod
// templates'), the labels and annotations Berth reads, and notes Kueue's
// others.
func (c *converter) walk(v any, path string) {
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			if k == "metadata" {
				if meta, ok := child.(map[string]any); ok {
					c.keys(meta, "labels", path+".metadata.labels")
					c.keys(meta, "annotations", path+".metadata.annotations")
				}
				continue
			}
			c.walk(child, path+"."+k)
		}
	case []any:
		for i, child := range v {
			c.walk(child, fmt.Sprintf("%s[%d]", path, i))
		}
	}
}

func (c *converter) keys(meta map[string]any, field, path string) {
	m, ok := meta[field].(map[string]any)
	if !ok {
		return
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !strings.Contains(k, group) { // provreq.kueue.x-k8s.io/ too
			continue
		}
		to, ok := keys[k]
		if !ok {
			c.note(strings.TrimPrefix(path, ".")+"["+k+"]", "Berth does not read it; left as it is")
			continue
		}
		m[to] = m[k]
		delete(m, k)
	}
}

// leftovers notes every other place where the object still names Kueue's
// group after conversion (an owner reference, a Job's spec.managedBy, a
// policy's expression): Berth reads none of them, and what each should
// become is for a person to say.
func (c *converter) leftovers(v any, path string) {
	switch v := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if (k == "labels" || k == "annotations") && strings.HasSuffix(path, "metadata") {
				continue // keys, above
			}
			c.leftovers(v[k], strings.TrimPrefix(path+"."+k, "."))
		}
	case []any:
		for i, child := range v {
			c.leftovers(child, fmt.Sprintf("%s[%d]", path, i))
		}
	case string:
		if strings.Contains(v, group) && !c.noted(path) {
			if len(v) > 80 {
				v = v[:77] + "..."
			}
			c.note(path, fmt.Sprintf("still names %s (%q): Berth does not read it; rewrite or remove it by hand", group, v))
		}
	}
}
