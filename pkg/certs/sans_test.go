package certs

import (
	"net"
	"testing"
)

func TestSANsEqual(t *testing.T) {
	base := ServiceSANs([]string{"svc"}, "ns", []net.IP{net.ParseIP("127.0.0.1")})
	cases := map[string]struct {
		other SANs
		want  bool
	}{
		"same": {
			other: ServiceSANs([]string{"svc"}, "ns", []net.IP{net.ParseIP("127.0.0.1")}),
			want:  true,
		},
		"other order, case and IP form": {
			other: SANs{
				DNSNames: []string{"SVC.ns.svc.cluster.local", "svc.ns.svc", "svc.ns", "svc"},
				IPs:      []net.IP{net.IPv4(127, 0, 0, 1).To4()},
			},
			want: true,
		},
		"other namespace": {
			other: ServiceSANs([]string{"svc"}, "other", []net.IP{net.ParseIP("127.0.0.1")}),
		},
		"an IP fewer": {
			other: ServiceSANs([]string{"svc"}, "ns", nil),
		},
		"a Service more (the visibility API's, once it is turned on)": {
			other: ServiceSANs([]string{"svc", "visibility"}, "ns", []net.IP{net.ParseIP("127.0.0.1")}),
		},
		"an IP more": {
			other: ServiceSANs([]string{"svc"}, "ns", []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")}),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := base.equal(tc.other); got != tc.want {
				t.Errorf("equal = %v, want %v", got, tc.want)
			}
		})
	}
}
