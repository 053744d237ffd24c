package main

import (
	"os"
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

// TestDeadCodeElimination: a release build keeps the linker's dead-code elimination of
// methods. One reachable call of reflect's MethodByName with a computed name (as any
// text/template or html/template execution makes) turns it off for the whole binary:
// every exported method of every linked type stays, 3 MiB more binary and 2 MiB more
// resident pages at idle. cobra's usage and version templates, and gRPC's
// golang.org/x/net/trace (left out by the release tag grpcnotrace), once did.
func TestDeadCodeElimination(t *testing.T) {
	if testing.Short() {
		t.Skip("links the whole binary")
	}
	tags, err := os.ReadFile(".ci/release-tags")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-tags", strings.Join(strings.Fields(string(tags)), ","),
		"-ldflags=-dumpdep", "-o", os.DevNull, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%.2000s", err, out)
	}
	var marked []string
	for line := range strings.Lines(string(out)) {
		if strings.Contains(line, "<ReflectMethod>") && len(marked) < 10 {
			marked = append(marked, strings.TrimSpace(line))
		}
	}
	if len(marked) > 0 {
		t.Errorf("a reflective method call is reachable, so the linker keeps every exported method:\n%s",
			strings.Join(marked, "\n"))
	}
}

// TestImportBoundaries: only the bbolt backend imports bbolt, only the PostgreSQL
// backend imports pgx, and only spatial imports the generated proto package (tests
// included: a test that edits a bbolt file goes through store/bolt/bolttest).
func TestImportBoundaries(t *testing.T) {
	out, err := exec.Command("go", "list", "-f",
		`{{.ImportPath}} {{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}`, "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const mod = "github.com/gardend/gardend/"
	rules := []struct{ dep, owner string }{
		{"go.etcd.io/bbolt", mod + "store/bolt"},
		{"github.com/jackc/", mod + "store/postgres"},
		{mod + "proto", mod + "spatial"},
	}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		pkg := f[0]
		for _, imp := range f[1:] {
			for _, r := range rules {
				within := pkg == r.owner || strings.HasPrefix(pkg, r.owner+"/")
				if strings.HasPrefix(imp, r.dep) && !within && !strings.HasPrefix(pkg, r.dep) {
					t.Errorf("%s imports %s: only %s may", pkg, imp, r.owner)
				}
			}
		}
	}
}
