// Package controller holds the integration tests of Berth's controllers:
// the manager runs in the test process against a real kube-apiserver, with
// the Job webhook served locally; no job controller runs, so the tests play
// its part by setting Job status.
package controller
