package server_test

import (
	"bufio"
	"bytes"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/gardend/gardend/docs"
)

// documentedOperations scans docs/openapi.yaml's paths section for "METHOD /path" pairs.
// A line scan suffices for the document's fixed two-space indentation and keeps the
// project free of a YAML dependency.
func documentedOperations(t *testing.T) []string {
	t.Helper()
	var ops []string
	inPaths, path := false, ""
	sc := bufio.NewScanner(bytes.NewReader(docs.OpenAPI))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "paths:":
			inPaths = true
		case inPaths && line != "" && !strings.HasPrefix(line, " "):
			inPaths = false
		case inPaths && strings.HasPrefix(line, "  /") && strings.HasSuffix(line, ":"):
			path = strings.TrimSuffix(strings.TrimSpace(line), ":")
		case inPaths && strings.HasPrefix(line, "    ") && !strings.HasPrefix(line, "     "):
			m := strings.TrimSuffix(strings.TrimSpace(line), ":")
			switch m {
			case "get", "post", "put", "delete", "patch":
				ops = append(ops, strings.ToUpper(m)+" "+path)
			}
		}
	}
	sort.Strings(ops)
	return ops
}

func TestOpenAPIMatchesRoutes(t *testing.T) {
	h := newHarness(t)
	documented := documentedOperations(t)
	routed := h.srv.RoutePaths()
	if len(documented) < 10 {
		t.Fatalf("parsed only %d documented operations: %v", len(documented), documented)
	}
	for _, op := range routed {
		if !slices.Contains(documented, op) {
			t.Errorf("routed but not documented in docs/openapi.yaml: %s", op)
		}
	}
	for _, op := range documented {
		if !slices.Contains(routed, op) {
			t.Errorf("documented but not routed: %s", op)
		}
	}
	res := h.do("GET", "/openapi.yaml", "", nil).expect(http.StatusOK)
	if !strings.HasPrefix(res.Body.String(), "openapi: 3.1") {
		t.Fatalf("served document starts %q", res.Body.String()[:20])
	}
}
