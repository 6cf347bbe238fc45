package api

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

func TestNothing(t *testing.T) { _ = envtest.Environment{} }
