package certs

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Only the configurations of the default configuration's names; the
// controller's cache lists and watches them by name (ByObject in
// pkg/controllermanager), which is what resourceNames allows. Other names need the
// role changed to match.
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,verbs=get;list;watch;patch,resourceNames=berth-validating-webhook-configuration
// +kubebuilder:rbac:groups=apiregistration.k8s.io,resources=apiservices,verbs=get;list;watch;patch,resourceNames=v1alpha1.visibility.berth.dev
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations,verbs=get;list;watch;patch,resourceNames=berth-mutating-webhook-configuration

var _ reconcile.Reconciler = (*Manager)(nil)

// SetupWithManager gives m mgr's client and API reader, and adds m to mgr
// as a runnable, and a controller that writes the CA bundle back into the
// webhook configurations whenever they change (e.g. re-applied by kubectl
// with an empty caBundle).
func (m *Manager) SetupWithManager(mgr ctrl.Manager) error {
	m.client, m.reader = mgr.GetClient(), mgr.GetAPIReader()
	if err := mgr.Add(m); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("webhook-ca-bundle").
		// Every replica patches: they share the CA through the Secret, so
		// their patches agree.
		WithOptions(controller.Options{NeedLeaderElection: ptr.To(false)})
	if name := m.opts.ValidatingWebhookConfigurationName; name != "" {
		b = b.Watches(&admissionregistrationv1.ValidatingWebhookConfiguration{}, &handler.EnqueueRequestForObject{}, builder.WithPredicates(named(name)))
	}
	if name := m.opts.APIServiceName; name != "" {
		b = b.Watches(APIServiceMetadata(), &handler.EnqueueRequestForObject{}, builder.WithPredicates(named(name)))
	}
	if name := m.opts.MutatingWebhookConfigurationName; name != "" {
		b = b.Watches(&admissionregistrationv1.MutatingWebhookConfiguration{}, &handler.EnqueueRequestForObject{}, builder.WithPredicates(named(name)))
	}
	return b.Complete(m)
}

func named(name string) predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName() == name })
}

// Reconcile brings the certificates up to date with the Secret and writes
// the CA bundle into both webhook configurations, whichever of them
// changed. A change is often another replica's write after it renewed the
// certificates: reading the Secret first makes this replica adopt them
// rather than write its own CA back. Before the first certificate it does
// nothing: Start writes the bundle once there is one.
func (m *Manager) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	select {
	case <-m.ready:
		return reconcile.Result{}, m.ensure(ctx)
	default:
		return reconcile.Result{}, nil
	}
}

// injectCABundles sets the current CA as the caBundle of every webhook of
// both configurations. A configuration that does not exist yet is skipped;
// the watch sees it when it is created.
func (m *Manager) injectCABundles(ctx context.Context) error {
	ca := m.CABundle()
	var errs []error
	if name := m.opts.ValidatingWebhookConfigurationName; name != "" {
		c := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		errs = append(errs, m.patchCABundle(ctx, "ValidatingWebhookConfiguration", name, c, func() []webhookCA { return validatingWebhooks(c) }, ca))
	}
	if name := m.opts.MutatingWebhookConfigurationName; name != "" {
		c := &admissionregistrationv1.MutatingWebhookConfiguration{}
		errs = append(errs, m.patchCABundle(ctx, "MutatingWebhookConfiguration", name, c, func() []webhookCA { return mutatingWebhooks(c) }, ca))
	}
	if name := m.opts.APIServiceName; name != "" {
		errs = append(errs, m.patchAPIService(ctx, name, ca))
	}
	return errors.Join(errs...)
}

// APIServiceMetadata is an APIService as the cache watches it, by its
// metadata only: a change is the cue to read it and patch its caBundle.
// (Its typed API is in k8s.io/kube-aggregator, a module Berth needs for
// nothing else.)
func APIServiceMetadata() *metav1.PartialObjectMetadata {
	o := &metav1.PartialObjectMetadata{}
	o.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiregistration.k8s.io", Version: "v1", Kind: "APIService"})
	return o
}

// patchAPIService sets the CA as the caBundle of the APIService name,
// unless it is already, with a patch that tests the resourceVersion read.
func (m *Manager) patchAPIService(ctx context.Context, name string, ca []byte) error {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(APIServiceMetadata().GroupVersionKind())
	if err := m.reader.Get(ctx, types.NamespacedName{Name: name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			ctrl.LoggerFrom(ctx).V(2).Info("No APIService to write the CA bundle into yet", "name", name)
			return nil
		}
		return fmt.Errorf("reading APIService %s: %w", name, err)
	}
	got, _, _ := unstructured.NestedString(obj.Object, "spec", "caBundle")
	if got == base64.StdEncoding.EncodeToString(ca) {
		return nil
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": obj.GetResourceVersion()},
		"spec":     map[string]any{"caBundle": ca, "insecureSkipTLSVerify": false},
	})
	if err != nil {
		return err
	}
	if err := m.client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("writing the CA bundle into APIService %s: %w", name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Wrote the CA bundle into the APIService", "name", name)
	return nil
}

// patchCABundle reads the configuration of that kind and name into obj and patches the
// webhooks that webhooks lists from it.
func (m *Manager) patchCABundle(ctx context.Context, kind, name string, obj client.Object, webhooks func() []webhookCA, ca []byte) error {
	if err := m.reader.Get(ctx, types.NamespacedName{Name: name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			ctrl.LoggerFrom(ctx).V(2).Info("No webhook configuration to write the CA bundle into yet", "kind", kind, "name", name)
			return nil
		}
		return fmt.Errorf("reading %s %s: %w", kind, name, err)
	}
	patch, err := caBundlePatch(webhooks(), ca)
	if err != nil || patch == nil {
		return err
	}
	if err := m.client.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		return fmt.Errorf("writing the CA bundle into %s %s: %w", kind, name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Wrote the CA bundle into the webhook configuration", "kind", kind, "name", name)
	return nil
}
