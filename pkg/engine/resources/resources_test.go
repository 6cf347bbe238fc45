package resources

import (
	"regexp"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestValueSaturates(t *testing.T) {
	cases := map[string]struct {
		name corev1.ResourceName
		q    string
		want int64
	}{
		"cpu in milli-units":            {name: corev1.ResourceCPU, q: "1500m", want: 1500},
		"whole cpus":                    {name: corev1.ResourceCPU, q: "96", want: 96000},
		"1E cpu does not wrap":          {name: corev1.ResourceCPU, q: "1E", want: Max},
		"the largest cpu that fits":     {name: corev1.ResourceCPU, q: "9223372036854775", want: 9223372036854775000},
		"memory in bytes, rounded up":   {name: corev1.ResourceMemory, q: "1.5", want: 2},
		"memory above int64 saturates":  {name: corev1.ResourceMemory, q: "16Ei", want: Max},
		"a device count":                {name: "nvidia.com/gpu", q: "8", want: 8},
		"a device count past int64 max": {name: "nvidia.com/gpu", q: "10E", want: Max},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Value(tc.name, resource.MustParse(tc.q)); got != tc.want {
				t.Errorf("Value(%s, %s) = %d, want %d", tc.name, tc.q, got, tc.want)
			}
		})
	}
}

func TestSaturatingArithmetic(t *testing.T) {
	cases := map[string]struct {
		got, want int64
	}{
		"add":              {got: Add(2, 3), want: 5},
		"add past max":     {got: Add(Max-1, 2), want: Max},
		"add to max":       {got: Add(Max, Max), want: Max},
		"mul":              {got: Mul(4, 8), want: 32},
		"mul by zero":      {got: Mul(Max, 0), want: 0},
		"mul past max":     {got: Mul(Max/2+1, 2), want: Max},
		"scaled saturates": {got: Requests{"memory": Max / 3}.Scaled(4)["memory"], want: Max},
		"usage add": {got: func() int64 {
			u := Usage{{Resource: "cpu"}: Max - 1}
			u.Add(Usage{{Resource: "cpu"}: 5})
			return u[FlavorResource{Resource: "cpu"}]
		}(), want: Max},
		"requests add sums": {got: func() int64 { r := Requests{"cpu": 1}; r.Add(Requests{"cpu": 2}); return r["cpu"] }(), want: 3},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %d, want %d", tc.got, tc.want)
			}
		})
	}
}

var plainQuantity = regexp.MustCompile(`^[0-9]{1,20}(\.[0-9]{1,6})?([mkMGTPE]|[KMGTPE]i|[eE][0-9]{1,2})?$`)

// FuzzValue: whatever quantity a user writes, its canonical value is never
// negative for a non-negative quantity and keeps the quantities' order:
// no quota or request wraps around to look small.
func FuzzValue(f *testing.F) {
	for _, s := range []string{"1", "500m", "1E", "16Ei", "9223372036854775807", "9223372036854776", "1.5", "0.001", "8Gi", "1e3"} {
		f.Add(s, "2")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		// Quantities as people write them; an exponent of millions of
		// digits makes apimachinery's own parser take forever.
		if !plainQuantity.MatchString(a) || !plainQuantity.MatchString(b) {
			return
		}
		qa, errA := resource.ParseQuantity(a)
		qb, errB := resource.ParseQuantity(b)
		if errA != nil || errB != nil || qa.Sign() < 0 || qb.Sign() < 0 {
			return
		}
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, "nvidia.com/gpu"} {
			va, vb := Value(name, qa), Value(name, qb)
			if va < 0 || vb < 0 {
				t.Fatalf("Value(%s, %s) = %d, Value(%s, %s) = %d: negative", name, a, va, name, b, vb)
			}
			if qa.Cmp(qb) < 0 && va > vb {
				t.Fatalf("%s < %s but Value(%s) %d > %d", a, b, name, va, vb)
			}
		}
	})
}

func TestUsageByResource(t *testing.T) {
	u := Usage{
		{Flavor: "h100", Resource: "nvidia.com/gpu"}:   8,
		{Flavor: "a100", Resource: "nvidia.com/gpu"}:   4,
		{Flavor: "h100", Resource: corev1.ResourceCPU}: Max,
		{Flavor: "a100", Resource: corev1.ResourceCPU}: 1,
	}
	got := u.ByResource()
	want := Requests{"nvidia.com/gpu": 12, corev1.ResourceCPU: Max}
	if len(got) != len(want) || got["nvidia.com/gpu"] != want["nvidia.com/gpu"] || got[corev1.ResourceCPU] != want[corev1.ResourceCPU] {
		t.Errorf("ByResource() = %v, want %v", got, want)
	}
}
