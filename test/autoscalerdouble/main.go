// Command autoscalerdouble is a test double of cluster-autoscaler for the
// local cluster: cluster-autoscaler itself cannot be built here, and has no
// cloud to scale. It answers ProvisioningRequests of class
// best-effort-atomic-scale-up.autoscaling.x-k8s.io as cluster-autoscaler
// would, on simulated nodes: after -delay it adds one kwok node per pod of
// the request, shaped by the pods' requests and labelled with their node
// selector, and sets Provisioned; or, while the ConfigMap named by -capacity
// holds outOfCapacity: "true", it sets Failed. The nodes of a request that
// is deleted are deleted (scale-down). It implements nothing else of
// cluster-autoscaler.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	autoscalingv1 "github.com/berth-dev/berth/apis/autoscaling/v1"
)

// requestLabel marks the nodes made for a request.
const requestLabel = "autoscaling.x-k8s.io/provisioning-request"

type provisioner struct {
	client   client.Client
	delay    time.Duration
	capacity types.NamespacedName
}

func main() {
	delay := flag.Duration("delay", 3*time.Second, "how long a request waits before its nodes are added")
	capacity := flag.String("capacity", "berth-system/cloud-capacity", "namespace/name of the ConfigMap whose outOfCapacity: \"true\" fails requests")
	flag.Parse()
	ctrl.SetLogger(zap.New())
	ns, name, _ := strings.Cut(*capacity, "/")
	if err := run(*delay, types.NamespacedName{Namespace: ns, Name: name}); err != nil {
		fmt.Fprintln(os.Stderr, "autoscalerdouble:", err)
		os.Exit(1)
	}
}

func run(delay time.Duration, capacity types.NamespacedName) error {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := autoscalingv1.AddToScheme(scheme); err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	if err != nil {
		return err
	}
	p := &provisioner{client: mgr.GetClient(), delay: delay, capacity: capacity}
	if err := ctrl.NewControllerManagedBy(mgr).Named("autoscalerdouble").For(&autoscalingv1.ProvisioningRequest{}).Complete(p); err != nil {
		return err
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}

// Reconcile answers one request.
func (p *provisioner) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pr := &autoscalingv1.ProvisioningRequest{}
	if err := p.client.Get(ctx, req.NamespacedName, pr); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, p.scaleDown(ctx, req.Name)
		}
		return ctrl.Result{}, err
	}
	if pr.Spec.ProvisioningClassName != autoscalingv1.BestEffortAtomicScaleUp ||
		meta.IsStatusConditionTrue(pr.Status.Conditions, autoscalingv1.Provisioned) || meta.IsStatusConditionTrue(pr.Status.Conditions, autoscalingv1.Failed) {
		return ctrl.Result{}, nil
	}
	if !meta.IsStatusConditionTrue(pr.Status.Conditions, autoscalingv1.Accepted) {
		return ctrl.Result{RequeueAfter: p.delay}, p.set(ctx, pr, autoscalingv1.Accepted, "the test double of cluster-autoscaler took the request")
	}
	if wait := p.delay - time.Since(meta.FindStatusCondition(pr.Status.Conditions, autoscalingv1.Accepted).LastTransitionTime.Time); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	cm := &corev1.ConfigMap{}
	if err := p.client.Get(ctx, p.capacity, cm); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, err
	}
	if cm.Data["outOfCapacity"] == "true" {
		return ctrl.Result{}, p.set(ctx, pr, autoscalingv1.Failed, "the cloud is out of capacity (ConfigMap "+p.capacity.String()+")")
	}
	n := 0
	for _, ps := range pr.Spec.PodSets {
		pt := &corev1.PodTemplate{}
		if err := p.client.Get(ctx, types.NamespacedName{Namespace: pr.Namespace, Name: ps.PodTemplateRef.Name}, pt); err != nil {
			return ctrl.Result{}, err
		}
		for i := range ps.Count {
			if err := p.addNode(ctx, pr.Name, fmt.Sprintf("%s-%d", ps.PodTemplateRef.Name, i), &pt.Template.Spec); err != nil {
				return ctrl.Result{}, err
			}
			n++
		}
	}
	return ctrl.Result{}, p.set(ctx, pr, autoscalingv1.Provisioned, fmt.Sprintf("%d nodes added by the test double of cluster-autoscaler", n))
}

// addNode adds a kwok node that fits one pod of spec.
func (p *provisioner) addNode(ctx context.Context, request, name string, spec *corev1.PodSpec) error {
	capacity := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("110")}
	for _, c := range spec.Containers {
		for r, q := range c.Resources.Requests {
			sum := capacity[r]
			sum.Add(q)
			capacity[r] = sum
		}
	}
	labels := map[string]string{
		"kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux", "kubernetes.io/hostname": "cloud-" + name,
		"type": "kwok", requestLabel: request,
	}
	for k, v := range spec.NodeSelector {
		labels[k] = v
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "cloud-" + name, Labels: labels, Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"}},
		Status:     corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
	if err := p.client.Create(ctx, node); client.IgnoreAlreadyExists(err) != nil {
		return err
	}
	return nil
}

// scaleDown deletes the nodes of a request that is gone.
func (p *provisioner) scaleDown(ctx context.Context, request string) error {
	return p.client.DeleteAllOf(ctx, &corev1.Node{}, client.MatchingLabels{requestLabel: request})
}

func (p *provisioner) set(ctx context.Context, pr *autoscalingv1.ProvisioningRequest, typ, msg string) error {
	meta.SetStatusCondition(&pr.Status.Conditions, metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: typ, Message: msg})
	return p.client.Status().Update(ctx, pr)
}
