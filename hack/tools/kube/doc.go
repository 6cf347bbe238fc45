// Package kube pins the Kubernetes release that Berth's tests and local
// cluster run on. It holds no code: hack/toolchain.sh builds the `tool`
// packages of this module into bin/k8s.
package kube
