package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryDependencies: what only tests, generators or development need is not
// linked into gardend. Each of these once was, or is one import away: test helpers
// (chromedp, kin-openapi), the Prometheus client the metrics replaced, and the web
// assets' packer (which needs go/format).
func TestBinaryDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 100 {
		t.Fatalf("go list -deps listed only %d packages", len(deps))
	}
	for _, dep := range deps {
		for _, banned := range []string{
			"testing", "github.com/chromedp/", "github.com/getkin/kin-openapi/", "github.com/prometheus/",
			"go/format", "go/parser", "github.com/gardend/gardend/server/web/internal/pack",
		} {
			if dep == banned || (strings.HasSuffix(banned, "/") && strings.HasPrefix(dep, banned)) {
				t.Errorf("gardend links %s", dep)
			}
		}
	}
}
