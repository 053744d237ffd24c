package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/gardend/gardend/store"
)

// FuzzDecodeLogPatch: the log decoder never panics; what it refuses is a 400 naming a
// field; what it accepts sets exactly the members sent, and a body made back from
// what it read reads the same.
func FuzzDecodeLogPatch(f *testing.F) {
	for _, s := range []string{
		`{"type":"harvest","title":"Tomatoes","notes":"n","at":"2026-05-01T07:30:00+02:00","bed":3,"plant":"m-1","quantity":{"value":2.5,"unit":"kg"},"assignee":"ann","status":"done"}`,
		`{"type":"task","title":"x","at":"2026-05-01","bed":null,"plant":null,"quantity":null,"assignee":null,"notes":null}`,
		`{"bed":2.0,"quantity":{"value":"1","unit":3}}`, `{"title":null}`, `[]`, `null`, `{"a":{"b":[1,2,{"c":null}]}}`,
		`{"type":"observation","title":"x"} {}`, `{"bed":-1}`, `{"bed":1e300}`, `{"at":"2026-02-30T00:00:00Z"}`,
	} {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, body []byte, creating bool) {
		p, err := decodeLogPatch(body, creating)
		if err != nil {
			var api *apiError
			var v *store.ValidationError
			switch {
			case errors.As(err, &api):
				if api.status != http.StatusBadRequest {
					t.Fatalf("status %d: %v", api.status, err)
				}
			case errors.As(err, &v):
				if len(v.Fields) == 0 {
					t.Fatalf("a validation error naming no field: %v", err)
				}
			default:
				t.Fatalf("error of no kind: %v", err)
			}
			return
		}
		if creating && (p.Type == nil || p.Title == nil) {
			t.Fatalf("a new log without type or title: %+v", p)
		}
		if p.Bed != nil && *p.Bed > 1<<53 {
			t.Fatalf("bed %d", *p.Bed)
		}
		again, err := decodeLogPatch(encodePatch(p), creating)
		if err != nil {
			t.Fatalf("re-encoded %s: %v", encodePatch(p), err)
		}
		if string(encodePatch(again)) != string(encodePatch(p)) {
			t.Fatalf("round trip: %s became %s", encodePatch(p), encodePatch(again))
		}
	})
}

// encodePatch writes a patch back as the JSON it reads.
func encodePatch(p store.LogPatch) []byte {
	m := map[string]any{}
	orNull := func(name, v string) {
		if v == "" {
			m[name] = nil
		} else {
			m[name] = v
		}
	}
	if p.Type != nil {
		m["type"] = *p.Type
	}
	if p.Title != nil {
		m["title"] = *p.Title
	}
	if p.Notes != nil {
		orNull("notes", *p.Notes)
	}
	if p.At != nil {
		m["at"] = p.At.Format(time.RFC3339Nano)
	}
	if p.Bed != nil {
		if *p.Bed == 0 {
			m["bed"] = nil
		} else {
			m["bed"] = *p.Bed
		}
	}
	if p.Plant != nil {
		orNull("plant", *p.Plant)
	}
	if p.Quantity != nil {
		m["quantity"] = *p.Quantity
	}
	if p.Assignee != nil {
		orNull("assignee", *p.Assignee)
	}
	if p.Status != nil {
		m["status"] = *p.Status
	}
	data, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return data
}
