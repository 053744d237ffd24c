package server

import (
	"fmt"
	"net/http"

	"github.com/gardend/gardend/spatial"
)

// CompatPlantMap is the --compat mode for the original PlantMap web client, run
// unchanged (docs/migrating.md): the operator's explicit choice to answer as the
// original server did where that client needs it, at the cost of honesty about
// missing data. It changes two things only: the beds stream leaves out a bed whose
// project the spatial server does not know (skipUnknownProject), and the plants
// answer fills unknown values with the original's placeholders (withPlaceholders).
const CompatPlantMap = "plantmap"

// CheckCompat validates --compat: "" (off) or CompatPlantMap.
func CheckCompat(mode string) error {
	if mode != "" && mode != CompatPlantMap {
		return fmt.Errorf("--compat %q: the one compatibility mode is %q, for the original PlantMap web client (docs/migrating.md)", mode, CompatPlantMap)
	}
	return nil
}

// skipUnknownProject reports whether the beds stream leaves out a bed that failed
// with err: with CompatPlantMap, when the spatial server does not know its project.
// The original server skipped such beds; its client shows an error line as an empty
// row. The log names the bed, so the operator can remove or fix it.
func (s *Server) skipUnknownProject(r *http.Request, bedID uint64, project string, err error) bool {
	if !s.cfg.CompatPlantMap || !spatial.IsUnknownProject(err) {
		return false
	}
	s.log.Warn().Str("request_id", requestID(r)).Uint64("bed_id", bedID).Str("project", project).
		Msg("bed left out of the beds stream (--compat plantmap): the spatial server does not know its project")
	return true
}

// The original's placeholders for a plant's unknown values (shared/spec/plantmap-client.md).
// The yield placeholder is 0: the original read each value's double member, which
// protobuf answers 0 for a value that is not there, as its soil_humidity 0.0 shows.
const (
	placeholderPlant   = "Error"
	placeholderVariety = "N/A"
	placeholderHarvest = "0 week"
)

// placeholderPlantJSON is a plant as the original sent it: health always present,
// [] when there is none (this field shadows plantJSON's omitempty one).
type placeholderPlantJSON struct {
	plantJSON
	Health []healthJSON `json:"health"`
}

// withPlaceholders fills the values the original always sent (plant, variety,
// harvest, yield, soil_humidity, health) with its placeholders where p has none.
// The seed's own spelling soil_humidty stays absent: only the original's fields get
// placeholders, and nothing else changes.
func withPlaceholders(p plantJSON) placeholderPlantJSON {
	if p.Plant == "" {
		p.Plant = placeholderPlant
	}
	if p.Variety == "" {
		p.Variety = placeholderVariety
	}
	if p.Harvest == "" {
		p.Harvest = placeholderHarvest
	}
	zero := 0.0
	if p.Yield == nil {
		p.Yield = &zero
	}
	if p.SoilHumidity == nil {
		p.SoilHumidity = &zero
	}
	out := placeholderPlantJSON{plantJSON: p, Health: p.Health}
	if out.Health == nil {
		out.Health = []healthJSON{}
	}
	return out
}
