// Package lws pins the LeaderWorkerSet controller that the local cluster
// runs. It holds no code: hack/toolchain.sh builds the `tool` package of
// this module into bin/lws-controller.
package lws
