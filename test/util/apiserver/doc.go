// Package apiserver starts a real kube-apiserver and etcd for integration
// tests, with Berth's CRDs installed. The binaries are the ones
// hack/toolchain.sh builds from source into bin/k8s; nothing is
// downloaded. It owns the test environment's life cycle and must not hold
// test logic.
package apiserver
