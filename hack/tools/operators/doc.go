// Package operators pins the LeaderWorkerSet controller, KubeRay's
// operator and Kubeflow Trainer's controller manager that the local cluster
// runs. It holds no code: hack/toolchain.sh builds the `tool` packages of
// this module into bin/lws-controller, bin/ray-operator and
// bin/trainer-controller-manager. Unlike JobSet and kwok, they keep their
// own Kubernetes libraries: LWS v0.7.0, the newest served, KubeRay's
// ray-operator v1.5.0 and Trainer v2.0.0 do not compile against Berth's
// controller-runtime (its webhook builder changed). All three in one
// module share one set of those libraries, compiled once; Trainer v2.0.0
// builds with the controller-runtime v0.22.1 and Kubernetes v0.34.1 that
// the other two require.
package operators
