// Package kwok pins kwok and kwokctl, which run the local cluster's
// simulated nodes. It holds no code: hack/toolchain.sh builds the `tool`
// packages of this module into bin/. The Kubernetes libraries are pinned
// to Berth's own versions, so that a cold build reuses what Berth's build
// compiled.
package kwok
