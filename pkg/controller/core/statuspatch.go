package core

import (
	"context"
	"encoding/json"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// writeStatus replaces the status of a queue, which Berth alone writes,
// with a merge patch that carries every field: a patch computed as a diff
// would leave out counts that are zero from the start, and kubectl would
// show them blank.
func writeStatus(ctx context.Context, c client.Client, obj client.Object, status any) error {
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return err
	}
	return c.Status().Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch))
}
