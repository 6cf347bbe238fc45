// Package helm pins the Helm release whose lint and template check Berth's
// chart (charts/berth) in `make test`. It holds no code: hack/toolchain.sh
// builds this module's `tool` package into bin/helm.
package helm
