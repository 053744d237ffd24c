// Package guidance is gardend's own advice for what an alert is about: plain,
// practical steps per problem kind, with variants for the crops the robot's gardens
// grow (tomato, lettuce, mangold, kohlrabi) and a general fallback. A garden's own
// advice (store.Guidance) comes first; For says which text applies.
package guidance

import (
	"github.com/gardend/gardend/store"
)

// For is the advice an alert of kind about a plant of species shows: the garden's own
// for the species, else the garden's own for any species, else the built-in advice
// for the species, else the built-in general advice.
func For(g store.Guidance, species string, kind store.AlertKind) store.Advice {
	if a, ok := g.AdviceFor(species, kind); ok {
		return a
	}
	return Builtin(species, kind)
}

// Builtin is gardend's own advice for a species (any case) and kind.
func Builtin(species string, kind store.AlertKind) store.Advice {
	if a, ok := builtin[store.SpeciesKey(species)][kind]; ok {
		return a
	}
	return builtin[store.AnySpecies][kind]
}

// BuiltinSpecies lists the species with advice of their own.
func BuiltinSpecies() []string { return []string{"tomato", "lettuce", "mangold", "kohlrabi"} }

// The advice. Each text says what to check first, what to do now and what to watch
// afterwards; the robot's next scans show whether it worked.
var builtin = map[string]map[store.AlertKind]store.Advice{
	store.AnySpecies: {
		store.AlertWater: {
			Title: "Water the plants thoroughly",
			Steps: []string{
				"Check the soil by hand 5 cm deep: if it is dry there, the plants are short of water.",
				"Water slowly at the base of the plants until the soil is moist 15–20 cm deep; avoid wetting the leaves.",
				"Water early in the morning or in the evening, when less is lost to evaporation.",
				"Check drippers and hoses for blockages or leaks if the bed dries out faster than its neighbours.",
				"Mulch bare soil with straw or grass clippings to keep the moisture in.",
			},
		},
		store.AlertNutrients: {
			Title: "Feed the plants",
			Steps: []string{
				"Look at the leaves: pale older leaves point to a lack of nitrogen, purple tints to phosphorus, brown edges to potassium.",
				"Work a balanced organic fertiliser or a layer of ripe compost into the top soil around the plants.",
				"Water after feeding so the nutrients reach the roots.",
				"Feed again in two to three weeks if the plants do not green up; do not overdo it, too much fertiliser burns roots.",
			},
		},
		store.AlertDiseases: {
			Title: "Contain the disease",
			Steps: []string{
				"Inspect the affected plants and their neighbours, including the undersides of the leaves.",
				"Remove and bin diseased leaves or whole plants; do not put them on the compost.",
				"Clean tools and hands after handling sick plants.",
				"Water at the base only and give the plants room, so the leaves dry quickly.",
				"Note what you see in the logbook (a photo helps) and ask an advisor if it spreads.",
			},
		},
		store.AlertSoilHumidity: {
			Title: "Soil is too dry",
			Steps: []string{
				"Water the bed deeply and evenly, until the soil is moist 15–20 cm down.",
				"Check that irrigation ran as planned: timers, valves, drippers and the water supply.",
				"Cover bare soil with mulch to slow evaporation.",
				"Compare with the next scan: if the humidity does not rise, water more often or for longer.",
			},
		},
	},
	"tomato": {
		store.AlertWater: {
			Title: "Water the tomatoes deeply and evenly",
			Steps: []string{
				"Give each plant 5–10 litres at the base, slowly, so it soaks in rather than runs off.",
				"Keep the leaves dry: wet foliage invites blight.",
				"Water regularly rather than a lot at once; swings between dry and wet cause blossom-end rot and split fruit.",
				"Mulch around the stems to keep the moisture even.",
			},
		},
		store.AlertNutrients: {
			Title: "Feed the tomatoes",
			Steps: []string{
				"Once the first trusses set fruit, feed every one to two weeks with a potassium-rich tomato fertiliser.",
				"Yellowing lower leaves point to nitrogen or magnesium: a little compost or a magnesium feed helps.",
				"Water before and after feeding so the roots are not scorched.",
				"Avoid strong nitrogen feeds now: they make leaves instead of fruit.",
			},
		},
		store.AlertDiseases: {
			Title: "Check the tomatoes for blight and leaf spot",
			Steps: []string{
				"Look for brown, spreading patches on leaves and stems (late blight) and dark rings on lower leaves (early blight).",
				"Cut off affected leaves at once and bin them; remove badly affected plants entirely.",
				"Remove the lowest leaves up to the first truss so soil does not splash onto them.",
				"Water only at the base in the morning and keep space between the plants for air.",
				"Harvest sound fruit early if blight spreads; it ripens indoors.",
			},
		},
		store.AlertSoilHumidity: {
			Title: "Tomato bed is too dry",
			Steps: []string{
				"Water deeply now: tomatoes need the soil moist down to the roots, 20–30 cm.",
				"Check drippers and timers; tomatoes in fruit need water every day in warm weather.",
				"Mulch with straw to keep the soil moist and even.",
				"Keep the watering even from now on to avoid split fruit and blossom-end rot.",
			},
		},
	},
	"lettuce": {
		store.AlertWater: {
			Title: "Water the lettuce little and often",
			Steps: []string{
				"Water the lettuce gently today; its roots are shallow and dry out fast.",
				"Keep the top 10 cm of soil moist, watering little and often rather than a lot at once.",
				"Water in the morning so the leaves are dry by night; wet leaves at night invite mildew and slugs.",
				"In hot weather give shade at midday to keep the heads from bolting.",
			},
		},
		store.AlertNutrients: {
			Title: "Feed the lettuce lightly",
			Steps: []string{
				"Pale, small heads point to a lack of nitrogen: give a light liquid feed or a thin layer of compost.",
				"Feed lightly: too much nitrogen makes soft leaves that slugs and aphids love.",
				"Water after feeding.",
			},
		},
		store.AlertDiseases: {
			Title: "Check the lettuce for mildew and rot",
			Steps: []string{
				"Look for yellow patches on top of the leaves with grey-white fuzz underneath (downy mildew) and slimy brown rot at the base.",
				"Pull affected leaves or whole heads and bin them.",
				"Thin the row so air moves between the heads.",
				"Water in the morning at soil level only.",
				"Harvest heads that are ready before the disease reaches them.",
			},
		},
		store.AlertSoilHumidity: {
			Title: "Lettuce bed is too dry",
			Steps: []string{
				"Water the bed today: lettuce in dry soil turns bitter and bolts.",
				"Keep the top soil evenly moist from now on; check drippers and sprinklers.",
				"A thin mulch of grass clippings keeps the moisture in.",
			},
		},
	},
	"mangold": {
		store.AlertWater: {
			Title: "Water the mangold thoroughly",
			Steps: []string{
				"Water at the base until the soil is moist 20 cm deep; mangold (chard) roots run deep.",
				"Water once or twice a week thoroughly rather than daily sprinkles.",
				"Wilting at midday that recovers by evening is normal heat stress; wilting in the morning means water now.",
				"Mulch to keep the soil cool and moist.",
			},
		},
		store.AlertNutrients: {
			Title: "Feed the mangold",
			Steps: []string{
				"Mangold is a leafy crop that needs nitrogen: give compost or an organic nitrogen feed along the row.",
				"After a big cut of leaves, feed and water to help it regrow.",
				"Water after feeding.",
			},
		},
		store.AlertDiseases: {
			Title: "Check the mangold for leaf spot",
			Steps: []string{
				"Look for small round spots with pale centres and red-brown edges (Cercospora leaf spot).",
				"Pick off spotted leaves and bin them.",
				"Water at the base in the morning and keep the plants spaced for air.",
				"Harvest the outer leaves regularly; young leaves are less prone.",
			},
		},
		store.AlertSoilHumidity: {
			Title: "Mangold bed is too dry",
			Steps: []string{
				"Water deeply now, until the soil is moist 20 cm down.",
				"Check the irrigation of the bed: valves, timers and drippers.",
				"Mulch bare soil between the plants.",
				"Dry soil makes mangold bolt and its stems tough: keep it evenly moist.",
			},
		},
	},
	"kohlrabi": {
		store.AlertWater: {
			Title: "Water the kohlrabi evenly",
			Steps: []string{
				"Water the kohlrabi today and keep the soil evenly moist from now on.",
				"Uneven watering makes the bulbs crack and turn woody.",
				"Water at the base, 10–15 cm deep, two or three times a week in dry weather.",
				"Mulch to keep the moisture even.",
			},
		},
		store.AlertNutrients: {
			Title: "Feed the kohlrabi",
			Steps: []string{
				"Kohlrabi needs a steady supply of nutrients: side-dress with compost or a balanced organic fertiliser.",
				"Pale leaves point to nitrogen, brown leaf edges to potassium.",
				"Water after feeding.",
			},
		},
		store.AlertDiseases: {
			Title: "Check the kohlrabi for black rot and club root",
			Steps: []string{
				"Look for yellow, V-shaped patches at the leaf edges with blackened veins (black rot), and plants that wilt in sunshine.",
				"Pull a wilting plant and look at its roots: swollen, knotted roots mean club root.",
				"Remove affected leaves, and plants with club root together with their roots; bin them, never compost them.",
				"Clean tools and boots after working the bed.",
				"Grow no cabbage crops in this bed for the next four years; liming acid soil slows club root.",
			},
		},
		store.AlertSoilHumidity: {
			Title: "Kohlrabi bed is too dry",
			Steps: []string{
				"Water the bed thoroughly now.",
				"Check the irrigation: kohlrabi bulbs crack when the soil swings between dry and wet.",
				"Mulch the soil between the plants.",
			},
		},
	},
}
