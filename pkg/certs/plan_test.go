package certs

import (
	"net"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const day = 24 * time.Hour

func mustBundle(t *testing.T, ca KeyPair, sans SANs, now time.Time) *Bundle {
	t.Helper()
	serving, err := NewServing(ca, sans, now)
	if err != nil {
		t.Fatal(err)
	}
	return &Bundle{CA: ca, Serving: serving}
}

func mustCA(t *testing.T, now time.Time) KeyPair {
	t.Helper()
	ca, err := NewCA(now)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func TestPlan(t *testing.T) {
	sans := ServiceSANs([]string{"svc"}, "ns", []net.IP{net.ParseIP("127.0.0.1")})
	ca := mustCA(t, t0)
	fresh := mustBundle(t, ca, sans, t0)
	otherCA := mustCA(t, t0)
	// Serving validity is one year plus the backdated hour; a sixth of it
	// is a little under 61 days.
	servingDue := t0.Add(365*day - 61*day)
	cases := map[string]struct {
		bundle *Bundle
		now    time.Time
		want   Action
	}{
		"nothing yet": {
			want: RenewAll,
		},
		"fresh": {
			bundle: fresh,
			now:    t0,
			want:   Keep,
		},
		"more than a sixth of the serving validity left": {
			bundle: fresh,
			now:    servingDue.Add(-day),
			want:   Keep,
		},
		"less than a sixth of the serving validity left": {
			bundle: fresh,
			now:    servingDue.Add(day),
			want:   RenewServing,
		},
		"serving expired": {
			bundle: fresh,
			now:    t0.Add(400 * day),
			want:   RenewServing,
		},
		"less than a sixth of the CA validity left": {
			bundle: mustBundle(t, ca, sans, t0.Add(9*365*day)),
			now:    t0.Add(9 * 365 * day),
			want:   RenewAll,
		},
		"serving for other names": {
			bundle: mustBundle(t, ca, ServiceSANs([]string{"svc"}, "ns", nil), t0),
			now:    t0,
			want:   RenewServing,
		},
		"serving signed by another CA": {
			bundle: &Bundle{CA: otherCA, Serving: fresh.Serving},
			now:    t0,
			want:   RenewServing,
		},
		"serving key of another certificate": {
			bundle: &Bundle{CA: ca, Serving: KeyPair{CertPEM: fresh.Serving.CertPEM, KeyPEM: ca.KeyPEM}},
			now:    t0,
			want:   RenewServing,
		},
		"serving missing": {
			bundle: &Bundle{CA: ca},
			now:    t0,
			want:   RenewServing,
		},
		"CA unreadable": {
			bundle: &Bundle{CA: KeyPair{CertPEM: []byte("junk")}, Serving: fresh.Serving},
			now:    t0,
			want:   RenewAll,
		},
		"read from a directory: good enough to serve": {
			bundle: &Bundle{CA: KeyPair{CertPEM: ca.CertPEM}, Serving: fresh.Serving},
			now:    t0,
			want:   Keep,
		},
		"read from a directory: cannot sign a new serving certificate": {
			bundle: &Bundle{CA: KeyPair{CertPEM: ca.CertPEM}, Serving: fresh.Serving},
			now:    servingDue.Add(day),
			want:   RenewAll,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, reason := Plan(tc.bundle, sans, tc.now)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Plan (-want +got):\n%s", diff)
			}
			if (got == Keep) != (reason == "") {
				t.Errorf("Plan gave %v with reason %q; want a reason exactly when not keeping", got, reason)
			}
		})
	}
}

func TestRenew(t *testing.T) {
	sans := ServiceSANs([]string{"svc"}, "ns", nil)
	old := mustBundle(t, mustCA(t, t0), sans, t0)
	later := t0.Add(320 * day)
	cases := map[string]struct {
		action     Action
		wantSameCA bool
	}{
		"serving only keeps the CA": {action: RenewServing, wantSameCA: true},
		"all replaces the CA":       {action: RenewAll},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			next, err := renew(old, tc.action, sans, later)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(next.CA.CertPEM) == string(old.CA.CertPEM); got != tc.wantSameCA {
				t.Errorf("same CA = %v, want %v", got, tc.wantSameCA)
			}
			if action, reason := Plan(next, sans, later); action != Keep {
				t.Errorf("Plan after renew = %v (%s), want Keep", action, reason)
			}
		})
	}
}
