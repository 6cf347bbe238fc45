// Package operators pins the LeaderWorkerSet controller and KubeRay's
// operator that the local cluster runs. It holds no code: hack/toolchain.sh
// builds the `tool` packages of this module into bin/lws-controller and
// bin/ray-operator. Unlike JobSet and kwok, they keep their own Kubernetes
// libraries: LWS v0.7.0, the newest served, and KubeRay's ray-operator
// v1.5.0 do not compile against Berth's controller-runtime (its webhook
// builder changed). Both in one module share one set of those libraries,
// compiled once.
package operators
