package testing

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// UpdateCase is one change to an object, and whether an update predicate
// should pass the update it makes.
type UpdateCase[T client.Object] struct {
	Change func(T)
	Want   bool
}

// CheckUpdates runs each case as a subtest: the update from base to base
// changed by it must pass p, or not, as the case wants.
func CheckUpdates[T client.Object](t *testing.T, p predicate.Predicate, base T, cases map[string]UpdateCase[T]) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			after, ok := base.DeepCopyObject().(T)
			if !ok {
				t.Fatalf("a copy of %T is not one", base)
			}
			tc.Change(after)
			if got := p.Update(event.UpdateEvent{ObjectOld: base, ObjectNew: after}); got != tc.Want {
				t.Errorf("passed %v, want %v", got, tc.Want)
			}
		})
	}
}
