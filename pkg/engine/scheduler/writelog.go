package scheduler

import (
	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// logWriteError logs a failed admission or preemption write. A conflict,
// or a workload that is gone, is the everyday race with the workload's
// other writers: its job finished it or was deleted after the cycle's
// snapshot. The scheduler tries again on the version it sees next, so
// that is logged at V(2). An error log with a stack trace for each of
// them would bury the errors an operator must see: a busy cluster has
// hundreds an hour.
func logWriteError(log logr.Logger, err error, msg string, keysAndValues ...any) {
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		log.V(2).Info(msg+" raced another write; trying again", append(keysAndValues, "error", err.Error())...)
		return
	}
	log.Error(err, msg, keysAndValues...)
}
