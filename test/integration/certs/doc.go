// Package certs holds the integration test of the in-process webhook
// certificates (pkg/certs): a real kube-apiserver calls a webhook
// served with them, trusting the CA that the manager wrote into the
// webhook configuration.
package certs
