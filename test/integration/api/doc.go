// Package api holds the integration tests of Berth's API: the CRDs'
// validation and defaults, checked against a real kube-apiserver.
package api
