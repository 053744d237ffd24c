package store_test

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/gardend/gardend/store"
)

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

func TestGardenImage(t *testing.T) {
	st := mustOpenStore(t)
	alice := mustUser(t, st, "alice")
	c := mustCompany(t, st, alice, "c")
	g := mustGarden(t, st, c, "g")

	_, _, err := st.GardenImage(g.ID)
	wantErr(t, err, store.ErrNotFound)
	old, err := st.SetGardenImage(g.ID, "images/a.png", corners)
	if err != nil || old != "" {
		t.Fatalf("first SetGardenImage = %q, %v", old, err)
	}
	swapped := slices.Clone(corners)
	slices.Reverse(swapped)
	old, err = st.SetGardenImage(g.ID, "images/b.png", swapped)
	if err != nil || old != "images/a.png" {
		t.Fatalf("second SetGardenImage = %q, %v", old, err)
	}
	path, cs, err := st.GardenImage(g.ID)
	if err != nil || path != "images/b.png" || !slices.Equal(cs, swapped) {
		t.Errorf("GardenImage = %q, %+v, %v", path, cs, err)
	}
	if got, _ := st.Garden(g.ID); got.ImagePath == nil || *got.ImagePath != "images/b.png" {
		t.Errorf("garden %+v", got)
	}
	paths, err := st.ImagePaths()
	if err != nil || len(paths) != 1 || !paths["images/b.png"] {
		t.Errorf("ImagePaths = %v, %v", paths, err)
	}

	// Invalid input changes nothing.
	_, err = st.SetGardenImage(g.ID, "images/c.png", corners[:2])
	wantErr(t, err, store.ErrInvalid)
	_, err = st.SetGardenImage(999, "images/c.png", corners)
	wantErr(t, err, store.ErrNotFound)
	if path, _, _ := st.GardenImage(g.ID); path != "images/b.png" {
		t.Errorf("image after failed updates: %q", path)
	}
}
