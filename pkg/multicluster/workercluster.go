package multicluster

import (
	"cmp"
	"context"
	"errors"
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
	configv1alpha1 "github.com/berth-dev/berth/apis/config/v1alpha1"
	"github.com/berth-dev/berth/pkg/workloadwriter"
)

// Defaults of the reconciler.
const (
	// CheckInterval is how often a worker is asked again.
	CheckInterval = 30 * time.Second
	// ProbeTimeout bounds one question to a worker's API server.
	ProbeTimeout = 10 * time.Second
	// lostCheckInterval is how often a worker that cannot be reached is
	// asked again.
	lostCheckInterval = 3 * time.Second
)

// WorkerClusterReconciler keeps the Active condition of WorkerClusters;
// see the package documentation.
type WorkerClusterReconciler struct {
	client client.Client
	// secrets reads Secrets from the API server, not from a cache.
	secrets   client.Reader
	namespace string
	interval  time.Duration
	// workers are connected while they are active.
	workers *workers
}

// Options configure the worker clusters' reconciler.
type Options struct {
	// Namespace is Berth's namespace, where the kubeconfig Secrets are.
	Namespace string
	// CheckInterval is how often a worker is asked again; CheckInterval
	// when zero.
	CheckInterval time.Duration
	// Origin is the label value that marks this manager's copies in the
	// workers; "berth" when empty.
	Origin string
	// WorkerLostTimeout is how long a worker may not answer before what
	// runs there is requeued; 15 minutes when zero.
	WorkerLostTimeout time.Duration
	// Writer writes the status of the manager's Workloads.
	Writer workloadwriter.Writer
}

// Setup registers with mgr the WorkerCluster reconciler, which reads the
// kubeconfig Secrets with mgr's API reader, the checks' reconciler and the
// dispatcher.
func Setup(mgr ctrl.Manager, opts Options) error {
	origin := cmp.Or(opts.Origin, configv1alpha1.DefaultMultiClusterOrigin)
	ws := newWorkers(mgr.GetScheme(), origin)
	if err := mgr.Add(ws); err != nil {
		return err
	}
	d := &Dispatcher{
		client: mgr.GetClient(), writer: opts.Writer, workers: ws, origin: origin,
		lostTimeout: cmp.Or(opts.WorkerLostTimeout, configv1alpha1.DefaultWorkerLostTimeout),
	}
	ws.poke = d.wakeAll
	r := &WorkerClusterReconciler{
		client: mgr.GetClient(), secrets: mgr.GetAPIReader(), namespace: opts.Namespace,
		interval: cmp.Or(opts.CheckInterval, CheckInterval), workers: ws,
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return err
	}
	if err := setupChecks(mgr); err != nil {
		return err
	}
	return d.SetupWithManager(mgr)
}

// +kubebuilder:rbac:groups=berth.dev,resources=workerclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=berth.dev,resources=workerclusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",namespace=berth-system,resources=secrets,verbs=get

// Reconcile checks one WorkerCluster and writes its Active condition when
// it changed.
func (r *WorkerClusterReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	wc := &berthv1alpha1.WorkerCluster{}
	if err := r.client.Get(ctx, req.NamespacedName, wc); err != nil {
		if apierrors.IsNotFound(err) {
			// Nothing is dispatched to a worker that is gone; what ran
			// there is requeued at once.
			r.workers.disconnect(ctx, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	status, reason, msg, kubeconfig := r.check(ctx, wc)
	if status == metav1.ConditionTrue {
		if err := r.workers.connect(wc.Name, kubeconfig); errors.Is(err, errNotStarted) {
			// The manager starts the connections beside this reconciler.
			return ctrl.Result{RequeueAfter: time.Second}, nil
		} else if err != nil {
			status, reason, msg = metav1.ConditionFalse, berthv1alpha1.ReasonWorkerUnreachable, fmt.Sprintf("Berth cannot watch its copies there: %v", err)
		}
	}
	if status != metav1.ConditionTrue {
		r.workers.disconnect(ctx, wc.Name)
	}
	cond := metav1.Condition{
		Type: berthv1alpha1.ConditionActive, Status: status, Reason: reason, Message: msg, ObservedGeneration: wc.Generation,
	}
	if meta.SetStatusCondition(&wc.Status.Conditions, cond) {
		if err := r.client.Status().Update(ctx, wc); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
	}
	if status != metav1.ConditionTrue {
		// A worker that came back is seen within seconds, so that a copy
		// left there while it was lost is deleted soon.
		return ctrl.Result{RequeueAfter: min(r.interval, lostCheckInterval)}, nil
	}
	return ctrl.Result{RequeueAfter: r.interval}, nil
}

// check says whether wc can be reached, and if not why.
func (r *WorkerClusterReconciler) check(ctx context.Context, wc *berthv1alpha1.WorkerCluster) (metav1.ConditionStatus, string, string, []byte) {
	name := wc.Spec.KubeConfig.Location
	secret := &corev1.Secret{}
	if err := r.secrets.Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: name}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return metav1.ConditionFalse, berthv1alpha1.ReasonWorkerSecretMissing,
				fmt.Sprintf("Secret %s/%s, named by spec.kubeConfig.location, does not exist", r.namespace, name), nil
		}
		return metav1.ConditionFalse, berthv1alpha1.ReasonWorkerSecretMissing,
			fmt.Sprintf("Secret %s/%s, named by spec.kubeConfig.location, cannot be read: %v", r.namespace, name, err), nil
	}
	data, ok := secret.Data[berthv1alpha1.WorkerClusterKubeConfigKey]
	if !ok {
		return metav1.ConditionFalse, berthv1alpha1.ReasonWorkerSecretMissing,
			fmt.Sprintf("Secret %s/%s has no key %s", r.namespace, name, berthv1alpha1.WorkerClusterKubeConfigKey), nil
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		return metav1.ConditionFalse, berthv1alpha1.ReasonWorkerBadKubeConfig,
			fmt.Sprintf("the kubeconfig in Secret %s/%s cannot be used: %v", r.namespace, name, err), nil
	}
	version, err := serverVersion(cfg)
	if err != nil {
		return metav1.ConditionFalse, berthv1alpha1.ReasonWorkerUnreachable,
			fmt.Sprintf("the API server at %s does not answer: %v", cfg.Host, err), nil
	}
	return metav1.ConditionTrue, berthv1alpha1.ReasonWorkerReachable,
		fmt.Sprintf("the API server at %s answers, Kubernetes %s", cfg.Host, version), data
}

// serverVersion asks cfg's API server for its version, within
// ProbeTimeout.
func serverVersion(cfg *rest.Config) (string, error) {
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
