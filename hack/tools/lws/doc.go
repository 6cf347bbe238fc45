// Package lws pins the LeaderWorkerSet controller that the local cluster
// runs. It holds no code: hack/toolchain.sh builds the `tool` package of
// this module into bin/lws-controller. Unlike JobSet and kwok, it keeps its
// own Kubernetes libraries: v0.7.0, the newest served, does not compile
// against Berth's controller-runtime.
package lws
