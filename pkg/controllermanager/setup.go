package controllermanager

import (
	"context"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	autoscalingv1 "github.com/berth-dev/berth/apis/autoscaling/v1"
	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	configv1alpha1 "github.com/berth-dev/berth/apis/config/v1alpha1"
	"github.com/berth-dev/berth/pkg/applier"
	"github.com/berth-dev/berth/pkg/controller"
	"github.com/berth-dev/berth/pkg/engine/cache"
	"github.com/berth-dev/berth/pkg/engine/queue"
	"github.com/berth-dev/berth/pkg/engine/scheduler"
	"github.com/berth-dev/berth/pkg/engine/workload"
	"github.com/berth-dev/berth/pkg/fabric"
	"github.com/berth-dev/berth/pkg/jobframework"
	"github.com/berth-dev/berth/pkg/metrics"
	"github.com/berth-dev/berth/pkg/multicluster"
	"github.com/berth-dev/berth/pkg/provisioning"
	"github.com/berth-dev/berth/pkg/workloadwriter"
)

// Options is what the controllers take from the configuration.
type Options struct {
	// MultiCluster configures the worker clusters' reconciler; its
	// namespace is Berth's (the default namespace when empty).
	MultiCluster multicluster.Options
	// Controllers configures the reconcilers of Berth's kinds.
	Controllers controller.Options
	// Jobs configures the job integrations.
	Jobs jobframework.Options
	// Integrations are the names of the enabled job frameworks.
	Integrations []string
	// Deviations says whether the controller departs from stock
	// controller-runtime and client-go.
	Deviations Deviations
	// FairSharing turns fair sharing on: borrowers admitted by their
	// queues' weighted shares, preempting to borrow by FairStrategies,
	// and the shares in the queues' status.
	FairSharing    bool
	FairStrategies []configv1alpha1.PreemptionStrategy
	// PreemptionDelay is how long a preemptor holds the quota freed for
	// it before it evicts.
	PreemptionDelay time.Duration
	// BlockAdmission admits nothing while the pods of an admitted workload
	// are not all ready.
	BlockAdmission bool
	// Ordering places evicted workloads back in their queues.
	Ordering workload.Ordering
	// AdmissionFairSharing, when set, orders the workloads of the
	// ClusterQueues that ask for it by their LocalQueue's recent usage.
	AdmissionFairSharing *queue.AdmissionFairSharing
	// Visibility, when set, serves the visibility API from the queues.
	Visibility *VisibilityOptions
}

// AddToScheme adds Berth's kinds and the enabled frameworks' kinds.
func AddToScheme(scheme *runtime.Scheme, integrations []string) error {
	if err := berthv1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	if err := autoscalingv1.AddToScheme(scheme); err != nil {
		return err
	}
	enabled, err := jobframework.Enabled(integrations)
	if err != nil {
		return err
	}
	for _, i := range enabled {
		if i.AddToScheme == nil {
			continue
		}
		if err := i.AddToScheme(scheme); err != nil {
			return err
		}
	}
	return nil
}

// admissionWriters is how many admission and preemption writes of a
// scheduling cycle are under way at once. Each is one write of a
// Workload's status; in parallel, a cycle costs about one round trip to the
// API server instead of one per decision.
const admissionWriters = 32

// schedulerOptions are the scheduler's options that opts call for.
func schedulerOptions(opts Options) []scheduler.Option {
	schedOpts := []scheduler.Option{scheduler.WithParallelism(admissionWriters),
		scheduler.WithCycleObserver(func(_ scheduler.Stats, took time.Duration) {
			metrics.AdmissionCycleDuration.Observe(took.Seconds())
		})}
	if opts.PreemptionDelay > 0 {
		schedOpts = append(schedOpts, scheduler.WithPreemptionDelay(opts.PreemptionDelay))
	}
	if opts.BlockAdmission {
		schedOpts = append(schedOpts, scheduler.WithBlockAdmission())
	}
	if opts.FairSharing {
		schedOpts = append(schedOpts, scheduler.WithFairSharing(opts.FairStrategies...))
	}
	return schedOpts
}

