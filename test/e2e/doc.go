// Package e2e holds the end-to-end tests: they drive the local cluster
// (make local-up) with the real kubectl, as a user would, and speak only
// the public contract of ../shared/API.md: kinds, labels, conditions and
// columns. The real Job controller creates the pods, a kube-scheduler
// binds them to simulated nodes and kwok runs them.
package e2e
