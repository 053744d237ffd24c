package guidance_test

import (
	"testing"
	"unicode/utf8"

	"github.com/gardend/gardend/server/guidance"
	"github.com/gardend/gardend/store"
)

// TestBuiltinComplete: every species and the fallback have advice for every kind: a
// short title and three to five steps, within the limits a garden's own advice has.
func TestBuiltinComplete(t *testing.T) {
	for _, sp := range append(guidance.BuiltinSpecies(), "*", "zucchini") {
		for _, k := range store.AlertKinds {
			a := guidance.Builtin(sp, k)
			if a.Title == "" || utf8.RuneCountInString(a.Title) > 60 {
				t.Errorf("%s/%s: title %q", sp, k, a.Title)
			}
			if len(a.Steps) < 3 || len(a.Steps) > 5 {
				t.Errorf("%s/%s: %d steps", sp, k, len(a.Steps))
			}
			doc := store.Guidance{Thresholds: store.DefaultThresholds, Advice: map[string]map[store.AlertKind]store.Advice{"x": {k: a}}}
			if err := doc.Validate(); err != nil {
				t.Errorf("%s/%s: %v", sp, k, err)
			}
		}
	}
	if guidance.Builtin("Tomato", store.AlertWater).Title == guidance.Builtin("*", store.AlertWater).Title {
		t.Error("tomatoes get the general advice")
	}
}

// TestFor: the garden's own advice for the species, then for any species, then the
// built-in advice for the species, then the general one.
func TestFor(t *testing.T) {
	own := store.Advice{Title: "Ours for tomatoes", Steps: []string{"a"}}
	any := store.Advice{Title: "Ours for all", Steps: []string{"b"}}
	g := store.Guidance{Advice: map[string]map[store.AlertKind]store.Advice{
		"tomato": {store.AlertWater: own},
		"*":      {store.AlertWater: any, store.AlertDiseases: any},
	}}
	for _, tc := range []struct {
		species string
		kind    store.AlertKind
		want    string
	}{
		{"tomato", store.AlertWater, own.Title},
		{"lettuce", store.AlertWater, any.Title},
		{"tomato", store.AlertDiseases, any.Title},
		{"tomato", store.AlertNutrients, guidance.Builtin("tomato", store.AlertNutrients).Title},
		{"", store.AlertNutrients, guidance.Builtin("*", store.AlertNutrients).Title},
		{"", store.AlertWater, any.Title},
	} {
		if got := guidance.For(g, tc.species, tc.kind).Title; got != tc.want {
			t.Errorf("%q/%s: %q, want %q", tc.species, tc.kind, got, tc.want)
		}
	}
}
