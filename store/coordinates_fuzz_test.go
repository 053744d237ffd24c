package store_test

import (
	"encoding/json"
	"errors"
	"math"
	"testing"

	"github.com/gardend/gardend/store"
)

// FuzzParseCoordinates: any input either parses into a coordinate set that satisfies
// every rule of decisions.md, or fails as a validation error (a 400), never a panic.
func FuzzParseCoordinates(f *testing.F) {
	for _, seed := range []string{
		`[{"name":"top_left","latitude":52.3,"longitude":7.6},{"name":"top_right","latitude":52.3,"longitude":7.7},{"name":"bottom_left","latitude":52.2,"longitude":7.6}]`,
		`[{"name":"top_left","latitude":"52","longitude":7.6}]`,
		`[{"name":"top_left","latitude":91,"longitude":0},{"name":"top_right","latitude":0,"longitude":0},{"name":"bottom_left","latitude":0,"longitude":0}]`,
		`[]`, `null`, `{}`, `[1,2,3]`, `[{"name":1}]`, `[{"name":"a","latitude":1e400}]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		cs, err := store.ParseCoordinates(json.RawMessage(raw))
		if err != nil {
			if !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("error %v is not a validation error", err)
			}
			return
		}
		if len(cs) < 3 {
			t.Fatalf("accepted %d coordinates", len(cs))
		}
		seen := map[string]bool{}
		for _, c := range cs {
			if c.Name == "" || seen[c.Name] {
				t.Fatalf("accepted an empty or repeated name %q", c.Name)
			}
			seen[c.Name] = true
			if math.IsNaN(c.Latitude) || c.Latitude < -90 || c.Latitude > 90 ||
				math.IsNaN(c.Longitude) || c.Longitude < -180 || c.Longitude > 180 {
				t.Fatalf("accepted %+v out of range", c)
			}
		}
		for _, need := range []string{"top_left", "top_right", "bottom_left"} {
			if !seen[need] {
				t.Fatalf("accepted a set without %s", need)
			}
		}
	})
}
