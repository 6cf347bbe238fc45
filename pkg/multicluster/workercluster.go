package multicluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// Defaults of the reconciler.
const (
	// CheckInterval is how often a worker is asked again.
	CheckInterval = 30 * time.Second
	// ProbeTimeout bounds one question to a worker's API server.
	ProbeTimeout = 10 * time.Second
)

// WorkerClusterReconciler keeps the Active condition of WorkerClusters;
// see the package documentation.
type WorkerClusterReconciler struct {
	client client.Client
	// secrets reads Secrets from the API server, not from a cache.
	secrets   client.Reader
	namespace string
	interval  time.Duration
	// probe asks the API server of cfg for its version.
	probe func(ctx context.Context, cfg *rest.Config) (string, error)
}

// Options configure the worker clusters' reconciler.
type Options struct {
	// Namespace is Berth's namespace, where the kubeconfig Secrets are.
	Namespace string
	// CheckInterval is how often a worker is asked again; CheckInterval
	// when zero.
	CheckInterval time.Duration
}

// Setup registers the WorkerCluster reconciler with mgr; it reads the
// kubeconfig Secrets with mgr's API reader.
func Setup(mgr ctrl.Manager, opts Options) error {
	r := &WorkerClusterReconciler{
		client: mgr.GetClient(), secrets: mgr.GetAPIReader(), namespace: opts.Namespace,
		interval: opts.CheckInterval, probe: serverVersion,
	}
	if r.interval <= 0 {
		r.interval = CheckInterval
	}
	return r.SetupWithManager(mgr)
}

// +kubebuilder:rbac:groups=berth.dev,resources=workerclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=berth.dev,resources=workerclusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",namespace=berth-system,resources=secrets,verbs=get

// Reconcile checks one WorkerCluster and writes its Active condition when
// it changed.
func (r *WorkerClusterReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	wc := &berthv1alpha1.WorkerCluster{}
	if err := r.client.Get(ctx, req.NamespacedName, wc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	status, reason, msg := r.check(ctx, wc)
	cond := metav1.Condition{
		Type: berthv1alpha1.ConditionActive, Status: status, Reason: reason, Message: msg, ObservedGeneration: wc.Generation,
	}
	if meta.SetStatusCondition(&wc.Status.Conditions, cond) {
		if err := r.client.Status().Update(ctx, wc); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
	}
	return ctrl.Result{RequeueAfter: r.interval}, nil
}

// check says whether wc can be reached, and if not why.
func (r *WorkerClusterReconciler) check(ctx context.Context, wc *berthv1alpha1.WorkerCluster) (metav1.ConditionStatus, string, string) {
	name := wc.Spec.KubeConfig.Location
	secret := &corev1.Secret{}
	if err := r.secrets.Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: name}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return metav1.ConditionFalse, berthv1alpha1.ReasonWorkerSecretMissing,
				fmt.Sprintf("Secret %s/%s, named by spec.kubeConfig.location, does not exist", r.namespace, name)
		}
		return metav1.ConditionFalse, berthv1alpha1.ReasonWorkerSecretMissing,
			fmt.Sprintf("Secret %s/%s, named by spec.kubeConfig.location, cannot be read: %v", r.namespace, name, err)
	}
	data, ok := secret.Data[berthv1alpha1.WorkerClusterKubeConfigKey]
	if !ok {
		return metav1.ConditionFalse, berthv1alpha1.ReasonWorkerSecretMissing,
			fmt.Sprintf("Secret %s/%s has no key %s", r.namespace, name, berthv1alpha1.WorkerClusterKubeConfigKey)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		return metav1.ConditionFalse, berthv1alpha1.ReasonWorkerBadKubeConfig,
			fmt.Sprintf("the kubeconfig in Secret %s/%s cannot be used: %v", r.namespace, name, err)
	}
	version, err := r.probe(ctx, cfg)
	if err != nil {
		return metav1.ConditionFalse, berthv1alpha1.ReasonWorkerUnreachable,
			fmt.Sprintf("the API server at %s does not answer: %v", cfg.Host, err)
	}
	return metav1.ConditionTrue, berthv1alpha1.ReasonWorkerReachable,
		fmt.Sprintf("the API server at %s answers, Kubernetes %s", cfg.Host, version)
}

// serverVersion asks cfg's API server for its version, within
// ProbeTimeout.
func serverVersion(_ context.Context, cfg *rest.Config) (string, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = ProbeTimeout
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return "", err
	}
	v, err := dc.ServerVersion()
	if err != nil {
		return "", err
	}
	return v.GitVersion, nil
}

// SetupWithManager registers the reconciler with mgr.
func (r *WorkerClusterReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("workercluster").
		For(&berthv1alpha1.WorkerCluster{}).
		Complete(r)
}
