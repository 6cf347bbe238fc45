// Package jobset pins the JobSet controller that the local cluster runs.
// It holds no code: hack/toolchain.sh builds the `tool` package of this
// module into bin/jobset-controller. The Kubernetes libraries and
// controller-runtime are pinned to Berth's own versions, so that a cold
// build reuses what Berth's build compiled (70 of its 100 seconds).
package jobset
