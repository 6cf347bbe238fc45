package audit

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// TestNotifyRelists: the informer's first list is its start; every later
// one, a List or a list streamed as a watch, is a relist, which client-go
// makes after an expired watch without calling the watch error handler.
func TestNotifyRelists(t *testing.T) {
	var calls []string
	inner := &toolscache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (k8sruntime.Object, error) {
			return &berthv1alpha1.WorkloadList{}, nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			return watch.NewFake(), nil
		},
	}
	lw := toolscache.ToListerWatcherWithContext(notifyRelists(inner, func(err error) { calls = append(calls, err.Error()) }))
	// Client-go's default: the first list streamed as a watch, then plain
	// watches, then a list again, one of each kind.
	for _, opts := range []metav1.ListOptions{{SendInitialEvents: ptr.To(true)}, {ResourceVersion: "12"}, {SendInitialEvents: ptr.To(true)}} {
		if _, err := lw.WatchWithContext(context.Background(), opts); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := lw.ListWithContext(context.Background(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []string{"the informer listed the Workloads again (list 2)", "the informer listed the Workloads again (list 3)"}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("relists (-want +got):\n%s", diff)
	}
}