// Setup wires the admission engine, the reconcilers, the applier, the job
// integrations and the scheduler into mgr. The scheduler runs on the leader
// only.
func Setup(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	c := cache.New()
	q := queue.NewManager()
	q.SetOrdering(opts.Ordering)
	if opts.AdmissionFairSharing != nil {
		q.SetAdmissionFairSharing(opts.AdmissionFairSharing)
	}
	writer, err := opts.Deviations.WorkloadWriter(mgr)
	if err != nil {
		return err
	}
	recorder := mgr.GetEventRecorder("berth-controller")
	pending, err := setupWaitReasons(mgr, writer, c, q)
	if err != nil {
		return err
	}
	enabled, err := jobframework.Enabled(opts.Integrations)
	if err != nil {
		return err
	}
	if err := setupFabrics(ctx, mgr, c, q); err != nil {
		return err
	}
	engine := controller.Engine{Cache: c, Queues: q, Writer: writer, Pending: pending, Recorder: recorder}
	ctrlOpts := opts.Controllers
	ctrlOpts.Integrated = integrated(enabled)
	ctrlOpts.FairSharing = opts.FairSharing
	if opts.AdmissionFairSharing != nil {
		ctrlOpts.UsageSamplingInterval = opts.AdmissionFairSharing.Interval
		ctrlOpts.AdmissionFairSharing = true
	}
	if err := controller.Setup(ctx, mgr, engine, ctrlOpts); err != nil {
		return err
	}
	if v := opts.Visibility; v != nil {
		if err := setupVisibility(mgr, q, *v); err != nil {
			return err
		}
	}
	if err := setupAudit(ctx, mgr, enabled, opts.Jobs.PodNamespaces, recorder); err != nil {
		return fmt.Errorf("setting up the quota audit: %w", err)
	}
	if err := provisioning.Setup(mgr, writer); err != nil {
		return fmt.Errorf("setting up the provisioning admission check: %w", err)
	}
	if err := setupMultiCluster(mgr, opts.MultiCluster, writer); err != nil {
		return err
	}
	jobOpts := opts.Jobs
	jobOpts.Writer = writer
	jobOpts.Frameworks = opts.Integrations
	if jobOpts.ControllerUsername, err = whoAmI(ctx, mgr); err != nil {
		return err
	}
	for _, i := range enabled {
		if err := i.SetupWithManager(mgr, jobOpts); err != nil {
			return fmt.Errorf("setting up job integration %s: %w", i.Name, err)
		}
	}
	jobframework.RegisterDisabled(mgr.GetWebhookServer(), opts.Integrations)
	cqOf := func(ctx context.Context, name berthv1alpha1.ClusterQueueReference) (*berthv1alpha1.ClusterQueue, error) {
		cq := &berthv1alpha1.ClusterQueue{}
		// Read only: the informer cache's own object.
		return cq, mgr.GetClient().Get(ctx, client.ObjectKey{Name: string(name)}, cq, client.UnsafeDisableDeepCopy)
	}
	sched := scheduler.New(c, q, applier.New(writer, mgr.GetAPIReader(), recorder, pending, cqOf), schedulerOptions(opts)...)
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		ctx = ctrl.LoggerInto(ctx, mgr.GetLogger().WithName("scheduler"))
		if err := waitForWorkloads(ctx, mgr.GetAPIReader(), mgr.GetClient()); err != nil {
			return err
		}
		if err := prime(ctx, mgr.GetClient(), c, q); err != nil {
			return err
		}
		sched.Start(ctx)
		return nil
	}))
}

// setupWaitReasons adds to mgr what writes why workloads wait, told by q
// which workloads wait behind which.
func setupWaitReasons(mgr ctrl.Manager, writer workloadwriter.Writer, c *cache.Cache, q *queue.Manager) (*applier.WaitReasons, error) {
	pending := applier.NewWaitReasons(mgr.GetClient(), writer, c.HoldsQuota)
	q.OnBehind(func(behind []queue.Behind) {
		for _, b := range behind {
			pending.SetBehind(b.Workload, b.Head, b.Strict)
		}
	})
	return pending, mgr.Add(pending)
}

