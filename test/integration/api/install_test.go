package api

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	configv1alpha1 "github.com/berth-dev/berth/apis/config/v1alpha1"
	"github.com/berth-dev/berth/pkg/config"
	"github.com/berth-dev/berth/test/util/apiserver"
)

// install is a kustomization rendered by the real kubectl's kustomize, by
// kind and name.
type install map[string]*unstructured.Unstructured

// get converts the object of that kind and name into into, strictly.
func (in install) get(t *testing.T, kind, name string, into any) {
	t.Helper()
	obj, ok := in[kind+"/"+name]
	if !ok {
		t.Fatalf("the kustomization has no %s %s", kind, name)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj.Object, into, true); err != nil {
		t.Fatalf("%s %s: %v", kind, name, err)
	}
}

// renderInstall renders config/<dir> with the real kubectl's kustomize.
func renderInstall(ctx context.Context, t *testing.T, dir string) ([]byte, install) {
	t.Helper()
	cmd := exec.CommandContext(ctx, filepath.Join(apiserver.AssetsDir(), "kubectl"), "kustomize", filepath.Join(apiserver.RepoRoot(), "config", dir))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl kustomize config/%s: %v\n%s", dir, err, stderr.String())
	}
	objs, err := apiserver.DecodeManifests(out)
	if err != nil {
		t.Fatal(err)
	}
	in := install{}
	for _, obj := range objs {
		in[obj.GetKind()+"/"+obj.GetName()] = obj
	}
	return out, in
}

