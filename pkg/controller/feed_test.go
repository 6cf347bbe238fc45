package controller

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

func TestFeed(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := berthv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	broken := errors.New("the cache is not synced")
	cases := map[string]struct {
		objs    []client.Object
		readErr error
		// wantCalls are the engine's calls, "set NAME" or "gone".
		wantCalls []string
		wantErr   error
	}{
		"the object exists":  {objs: []client.Object{utiltesting.MakeResourceFlavor("h100")}, wantCalls: []string{"set h100"}},
		"the object is gone": {wantCalls: []string{"gone"}},
		"the read fails":     {readErr: broken, wantErr: broken},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.objs...)
			if tc.readErr != nil {
				b = b.WithInterceptorFuncs(interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
					return tc.readErr
				}})
			}
			var calls []string
			err := feed(t.Context(), b.Build(), ctrl.Request{NamespacedName: types.NamespacedName{Name: "h100"}}, &berthv1alpha1.ResourceFlavor{},
				func(rf *berthv1alpha1.ResourceFlavor) { calls = append(calls, "set "+rf.Name) },
				func() { calls = append(calls, "gone") })
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("error %v, want %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.wantCalls, calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
}
