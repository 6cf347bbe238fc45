package gang

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

// DefaultTimeout is how long the pods of an incomplete gang wait at Permit
// when the plugin's arguments do not say otherwise.
const DefaultTimeout = 30 * time.Second

// Args are the arguments of the BerthGang plugin in a profile's pluginConfig.
type Args struct {
	// TimeoutSeconds is how long the pods of an incomplete gang wait at
	// Permit before all of them are rejected. Defaults to 30.
	TimeoutSeconds *int64 `json:"timeoutSeconds,omitempty"`
}

// decodeTimeout reads the timeout from the plugin's configuration, which the
// scheduler hands to out-of-tree plugins as raw JSON (runtime.Unknown).
func decodeTimeout(obj runtime.Object) (time.Duration, error) {
	var args Args
	if err := frameworkruntime.DecodeInto(obj, &args); err != nil {
		return 0, fmt.Errorf("decoding %s args: %w", Name, err)
	}
	if args.TimeoutSeconds == nil {
		return DefaultTimeout, nil
	}
	if *args.TimeoutSeconds <= 0 {
		return 0, fmt.Errorf("%s args: timeoutSeconds must be positive, got %d", Name, *args.TimeoutSeconds)
	}
	return time.Duration(*args.TimeoutSeconds) * time.Second, nil
}