// TestInstallManifests renders config/default, checks that its parts fit
// the controller's default configuration and each other, and has the API
// server validate every object with a server-side dry run.
func TestInstallManifests(t *testing.T) {
	ctx := testContext(t)
	rendered, in := renderInstall(ctx, t, "default")

	for _, name := range []string{"resourceflavors", "topologies", "clusterqueues", "cohorts", "localqueues", "workloads", "workloadpriorityclasses"} {
		if _, ok := in["CustomResourceDefinition/"+name+".berth.dev"]; !ok {
			t.Errorf("config/default does not install the CRD %s.berth.dev", name)
		}
	}
	for _, name := range []string{"quotas.berth.dev", "workloads.berth.dev"} {
		for _, kind := range []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
			if _, ok := in[kind+"/"+name]; !ok {
				t.Errorf("config/default does not install the %s %s", kind, name)
			}
		}
	}

	var deploy appsv1.Deployment
	in.get(t, "Deployment", "berth-controller", &deploy)
	pod := deploy.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("the Deployment has %d containers, want the manager alone", len(pod.Containers))
	}
	manager := pod.Containers[0]

	// The configuration the Deployment mounts is the one in config/manager,
	// and the names below must be the ones it says.
	var configMap corev1.ConfigMap
	var configVolume string
	for _, v := range pod.Volumes {
		if v.ConfigMap != nil {
			in.get(t, "ConfigMap", v.ConfigMap.Name, &configMap)
			configVolume = v.Name
		}
	}
	var configPath string
	for _, m := range manager.VolumeMounts {
		if m.Name == configVolume {
			configPath = m.MountPath
		}
	}
	if !slices.Contains(manager.Args, "--config="+configPath+"/controller_config.yaml") {
		t.Errorf("the manager's args %v do not point --config at the mounted %s/controller_config.yaml", manager.Args, configPath)
	}
	cfg, err := config.Decode([]byte(configMap.Data["controller_config.yaml"]))
	if err != nil {
		t.Fatalf("the mounted configuration: %v", err)
	}
	icm := cfg.InternalCertManagement

	var hook admissionregistrationv1.MutatingWebhookConfiguration
	if _, ok := in["MutatingWebhookConfiguration/"+icm.MutatingWebhookConfigurationName]; !ok {
		t.Errorf("config/default has no MutatingWebhookConfiguration %s, the one the controller writes its CA into", icm.MutatingWebhookConfigurationName)
	} else {
		in.get(t, "MutatingWebhookConfiguration", icm.MutatingWebhookConfigurationName, &hook)
	}
	for _, w := range hook.Webhooks {
		if s := w.ClientConfig.Service; s == nil || s.Name != icm.WebhookServiceName || s.Namespace != icm.WebhookServiceNamespace {
			t.Errorf("webhook %s calls %+v, but the controller's certificate is for the Service %s/%s", w.Name, w.ClientConfig, icm.WebhookServiceNamespace, icm.WebhookServiceName)
		}
		checkWebhookSelectors(t, w, cfg)
	}
	if len(hook.Webhooks) == 0 {
		t.Error("the MutatingWebhookConfiguration has no webhooks")
	}
	var validating admissionregistrationv1.ValidatingWebhookConfiguration
	in.get(t, "ValidatingWebhookConfiguration", icm.ValidatingWebhookConfigurationName, &validating)
	checkPodUpdateCalls(t, validating.Webhooks)
	checkPodCreateCalls(t, validating.Webhooks)
	var svc corev1.Service
	in.get(t, "Service", icm.WebhookServiceName, &svc)
	if svc.Namespace != icm.WebhookServiceNamespace {
		t.Errorf("Service %s is in %s, want %s", svc.Name, svc.Namespace, icm.WebhookServiceNamespace)
	}
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(deploy.Spec.Template.Labels)) {
		t.Errorf("Service %s selects %v, which the manager's pods (%v) do not match", svc.Name, svc.Spec.Selector, deploy.Spec.Template.Labels)
	}
	webhookPort := false
	for _, p := range manager.Ports {
		if len(svc.Spec.Ports) == 1 && svc.Spec.Ports[0].TargetPort.StrVal == p.Name && p.ContainerPort == cfg.Webhook.Port {
			webhookPort = true
		}
	}
	if !webhookPort {
		t.Errorf("Service %s does not reach the webhook port %d of the manager (ports %v)", svc.Name, cfg.Webhook.Port, manager.Ports)
	}

	// The certificate directory must be writable under a read-only root.
	writable := false
	for _, m := range manager.VolumeMounts {
		writable = writable || (m.MountPath == cfg.Webhook.CertDir && !m.ReadOnly)
	}
	if !writable {
		t.Errorf("nothing writable is mounted at the webhook certDir %s", cfg.Webhook.CertDir)
	}

	checkBindings(t, in, deploy.Namespace, pod.ServiceAccountName, cfg)
	checkOwnUpdatesSkipped(t, validating.Webhooks, "system:serviceaccount:"+deploy.Namespace+":"+pod.ServiceAccountName)

	dryRun(ctx, t, deploy.Namespace, rendered)
}

// checkOwnUpdatesSkipped checks that every validator that sees updates
// skips those of the manager's user, and only those: the match condition
// names the service account the Deployment runs as.
func checkOwnUpdatesSkipped(t *testing.T, webhooks []admissionregistrationv1.ValidatingWebhook, user string) {
	t.Helper()
	want := "request.operation != 'UPDATE' || request.userInfo.username != '" + user + "'"
	for _, w := range webhooks {
		updates := slices.ContainsFunc(w.Rules, func(r admissionregistrationv1.RuleWithOperations) bool {
			return slices.Contains(r.Operations, admissionregistrationv1.Update)
		})
		var got []string
		for _, c := range w.MatchConditions {
			got = append(got, c.Expression)
		}
		switch {
		case updates && !slices.Equal(got, []string{want}):
			t.Errorf("webhook %s has the match conditions %q, want the one that skips the updates of %s: %q", w.Name, got, user, want)
		case !updates && len(got) > 0:
			t.Errorf("webhook %s sees no update, but has the match conditions %q", w.Name, got)
		}
	}
}

