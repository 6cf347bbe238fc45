package controller

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// feed reads the object req names into obj and gives the engine what it
// found: set with the object, or gone when it no longer exists. Only a
// failed read other than NotFound is returned, and then neither is called.
// It is the first step of the reconcilers that only feed the engine
// (ResourceFlavor, AdmissionCheck, Cohort); their second is to say which
// queues to look at again.
func feed[T client.Object](ctx context.Context, c client.Reader, req ctrl.Request, obj T, set func(T), gone func()) error {
	err := c.Get(ctx, req.NamespacedName, obj)
	switch {
	case apierrors.IsNotFound(err):
		gone()
	case err != nil:
		return err
	default:
		set(obj)
	}
	return nil
}
