package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// logged is what a cycle logged: error entries, and info entries by
// message.
type logged struct {
	errors []string
	infos  []string
}

// capture returns a context whose logger, at verbosity 2, records into l.
func capture(t *testing.T, l *logged) context.Context {
	t.Helper()
	log := funcr.NewJSON(func(obj string) {
		var e map[string]any
		if err := json.Unmarshal([]byte(obj), &e); err != nil {
			t.Fatalf("log entry %s: %v", obj, err)
		}
		msg, _ := e["msg"].(string)
		if _, info := e["level"]; info {
			l.infos = append(l.infos, msg)
		} else {
			l.errors = append(l.errors, msg)
		}
	}, funcr.Options{Verbosity: 2})
	return logr.NewContext(context.Background(), log)
}

func TestRacedWritesAreNotLoggedAsErrors(t *testing.T) {
	gr := schema.GroupResource{Group: berthv1alpha1.GroupVersion.Group, Resource: "workloads"}
	conflict := apierrors.NewConflict(gr, "w", errors.New("the object has been modified"))
	gone := apierrors.NewNotFound(gr, "w")
	internal := apierrors.NewInternalError(errors.New("etcdserver: request timed out"))

	for _, tc := range []struct {
		name       string
		admitErr   error
		preemptErr error
		wantErrors []string
		wantInfo   string
	}{
		{name: "admission conflict", admitErr: conflict, wantInfo: "Admitting workload raced another write; trying again"},
		{name: "admitted workload gone", admitErr: gone, wantInfo: "Admitting workload raced another write; trying again"},
		{name: "admission refused by the server", admitErr: internal, wantErrors: []string{"Admitting workload"}},
		{name: "preemption conflict", preemptErr: conflict, wantInfo: "Preempting workload raced another write; trying again"},
		{name: "preemption refused by the server", preemptErr: internal, wantErrors: []string{"Preempting workload"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := envInputs{
				flavors: gpuFlavors(),
				queues:  []*berthv1alpha1.ClusterQueue{gpuCQ("q", "", gpus("h100", "4")).Preemption(berthv1alpha1.ClusterQueuePreemption{WithinClusterQueue: berthv1alpha1.PreemptionPolicyLowerPriority}).Obj()},
				pending: []*berthv1alpha1.Workload{mkWL("w", "ns").Queue("q").Priority(10).Request(1, "nvidia.com/gpu", "4").Obj()},
			}
			if tc.preemptErr != nil {
				in.admitted = []*berthv1alpha1.Workload{mkWL("low", "ns").Request(1, "nvidia.com/gpu", "4").AdmittedIn("q", "h100").Obj()}
			}
			e := newEnv(in)
			e.applier.failAdmit["ns/w"] = tc.admitErr
			e.applier.failPreempt = map[string]error{"ns/low": tc.preemptErr}

			var l logged
			e.sched.Schedule(capture(t, &l))

			if strings.Join(l.errors, "\n") != strings.Join(tc.wantErrors, "\n") {
				t.Errorf("error entries %q, want %q", l.errors, tc.wantErrors)
			}
			found := false
			for _, msg := range l.infos {
				found = found || msg == tc.wantInfo
			}
			if tc.wantInfo != "" && !found {
				t.Errorf("info entries %q, want one %q", l.infos, tc.wantInfo)
			}
		})
	}
}
