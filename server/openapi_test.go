package server_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/gardend/gardend/docs"
)

var httpMethods = map[string]bool{"get": true, "put": true, "post": true, "delete": true, "patch": true, "head": true, "options": true}

// documentedRoutes lists "METHOD path" for every operation under paths: in the OpenAPI
// document, by a line scan of its layout (a path is a key indented two spaces starting
// with "/", an operation a key indented four spaces named after a method), sorted.
func documentedRoutes(doc string) []string {
	var out []string
	inPaths, path := false, ""
	for _, line := range strings.Split(doc, "\n") {
		if line == "paths:" {
			inPaths = true
			continue
		}
		if line != "" && line[0] != ' ' && line[0] != '#' {
			inPaths = false
		}
		if !inPaths {
			continue
		}
		if key, ok := strings.CutPrefix(line, "  /"); ok && strings.HasSuffix(key, ":") {
			path = "/" + strings.TrimSuffix(key, ":")
			continue
		}
		if key, ok := strings.CutPrefix(line, "    "); ok && !strings.HasPrefix(key, " ") {
			name, _, _ := strings.Cut(key, ":")
			if httpMethods[name] {
				out = append(out, strings.ToUpper(name)+" "+path)
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestOpenAPIMatchesRoutes: every documented operation is routed and every route is
// documented.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	documented := documentedRoutes(string(docs.OpenAPI))
	routed := newTestServer(t).srv.RoutePaths()
	if len(documented) < len(routed)/2 {
		t.Fatalf("the scan found only %d operations: has the document's layout changed?", len(documented))
	}
	for _, r := range routed {
		if !slices.Contains(documented, r) {
			t.Errorf("%s is routed but not in docs/openapi.yaml", r)
		}
	}
	for _, d := range documented {
		if !slices.Contains(routed, d) {
			t.Errorf("%s is in docs/openapi.yaml but not routed", d)
		}
	}
}
