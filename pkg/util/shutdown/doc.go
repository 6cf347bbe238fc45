// Package shutdown holds UntilStopped, the wrapper that keeps a
// reconciler quiet while the manager stops. It is Berth's own because
// controller-runtime has no option for it.
package shutdown