// setupMultiCluster sets up the worker clusters' reconciler, in Berth's
// namespace by default.
func setupMultiCluster(mgr ctrl.Manager, opts multicluster.Options, writer workloadwriter.Writer) error {
	opts.Writer = writer
	if opts.Namespace == "" {
		opts.Namespace = configv1alpha1.DefaultNamespace
	}
	if err := multicluster.Setup(mgr, opts); err != nil {
		return fmt.Errorf("setting up the worker clusters: %w", err)
	}
	return nil
}

// setupFabrics gives c the live view of the nodes of flavors with a
// Topology; a pod that ends or a node that joins has q look again at the
// workloads it set aside.
func setupFabrics(ctx context.Context, mgr ctrl.Manager, c *cache.Cache, q *queue.Manager) error {
	nodes := fabric.NewTracker(q.QueueAllInadmissible)
	if err := nodes.SetupWithManager(ctx, mgr); err != nil {
		return fmt.Errorf("setting up the view of nodes for topologies: %w", err)
	}
	c.SetFabrics(nodes)
	return nil
}

// prime loads the quota held by workloads before the first cycle, so that
// a controller that starts (or restarts, or takes over as leader) never
// hands out quota that workloads admitted earlier still hold, and the
// LocalQueues' usage recorded in their status, so that the first cycle
// orders by it. It reads the
// cache, which waitForWorkloads has brought up to the API server's state. The
// reconcilers would load the same, but with no ordering against the
// scheduler's first cycle.
func prime(ctx context.Context, c client.Reader, engine *cache.Cache, queues *queue.Manager) error {
	flavors := &berthv1alpha1.ResourceFlavorList{}
	cohorts := &berthv1alpha1.CohortList{}
	cqs := &berthv1alpha1.ClusterQueueList{}
	wls := &berthv1alpha1.WorkloadList{}
	lqs := &berthv1alpha1.LocalQueueList{}
	checks := &berthv1alpha1.AdmissionCheckList{}
	for _, list := range []client.ObjectList{flavors, cohorts, cqs, wls, lqs, checks} {
		if err := c.List(ctx, list); err != nil {
			return fmt.Errorf("loading the quota in use: %w", err)
		}
	}
	for i := range flavors.Items {
		engine.AddOrUpdateResourceFlavor(&flavors.Items[i])
	}
	for i := range checks.Items {
		engine.AddOrUpdateAdmissionCheck(&checks.Items[i])
	}
	for i := range cohorts.Items {
		engine.AddOrUpdateCohort(&cohorts.Items[i])
	}
	for i := range cqs.Items {
		engine.AddOrUpdateClusterQueue(&cqs.Items[i])
	}
	for i := range wls.Items {
		engine.AddOrUpdateWorkload(&wls.Items[i])
	}
	for i := range lqs.Items {
		queues.AddOrUpdateLocalQueue(&lqs.Items[i])
	}
	ctrl.LoggerFrom(ctx).Info("Loaded the quota in use", "clusterQueues", len(cqs.Items), "workloads", len(wls.Items))
	return nil
}

// integrated reports whether one of the enabled integrations runs the
// workloads of an owner of ref's kind.
func integrated(enabled []*jobframework.Integration) func(metav1.OwnerReference) bool {
	kinds := map[schema.GroupVersionKind]bool{}
	for _, i := range enabled {
		kinds[i.GVK] = true
	}
	return func(ref metav1.OwnerReference) bool {
		return kinds[schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)]
	}
}

// whoAmI is the user the manager's requests are made as: the job webhooks
// leave the controller's own writes alone.
func whoAmI(ctx context.Context, mgr ctrl.Manager) (string, error) {
	cs, err := kubernetes.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return "", err
	}
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("asking the API server who the controller is: %w", err)
	}
	return review.Status.UserInfo.Username, nil
}
