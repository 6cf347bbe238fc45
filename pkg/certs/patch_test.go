package certs

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCABundlePatch(t *testing.T) {
	ca := []byte("CA")
	cases := map[string]struct {
		webhooks []webhookCA
		want     string
	}{
		"no webhooks": {},
		"all up to date": {
			webhooks: []webhookCA{{Name: "a", CABundle: ca}, {Name: "b", CABundle: ca}},
		},
		"empty and stale bundles": {
			webhooks: []webhookCA{{Name: "a"}, {Name: "b", CABundle: ca}, {Name: "c", CABundle: []byte("old")}},
			want: `[{"op":"test","path":"/webhooks/0/name","value":"a"},` +
				`{"op":"add","path":"/webhooks/0/clientConfig/caBundle","value":"Q0E="},` +
				`{"op":"test","path":"/webhooks/2/name","value":"c"},` +
				`{"op":"add","path":"/webhooks/2/clientConfig/caBundle","value":"Q0E="}]`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := caBundlePatch(tc.webhooks, ca)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("caBundlePatch (-want +got):\n%s", diff)
			}
		})
	}
}
