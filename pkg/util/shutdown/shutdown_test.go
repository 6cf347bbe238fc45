package shutdown

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestUntilStopped(t *testing.T) {
	failed := errors.New("the server is currently unable to handle the request")
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "main"}}
	for _, tc := range []struct {
		name string
		// stop says when the manager stops: before the reconcile, or
		// while it runs.
		stop       string
		want       reconcile.Result
		wantErr    error
		wantCalled bool
	}{
		{name: "running: the result and the error pass through", want: reconcile.Result{RequeueAfter: time.Second}, wantErr: failed, wantCalled: true},
		{name: "stopped before: not reconciled", stop: "before"},
		{name: "stopped during: its error is dropped", stop: "during", wantCalled: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.stop == "before" {
				cancel()
			}
			called := false
			inner := reconcile.Func(func(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
				called = true
				if tc.stop == "during" {
					cancel()
					return reconcile.Result{}, ctx.Err()
				}
				return reconcile.Result{RequeueAfter: time.Second}, failed
			})
			got, err := UntilStopped(inner).Reconcile(ctx, req)
			if got != tc.want || !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) || called != tc.wantCalled {
				t.Errorf("Reconcile = %+v, %v (reconciled %t), want %+v, %v (reconciled %t)", got, err, called, tc.want, tc.wantErr, tc.wantCalled)
			}
		})
	}
}
