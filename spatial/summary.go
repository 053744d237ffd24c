package spatial

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"time"
)

// Summary is what the beds and plants endpoints show for a set of plants (a bed) or a
// single plant, following shared/spec/decisions.md, "Beds and plants". Absent values
// are "" or nil, never zero: the endpoints omit them.
type Summary struct {
	// Species and Variety are the most frequent non-empty values; ties go to the value
	// that sorts first.
	Species, Variety string
	// SoilHumidity and Yield are means over the plants that have the value.
	SoilHumidity, Yield *float64
	// HarvestWeeks is the mean remaining time to harvest, in whole weeks rounded to
	// nearest (the mean is taken first).
	HarvestWeeks *int
	// Health has one entry per type, Level the rounded mean, ordered water, nutrients,
	// diseases, then others by name.
	Health []Health
}

// week is the unit of the harvest text.
const week = 7 * 24 * time.Hour

// Summarize averages plants into one Summary, as of now. Non-finite measurements (NaN
// or ±Inf from the server) count as missing: they are no value, and JSON has no way to
// write them anyway.
func Summarize(plants []Plant, now time.Time) Summary {
	var (
		s                  Summary
		species, varieties = map[string]int{}, map[string]int{}
		hum, yield, remain mean
		health             = map[string]*mean{}
	)
	for _, p := range plants {
		species[p.Species]++
		varieties[p.Variety]++
		hum.addPtr(p.Humidity)
		yield.addPtr(p.Yield)
		if d, ok := RemainingToHarvest(p, now); ok {
			remain.add(float64(d))
		}
		for _, h := range p.Health {
			if h.Type == "" {
				continue // a level for no named aspect says nothing
			}
			m := health[h.Type]
			if m == nil {
				m = &mean{}
				health[h.Type] = m
			}
			m.add(float64(h.Level))
		}
	}
	s.Species, s.Variety = mode(species), mode(varieties)
	s.SoilHumidity, s.Yield = hum.ptr(), yield.ptr()
	if remain.n > 0 {
		w := weeksOf(remain.value())
		s.HarvestWeeks = &w
	}
	for typ, m := range health {
		s.Health = append(s.Health, Health{Type: typ, Level: roundInt64(m.value())})
	}
	slices.SortFunc(s.Health, compareHealth)
	return s
}

// PlantSummary is Summarize for one plant: its own values, its health entries sorted
// as for a bed (two entries of one type, should a plant have them, are averaged).
func PlantSummary(p Plant, now time.Time) Summary {
	return Summarize([]Plant{p}, now)
}

// RemainingToHarvest is the time until p is ripe, assuming linear growth: planted at P
// with growth state g now, (now − P)·(1 − g)/g. A ripe plant (g ≥ 1) has 0 left, even
// without a planting date. ok is false when the plant has nothing to say: g missing,
// NaN or ≤ 0, no planting date, or a planting date after now — a plant that has grown
// before it was planted is bad data, and 0 or a negative time would pass it off as
// ready. Durations beyond time.Duration's range (g near 0) are clamped.
func RemainingToHarvest(p Plant, now time.Time) (time.Duration, bool) {
	if p.GrowthState == nil {
		return 0, false
	}
	g := *p.GrowthState
	switch {
	case math.IsNaN(g) || g <= 0:
		return 0, false
	case g >= 1:
		return 0, true
	case p.PlantedAt == nil:
		return 0, false
	}
	elapsed := now.Sub(*p.PlantedAt)
	if elapsed < 0 {
		return 0, false
	}
	r := math.Round(float64(elapsed) * (1 - g) / g)
	if r >= math.MaxInt64 { // float64(MaxInt64) is 2^63, one past the range
		return time.Duration(math.MaxInt64), true
	}
	return time.Duration(r), true
}

// Weeks is d in whole weeks, rounded to nearest (halves away from zero).
func Weeks(d time.Duration) int { return weeksOf(float64(d)) }

func weeksOf(nanos float64) int { return int(math.Round(nanos / float64(week))) }

// HarvestText is the harvest field's text: always "week", as the seed writes it.
func HarvestText(weeks int) string { return strconv.Itoa(weeks) + " week" }

// mean accumulates a mean; sums in float64 are exact enough for any realistic input.
type mean struct {
	sum float64
	n   int
}

func (m *mean) add(v float64) { m.sum += v; m.n++ }

func (m *mean) addPtr(v *float64) {
	if v != nil && !math.IsNaN(*v) && !math.IsInf(*v, 0) {
		m.add(*v)
	}
}

func (m mean) value() float64 { return m.sum / float64(m.n) }

// ptr is the mean, or nil when nothing was added.
func (m mean) ptr() *float64 {
	if m.n == 0 {
		return nil
	}
	v := m.value()
	return &v
}

// mode is the most frequent non-empty key, ties to the one that sorts first.
func mode(counts map[string]int) string {
	best, bestN := "", 0
	for v, n := range counts {
		if v != "" && (n > bestN || n == bestN && v < best) {
			best, bestN = v, n
		}
	}
	return best
}

// roundInt64 rounds to nearest (halves away from zero), clamped to int64's range.
func roundInt64(v float64) int64 {
	r := math.Round(v)
	switch {
	case r >= math.MaxInt64:
		return math.MaxInt64
	case r <= math.MinInt64:
		return math.MinInt64
	}
	return int64(r)
}

// healthRank orders the three known aspects first.
func healthRank(typ string) int {
	switch typ {
	case "water":
		return 0
	case "nutrients":
		return 1
	case "diseases":
		return 2
	}
	return 3
}

func compareHealth(a, b Health) int {
	if c := cmp.Compare(healthRank(a.Type), healthRank(b.Type)); c != 0 {
		return c
	}
	return cmp.Compare(a.Type, b.Type)
}
