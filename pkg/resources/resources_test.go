package resources

import (
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