// TestLocalWebhooksAreTheInstalledOnes: the local cluster's webhooks
// (config/local/webhooks.yaml, which call the controller by URL) are those
// config/webhook installs, but for how they reach the controller, so that
// the end-to-end tests run against what a cluster gets.
func TestLocalWebhooksAreTheInstalledOnes(t *testing.T) {
	_, installed := renderInstall(testContext(t), t, "webhook")
	local, err := apiserver.ReadManifests(filepath.Join(apiserver.RepoRoot(), "config", "local", "webhooks.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	webhooks := func(obj map[string]any) map[string]any {
		out := map[string]any{}
		list, _, _ := unstructured.NestedSlice(obj, "webhooks")
		for _, w := range list {
			m, _ := w.(map[string]any)
			delete(m, "clientConfig")
			out[fmt.Sprint(m["name"])] = m
		}
		return out
	}
	if len(local) != 2 {
		t.Fatalf("config/local/webhooks.yaml holds %d objects, want the two webhook configurations", len(local))
	}
	for _, u := range local {
		inst, ok := installed[u.GetKind()+"/"+u.GetName()]
		if !ok {
			t.Fatalf("config/webhook installs no %s %s", u.GetKind(), u.GetName())
		}
		if diff := cmp.Diff(webhooks(inst.Object), webhooks(u.Object)); diff != "" {
			t.Errorf("%s %s differs from the installed one but for clientConfig (-installed +local):\n%s", u.GetKind(), u.GetName(), diff)
		}
	}
}

// checkPodUpdateCalls checks that the API server sends every update of a
// pod that carries Berth's labels before or after it to the pod validator,
// and once where the queue label stays or stays away: a webhook is called
// when its object selector matches the old object or the new.
func checkPodUpdateCalls(t *testing.T, webhooks []admissionregistrationv1.ValidatingWebhook) {
	t.Helper()
	podUpdates := podValidatorSelectors(t, webhooks, admissionregistrationv1.Update)
	sets := []labels.Set{
		{},
		{berthv1alpha1.ManagedLabel: "true"},
		{berthv1alpha1.QueueNameLabel: "q"},
		{berthv1alpha1.QueueNameLabel: "q", berthv1alpha1.ManagedLabel: "true"},
	}
	for _, old := range sets {
		for _, updated := range sets {
			calls := 0
			for _, sel := range podUpdates {
				if sel.Matches(old) || sel.Matches(updated) {
					calls++
				}
			}
			berths := len(old) > 0 || len(updated) > 0
			sameQueueLabel := old.Has(berthv1alpha1.QueueNameLabel) == updated.Has(berthv1alpha1.QueueNameLabel)
			if (berths && calls == 0) || (!berths && calls > 0) || (berths && sameQueueLabel && calls != 1) {
				t.Errorf("an update of a pod labelled %v to %v calls the pod validator %d times", old, updated, calls)
			}
		}
	}
}

// checkPodCreateCalls checks that the API server sends the creation of a
// pod that carries Berth's labels or the queue's to the pod validator,
// once: a Job's pod, made from the template Berth ran the Job with, is
// refused while its Workload is not admitted.
func checkPodCreateCalls(t *testing.T, webhooks []admissionregistrationv1.ValidatingWebhook) {
	t.Helper()
	podCreates := podValidatorSelectors(t, webhooks, admissionregistrationv1.Create)
	for _, set := range []labels.Set{
		{},
		{berthv1alpha1.ManagedLabel: "true", berthv1alpha1.WorkloadLabel: "job-j"},
		{berthv1alpha1.QueueNameLabel: "q"},
		{berthv1alpha1.QueueNameLabel: "q", berthv1alpha1.ManagedLabel: "true"},
	} {
		calls := 0
		for _, sel := range podCreates {
			if sel.Matches(set) {
				calls++
			}
		}
		if want := min(len(set), 1); calls != want {
			t.Errorf("the creation of a pod labelled %v calls the pod validator %d times, want %d", set, calls, want)
		}
	}
}

// podValidatorSelectors is the object selector of each webhook that sends
// the pod operation op to the pod validator.
func podValidatorSelectors(t *testing.T, webhooks []admissionregistrationv1.ValidatingWebhook, op admissionregistrationv1.OperationType) []labels.Selector {
	t.Helper()
	var sels []labels.Selector
	for _, w := range webhooks {
		if w.ClientConfig.Service == nil || w.ClientConfig.Service.Path == nil || *w.ClientConfig.Service.Path != "/validate--v1-pod" ||
			!slices.Contains(w.Rules[0].Operations, op) {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(w.ObjectSelector)
		if err != nil {
			t.Fatal(err)
		}
		sels = append(sels, sel)
	}
	return sels
}

// dryRun has the API server validate every object of rendered with a
// server-side dry run. The namespace must exist for a dry run of what goes
// in it.
func dryRun(ctx context.Context, t *testing.T, namespace string, rendered []byte) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if err := server.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, filepath.Join(apiserver.AssetsDir(), "kubectl"), "--kubeconfig", server.Kubeconfig,
		"apply", "--server-side", "--force-conflicts", "--dry-run=server", "-f", "-")
	cmd.Stdin = bytes.NewReader(rendered)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply --server-side --dry-run=server: %v\n%s", err, out)
	}
}

