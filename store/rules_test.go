package store_test

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/gardend/gardend/store"
)

// The rules of the domain types, on their own. What the backends do with them is the
// contract suite's (store/storetest), run against each backend in its package.

var (
	inputsMap = store.CloudInputs{Frame: "map", Origin: store.LatLon{Lat: 52.3, Lon: 7.6}}
	inputsCam = store.CloudInputs{Frame: "cam", Origin: store.LatLon{Lat: 52.3, Lon: 7.6},
		Transform: &store.Transform{Translation: [3]float64{1, 2, 0.5}, Rotation: [4]float64{0, 0, 0.1, 0.99}}}
)

// corners is a valid coordinate set.
var corners = store.Coordinates{
	{Name: "top_left", Latitude: 52.5, Longitude: 13.4},
	{Name: "top_right", Latitude: 52.5, Longitude: 13.5},
	{Name: "bottom_left", Latitude: 52.4, Longitude: 13.4},
}

func TestCloudInputsEqual(t *testing.T) {
	tf := *inputsCam.Transform
	other := inputsCam
	other.Transform = &tf
	if !inputsCam.Equal(other) {
		t.Error("equal transforms behind different pointers differ")
	}
	tf.Rotation[3] = 0.98
	if inputsCam.Equal(other) || inputsCam.Equal(inputsMap) {
		t.Error("different inputs compare equal")
	}
	moved := inputsMap
	moved.Origin.Lat += 1e-9
	if inputsMap.Equal(moved) {
		t.Error("a moved origin compares equal")
	}
}

func TestRetryPolicyDelay(t *testing.T) {
	p := store.RetryPolicy{Backoff: 2 * time.Second, MaxBackoff: 10 * time.Second}
	for attempt, want := range []time.Duration{2, 4, 8, 10, 10} {
		if got := p.Delay(attempt + 1); got != want*time.Second {
			t.Errorf("Delay(%d) = %v, want %v", attempt+1, got, want*time.Second)
		}
	}
}

func TestParseCoordinates(t *testing.T) {
	const tl, tr, bl = `{"name":"top_left","latitude":52.5,"longitude":13.4}`, `{"name":"top_right","latitude":52.5,"longitude":13.5}`, `{"name":"bottom_left","latitude":52.4,"longitude":13.4}`
	ok := "[" + tl + "," + tr + "," + bl + "]"
	got, err := store.ParseCoordinates(json.RawMessage(ok))
	if err != nil || !slices.Equal(got, corners) {
		t.Fatalf("ParseCoordinates(valid) = %+v, %v", got, err)
	}
	extra := "[" + tl + "," + tr + `,{"name":"bottom_right","latitude":-90,"longitude":180},` + bl + "]"
	if got, err := store.ParseCoordinates(json.RawMessage(extra)); err != nil || len(got) != 4 || got[2].Name != "bottom_right" {
		t.Errorf("other names are kept, in order: %+v, %v", got, err)
	}

	tests := []struct{ name, in, field string }{
		{"missing", ``, "coordinates"},
		{"null", `null`, "coordinates"},
		{"object", `{"top_left":1}`, "coordinates"},
		{"missing corner", "[" + tl + "," + bl + "]", "coordinates"},
		{"empty", `[]`, "coordinates"},
		{"latitude 91", "[" + tl + "," + tr + `,{"name":"bottom_left","latitude":91,"longitude":0}]`, "coordinates[2].latitude"},
		{"longitude -180.5", "[" + tl + "," + tr + `,{"name":"bottom_left","latitude":0,"longitude":-180.5}]`, "coordinates[2].longitude"},
		{"latitude as string", "[" + tl + `,{"name":"top_right","latitude":"52.5","longitude":13.5},` + bl + "]", "coordinates[1].latitude"},
		{"latitude missing", "[" + tl + `,{"name":"top_right","longitude":13.5},` + bl + "]", "coordinates[1].latitude"},
		{"latitude null", "[" + tl + `,{"name":"top_right","latitude":null,"longitude":13.5},` + bl + "]", "coordinates[1].latitude"},
		{"name as number", "[" + tl + `,{"name":7,"latitude":1,"longitude":1},` + tr + "," + bl + "]", "coordinates[1].name"},
		{"empty name", "[" + tl + "," + tr + "," + bl + `,{"name":"","latitude":1,"longitude":1}]`, "coordinates[3].name"},
		{"duplicate name", "[" + tl + "," + tr + "," + bl + "," + tl + "]", "coordinates[3].name"},
		{"element not an object", "[" + tl + "," + tr + "," + bl + `,5]`, "coordinates[3]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := store.ParseCoordinates(json.RawMessage(tc.in))
			var v *store.ValidationError
			if !errors.As(err, &v) {
				t.Fatalf("err = %v, want a ValidationError", err)
			}
			if _, ok := v.Fields[tc.field]; !ok {
				t.Errorf("fields %v, want %s", v.Fields, tc.field)
			}
		})
	}
}

func TestValidatePassword(t *testing.T) {
	for pw, ok := range map[string]bool{
		"short":                   false,
		"12345678901":             false,
		"alice-garden":            true,
		"alicealice":              false, // equals the username below
		string(make([]byte, 257)): false,
	} {
		if got := store.ValidatePassword(pw, "alicealice") == ""; got != ok {
			t.Errorf("ValidatePassword(%.12q) ok=%v, want %v", pw, got, ok)
		}
	}
}
