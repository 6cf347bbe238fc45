package controller

import (
	"testing"

	"k8s.io/client-go/rest"

	configv1alpha1 "github.com/berth-dev/berth/apis/config/v1alpha1"
)

func TestClientConfig(t *testing.T) {
	base := &rest.Config{Host: "https://api.example:6443", QPS: 5, Burst: 10, UserAgent: "berth"}
	got := ClientConfig(base, configv1alpha1.ClientConnection{QPS: 500, Burst: 1000})
	if got.QPS != 500 || got.Burst != 1000 {
		t.Errorf("rate limit %v/%d, want the configured 500/1000", got.QPS, got.Burst)
	}
	if !got.DisableCompression {
		t.Error("the client asks for gzip")
	}
	if got.Host != base.Host || got.UserAgent != base.UserAgent {
		t.Errorf("got %+v, want the rest of the base config kept", got)
	}
	if base.QPS != 5 || base.DisableCompression {
		t.Errorf("the base config changed: %+v", base)
	}
}
