package demo

import (
	"strings"
)

// maxNormalLevel is the highest health level of a plant not in trouble: the
// original's client colours levels 0–3.
const maxNormalLevel = 3

// markTrouble picks the bed's plant in trouble, the first from a point that depends
// on the bed whose measurement has a float humidity and three whole health levels
// (so the simulation can drive them), and folds every other plant's levels into
// 0–3. It draws nothing from the random source: the rest of the dataset stays as it
// was.
func markTrouble(b *Bed) {
	n := len(b.Plants)
	if n == 0 {
		return
	}
	start := int(hash01(b.ProjectUUID, "trouble") * float64(n))
	trouble := -1
	for i := range n {
		k := (start + i) % n
		if drivable(b.Measurements[b.Plants[k].MeasurementUUID]) {
			trouble = k
			break
		}
	}
	for i := range b.Plants {
		if i == trouble {
			b.Plants[i].Trouble = true
			continue
		}
		m := b.Measurements[b.Plants[i].MeasurementUUID]
		for k, v := range m {
			if l, ok := v.(int64); ok && strings.HasSuffix(k, "_level") && l > maxNormalLevel {
				m[k] = l % (maxNormalLevel + 1)
			}
		}
	}
}

// drivable: the measurement's humidity is a float and it has all three aspects with
// whole levels.
func drivable(m map[string]any) bool {
	if _, ok := m["humidity"].(float64); !ok {
		return false
	}
	seen := 0
	for i := range 3 {
		t, ok := m[healthKey(i, "type")].(string)
		if _, whole := m[healthKey(i, "level")].(int64); ok && whole && (t == "water" || t == "nutrients" || t == "diseases") {
			seen++
		}
	}
	return seen == 3
}

func healthKey(i int, part string) string {
	return "health_" + string(rune('0'+i)) + "_" + part
}
