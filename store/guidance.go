package store

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Guidance is a garden's document of alert thresholds and its own advice, which
// overrides the built-in advice (server/guidance) for a species and kind.
type Guidance struct {
	Thresholds Thresholds `json:"thresholds"`
	// Advice maps a species (lower case; "*" for any) and a kind to the advice.
	Advice map[string]map[AlertKind]Advice `json:"advice"`
}

// Advice is what to do about an alert: a short title and a few concrete steps.
type Advice struct {
	Title string   `json:"title"`
	Steps []string `json:"steps"`
}

// Limits of a guidance document.
const (
	MaxAdviceSpecies = 50
	MaxAdviceTitle   = 120
	MaxAdviceSteps   = 10
	MaxAdviceStep    = 500
	maxSpeciesKey    = 64
	// AnySpecies is the advice key that applies to every species.
	AnySpecies = "*"
)

// DefaultGuidance is the guidance of a garden that set none.
func DefaultGuidance() Guidance {
	return Guidance{Thresholds: DefaultThresholds, Advice: map[string]map[AlertKind]Advice{}}
}

// SpeciesKey is how a species names advice: trimmed, lower case.
func SpeciesKey(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// Normalize trims titles and steps and lower-cases the species keys; Validate
// checks the result.
func (g Guidance) Normalize() Guidance {
	out := Guidance{Thresholds: g.Thresholds, Advice: make(map[string]map[AlertKind]Advice, len(g.Advice))}
	for sp, kinds := range g.Advice {
		key := SpeciesKey(sp)
		m := out.Advice[key]
		if m == nil {
			m = make(map[AlertKind]Advice, len(kinds))
			out.Advice[key] = m
		}
		for k, a := range kinds {
			steps := make([]string, len(a.Steps))
			for i, s := range a.Steps {
				steps[i] = strings.TrimSpace(s)
			}
			m[k] = Advice{Title: strings.TrimSpace(a.Title), Steps: steps}
		}
	}
	return out
}

// Validate checks the document; each problem names its field as a path
// ("advice.tomato.water.steps[2]").
func (g Guidance) Validate() error {
	v := &ValidationError{}
	g.Thresholds.Validate(v)
	if len(g.Advice) > MaxAdviceSpecies {
		v.Add("advice", fmt.Sprintf("advice may name at most %d species", MaxAdviceSpecies))
	}
	species := make([]string, 0, len(g.Advice))
	for sp := range g.Advice {
		species = append(species, sp)
	}
	slices.Sort(species)
	for _, sp := range species {
		field := "advice." + sp
		if sp == "" || utf8.RuneCountInString(sp) > maxSpeciesKey || !utf8.ValidString(sp) || strings.ContainsAny(sp, ".[]\x00") {
			v.Add("advice", fmt.Sprintf("advice species %q must be a species name of 1 to %d characters without '.', '[' or ']', or * for any species", sp, maxSpeciesKey))
			continue
		}
		kinds := g.Advice[sp]
		if len(kinds) == 0 {
			v.Add(field, field+" must give advice for at least one kind, or be left out")
		}
		names := make([]string, 0, len(kinds))
		for k := range kinds {
			names = append(names, string(k))
		}
		slices.Sort(names)
		for _, k := range names {
			kf := field + "." + k
			if !slices.Contains(AlertKinds, AlertKind(k)) {
				v.Add(kf, fmt.Sprintf("%s: %q is not an alert kind; use water, nutrients, diseases or soil_humidity", kf, k))
				continue
			}
			validateAdvice(v, kf, kinds[AlertKind(k)])
		}
	}
	return v.OrNil()
}

func validateAdvice(v *ValidationError, field string, a Advice) {
	if n := utf8.RuneCountInString(a.Title); n == 0 || n > MaxAdviceTitle || !utf8.ValidString(a.Title) {
		v.Add(field+".title", fmt.Sprintf("%s.title must be 1 to %d characters", field, MaxAdviceTitle))
	}
	if len(a.Steps) == 0 || len(a.Steps) > MaxAdviceSteps {
		v.Add(field+".steps", fmt.Sprintf("%s.steps must list 1 to %d steps", field, MaxAdviceSteps))
	}
	for i, s := range a.Steps {
		if n := utf8.RuneCountInString(s); n == 0 || n > MaxAdviceStep || !utf8.ValidString(s) {
			f := fmt.Sprintf("%s.steps[%d]", field, i)
			v.Add(f, fmt.Sprintf("%s must be 1 to %d characters", f, MaxAdviceStep))
		}
	}
}

// AdviceFor returns the garden's own advice for a species and kind: for the species,
// else for any species ("*"); ok is false when the garden has none.
func (g Guidance) AdviceFor(species string, k AlertKind) (Advice, bool) {
	if a, ok := g.Advice[SpeciesKey(species)][k]; ok && species != "" {
		return a, true
	}
	a, ok := g.Advice[AnySpecies][k]
	return a, ok
}
