package shutdown

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// UntilStopped wraps a reconciler for the manager's shutdown. Once the
// manager stops, the context of every reconcile is canceled, but the
// controller still hands out what is left in its work queue: each of
// those reconciles fails on its first API call, and controller-runtime
// logs each as an error. A thousand busy LocalQueues made a hundred such
// lines at every stop. A reconcile cut short by the shutdown loses
// nothing: the next leader reconciles every object from its informers.
func UntilStopped(r reconcile.Reconciler) reconcile.Reconciler {
	return untilStopped{r}
}

type untilStopped struct{ inner reconcile.Reconciler }

// Reconcile skips a reconcile that starts after the shutdown and drops
// the error of one the shutdown cut short.
func (u untilStopped) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if ctx.Err() != nil {
		return reconcile.Result{}, nil
	}
	res, err := u.inner.Reconcile(ctx, req)
	if err != nil && ctx.Err() != nil {
		return reconcile.Result{}, nil
	}
	return res, err
}
