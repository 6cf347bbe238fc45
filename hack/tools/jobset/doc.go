// Package jobset pins the JobSet controller that the local cluster runs.
// It holds no code: hack/toolchain.sh builds the `tool` package of this
// module into bin/jobset-controller.
package jobset