// TestSchedulerInstallManifests renders config/scheduler, checks that the
// Deployment runs the mounted configuration as an account that may hold
// the Lease that configuration names, and has the API server dry-run it.
func TestSchedulerInstallManifests(t *testing.T) {
	ctx := testContext(t)
	rendered, in := renderInstall(ctx, t, "scheduler")
	var deploy appsv1.Deployment
	in.get(t, "Deployment", "berth-scheduler", &deploy)
	pod := deploy.Spec.Template.Spec
	var configMap corev1.ConfigMap
	for _, v := range pod.Volumes {
		if v.ConfigMap != nil {
			in.get(t, "ConfigMap", v.ConfigMap.Name, &configMap)
		}
	}
	if len(pod.Containers) != 1 || !slices.Contains(pod.Containers[0].Args, "--config=/etc/berth-scheduler/cluster-config.yaml") ||
		len(pod.Containers[0].VolumeMounts) != 1 || pod.Containers[0].VolumeMounts[0].MountPath != "/etc/berth-scheduler" {
		t.Errorf("the scheduler container %+v does not run the mounted cluster-config.yaml", pod.Containers)
	}
	var cfg struct {
		LeaderElection struct {
			ResourceName, ResourceNamespace string
		} `json:"leaderElection"`
	}
	if err := yaml.Unmarshal([]byte(configMap.Data["cluster-config.yaml"]), &cfg); err != nil {
		t.Fatal(err)
	}
	var role rbacv1.Role
	in.get(t, "Role", "berth-scheduler", &role)
	var rb rbacv1.RoleBinding
	in.get(t, "RoleBinding", "berth-scheduler", &rb)
	subject := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: pod.ServiceAccountName, Namespace: deploy.Namespace}
	holdsLease := false
	for _, rule := range role.Rules {
		holdsLease = holdsLease || (slices.Contains(rule.Resources, "leases") && slices.Contains(rule.ResourceNames, cfg.LeaderElection.ResourceName) && slices.Contains(rule.Verbs, "update"))
	}
	if !holdsLease || role.Namespace != cfg.LeaderElection.ResourceNamespace || rb.RoleRef.Name != role.Name || !slices.Contains(rb.Subjects, subject) {
		t.Errorf("the scheduler's account %v may not update its Lease %s/%s (Role %s/%s: %+v)", subject, cfg.LeaderElection.ResourceNamespace, cfg.LeaderElection.ResourceName, role.Namespace, role.Name, role.Rules)
	}
	dryRun(ctx, t, deploy.Namespace, rendered)
}

