package scenario

import (
	"fmt"
	"os"
	"slices"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// Config is a benchmark scenario: cohorts of ClusterQueues and the
// workloads submitted to each. It has the shape of Kueue's scheduler
// performance generator config; requests are in cpu, in one flavor.
type Config struct {
	Cohorts []CohortSet `json:"cohorts"`
}

// CohortSet is Count cohorts alike, named ClassName-<index>.
type CohortSet struct {
	ClassName  string      `json:"className"`
	Count      int         `json:"count"`
	QueuesSets []QueuesSet `json:"queuesSets"`
}

// QueuesSet is Count ClusterQueues alike in every cohort of the set.
type QueuesSet struct {
	ClassName           string                         `json:"className"`
	Count               int                            `json:"count"`
	NominalQuota        resource.Quantity              `json:"nominalQuota"`
	BorrowingLimit      *resource.Quantity             `json:"borrowingLimit,omitempty"`
	ReclaimWithinCohort berthv1alpha1.PreemptionPolicy `json:"reclaimWithinCohort,omitempty"`
	WithinClusterQueue  berthv1alpha1.PreemptionPolicy `json:"withinClusterQueue,omitempty"`
	WorkloadsSets       []WorkloadsSet                 `json:"workloadsSets"`
}

// WorkloadsSet creates its Workloads, one of each, Count times in every
// ClusterQueue of the set: the i-th time at i*CreationIntervalMs after the
// start. The sets of a ClusterQueue run side by side.
type WorkloadsSet struct {
	Count              int                `json:"count"`
	CreationIntervalMs int64              `json:"creationIntervalMs"`
	Workloads          []WorkloadTemplate `json:"workloads"`
}

// WorkloadTemplate is one workload: a single pod requesting Request cpu,
// running RuntimeMs once admitted.
type WorkloadTemplate struct {
	ClassName string            `json:"className"`
	RuntimeMs int64             `json:"runtimeMs"`
	Priority  int32             `json:"priority"`
	Request   resource.Quantity `json:"request"`
}

// LoadConfig reads and validates a config file.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	cfg, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// ParseConfig decodes a config, refusing unknown fields, and validates it.
func ParseConfig(data []byte) (*Config, error) {
	cfg := &Config{}
	if err := yaml.UnmarshalStrict(data, cfg); err != nil {
		return nil, err
	}
	if errs := cfg.Validate(); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return cfg, nil
}

var policies = []string{
	"", string(berthv1alpha1.PreemptionPolicyNever), string(berthv1alpha1.PreemptionPolicyLowerPriority),
	string(berthv1alpha1.PreemptionPolicyLowerOrNewerEqualPriority), string(berthv1alpha1.PreemptionPolicyAny),
}

// Validate returns what makes the config unusable.
func (c *Config) Validate() field.ErrorList {
	var errs field.ErrorList
	if len(c.Cohorts) == 0 {
		errs = append(errs, field.Required(field.NewPath("cohorts"), "a scenario needs at least one cohort"))
	}
	classes := map[string]bool{}
	for i, cs := range c.Cohorts {
		p := field.NewPath("cohorts").Index(i)
		errs = append(errs, validateName(cs.ClassName, p.Child("className"))...)
		errs = append(errs, validateCount(cs.Count, p.Child("count"))...)
		for j, qs := range cs.QueuesSets {
			errs = append(errs, validateQueuesSet(&qs, p.Child("queuesSets").Index(j), classes)...)
		}
	}
	return errs
}

func validateQueuesSet(qs *QueuesSet, p *field.Path, classes map[string]bool) field.ErrorList {
	errs := validateName(qs.ClassName, p.Child("className"))
	errs = append(errs, validateCount(qs.Count, p.Child("count"))...)
	if qs.NominalQuota.Sign() <= 0 {
		errs = append(errs, field.Invalid(p.Child("nominalQuota"), qs.NominalQuota.String(), "must be positive"))
	}
	if qs.BorrowingLimit != nil && qs.BorrowingLimit.Sign() < 0 {
		errs = append(errs, field.Invalid(p.Child("borrowingLimit"), qs.BorrowingLimit.String(), "must not be negative"))
	}
	for name, v := range map[string]berthv1alpha1.PreemptionPolicy{"reclaimWithinCohort": qs.ReclaimWithinCohort, "withinClusterQueue": qs.WithinClusterQueue} {
		if !slices.Contains(policies, string(v)) {
			errs = append(errs, field.NotSupported(p.Child(name), v, policies[1:]))
		}
	}
	for k, ws := range qs.WorkloadsSets {
		wp := p.Child("workloadsSets").Index(k)
		errs = append(errs, validateCount(ws.Count, wp.Child("count"))...)
		if ws.CreationIntervalMs < 0 {
			errs = append(errs, field.Invalid(wp.Child("creationIntervalMs"), ws.CreationIntervalMs, "must not be negative"))
		}
		if len(ws.Workloads) == 0 {
			errs = append(errs, field.Required(wp.Child("workloads"), "a set needs at least one workload"))
		}
		for l, w := range ws.Workloads {
			errs = append(errs, validateTemplate(&w, wp.Child("workloads").Index(l), qs, classes)...)
		}
	}
	return errs
}

func validateTemplate(w *WorkloadTemplate, p *field.Path, qs *QueuesSet, classes map[string]bool) field.ErrorList {
	errs := validateName(w.ClassName, p.Child("className"))
	classes[w.ClassName] = true
	if w.RuntimeMs <= 0 {
		errs = append(errs, field.Invalid(p.Child("runtimeMs"), w.RuntimeMs, "must be positive"))
	}
	if w.Request.Sign() <= 0 {
		errs = append(errs, field.Invalid(p.Child("request"), w.Request.String(), "must be positive"))
	}
	limit := qs.NominalQuota.DeepCopy()
	if qs.BorrowingLimit != nil {
		limit.Add(*qs.BorrowingLimit)
	}
	if qs.BorrowingLimit != nil && w.Request.Cmp(limit) > 0 {
		errs = append(errs, field.Invalid(p.Child("request"), w.Request.String(),
			fmt.Sprintf("exceeds what the ClusterQueue can ever hold (nominalQuota + borrowingLimit = %s): it would never be admitted", limit.String())))
	}
	return errs
}

func validateName(name string, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	return nil
}

func validateCount(n int, p *field.Path) field.ErrorList {
	if n <= 0 {
		return field.ErrorList{field.Invalid(p, n, "must be positive")}
	}
	return nil
}
