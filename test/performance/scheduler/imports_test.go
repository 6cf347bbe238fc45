package scheduler

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// controllerPackages are the packages of Berth that make up the
// controller the harness measures; measuring it through its own code
// would make the benchmark, and the quota audit above all, check the code
// with itself.
var controllerPackages = []string{"pkg/controller", "pkg/controllermanager", "pkg/applier", "pkg/fastwatch", "pkg/engine/scheduler", "pkg/engine/cache", "pkg/engine/queue"}

// TestHarnessImportsNoControllerPackage lists everything the harness and
// its tests depend on, directly or not, and fails on any of Berth's
// controller packages.
func TestHarnessImportsNoControllerPackage(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-test", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const module = "github.com/berth-dev/berth/"
	var found []string
	deps := strings.Fields(string(out))
	// The list must hold the harness itself, or the check passes empty.
	if !slices.Contains(deps, module+"test/performance/scheduler/runner") {
		t.Fatalf("go list -deps does not list the runner:\n%s", out)
	}
	for _, dep := range deps {
		rel, ok := strings.CutPrefix(dep, module)
		if !ok {
			continue
		}
		for _, p := range controllerPackages {
			if rel == p || strings.HasPrefix(rel, p+"/") {
				found = append(found, rel)
			}
		}
	}
	if found = slices.Compact(slices.Sorted(slices.Values(found))); len(found) > 0 {
		t.Errorf("the harness depends on the controller's packages %v", found)
	}
}