// checkBindings checks that the manager's service account is bound to the
// generated roles, and that the Role is where the controller keeps its
// Lease and its certificate Secret.
func checkBindings(t *testing.T, in install, namespace, account string, cfg *configv1alpha1.Configuration) {
	t.Helper()
	var sa corev1.ServiceAccount
	in.get(t, "ServiceAccount", account, &sa)
	subject := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: account, Namespace: namespace}
	var crb rbacv1.ClusterRoleBinding
	in.get(t, "ClusterRoleBinding", "berth-controller", &crb)
	var rb rbacv1.RoleBinding
	in.get(t, "RoleBinding", "berth-controller", &rb)
	var role rbacv1.Role
	in.get(t, "Role", rb.RoleRef.Name, &role)
	var clusterRole rbacv1.ClusterRole
	in.get(t, "ClusterRole", crb.RoleRef.Name, &clusterRole)
	if len(clusterRole.Rules) == 0 || len(role.Rules) == 0 {
		t.Errorf("the ClusterRole has %d rules and the Role %d, want config/rbac/role.yaml's", len(clusterRole.Rules), len(role.Rules))
	}
	for name, subjects := range map[string][]rbacv1.Subject{"ClusterRoleBinding": crb.Subjects, "RoleBinding": rb.Subjects} {
		if !slices.Contains(subjects, subject) {
			t.Errorf("the %s binds %v, not the manager's service account %s/%s", name, subjects, namespace, account)
		}
	}
	for what, ns := range map[string]string{
		"the leader election Lease":                cfg.LeaderElection.ResourceNamespace,
		"the webhook certificate Secret":           cfg.InternalCertManagement.WebhookServiceNamespace,
		"the RoleBinding of the Role":              rb.Namespace,
		"the manager's namespace (its Deployment)": namespace,
	} {
		if ns != role.Namespace {
			t.Errorf("%s is in %s, but the Role that allows it is in %s", what, ns, role.Namespace)
		}
	}
}

// checkWebhookSelectors checks what a mutating webhook of the install is
// called for. Berth leaves unlabelled jobs alone unless told otherwise, so
// an unreachable controller must not hold them up: only the *-unlabelled
// webhooks see them, at creation, in the namespaces the configuration's
// managedJobsNamespaceSelector selects (for their default LocalQueue).
// Pods and Deployments come only from the namespaces the configuration
// selects: never the cluster's own, nor Berth's.
func checkWebhookSelectors(t *testing.T, w admissionregistrationv1.MutatingWebhook, cfg *configv1alpha1.Configuration) {
	t.Helper()
	queued, unqueued := labels.Set{berthv1alpha1.QueueNameLabel: "training"}, labels.Set{"app": "other"}
	selector, err := metav1.LabelSelectorAsSelector(w.ObjectSelector)
	if err != nil {
		t.Fatal(err)
	}
	configNS := cfg.Integrations.PodOptions.NamespaceSelector
	if strings.HasSuffix(w.Name, "-unlabelled.berth.dev") {
		if selector.Matches(queued) || !selector.Matches(unqueued) || !slices.Equal(w.Rules[0].Operations, []admissionregistrationv1.OperationType{admissionregistrationv1.Create}) {
			t.Errorf("webhook %s selects %v on %v: want the creation of jobs without %s alone", w.Name, w.ObjectSelector, w.Rules[0].Operations, berthv1alpha1.QueueNameLabel)
		}
		configNS = cfg.ManagedJobsNamespaceSelector
	} else if !selector.Matches(queued) || (!cfg.ManageJobsWithoutQueueName && selector.Matches(unqueued)) {
		t.Errorf("webhook %s selects %v: want jobs with %s, and no others while manageJobsWithoutQueueName is false", w.Name, w.ObjectSelector, berthv1alpha1.QueueNameLabel)
	}
	if resources := w.Rules[0].Resources; !strings.HasSuffix(w.Name, "-unlabelled.berth.dev") && !slices.Contains(resources, "pods") && !slices.Contains(resources, "deployments") {
		return
	}
	webhookNS, err := metav1.LabelSelectorAsSelector(w.NamespaceSelector)
	if err != nil {
		t.Fatal(err)
	}
	wantNS, err := metav1.LabelSelectorAsSelector(configNS)
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"kube-system", "berth-system", "team-a"} {
		l := labels.Set{corev1.LabelMetadataName: ns}
		if webhookNS.Matches(l) != wantNS.Matches(l) || (ns != "team-a") == webhookNS.Matches(l) {
			t.Errorf("webhook %s selects namespace %s: %v, the configuration: %v; want only team-a", w.Name, ns, webhookNS.Matches(l), wantNS.Matches(l))
		}
	}
}
