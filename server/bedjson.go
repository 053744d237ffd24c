package server

import (
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/gardend/gardend/server/pointcloud"
	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/store"
)

// The wire shapes of decisions.md, "Beds and plants": fields in the seed's order,
// spelled as the seed spells them, omitted when there is no data.

type healthJSON struct {
	Type     string `json:"type"`
	Loglevel int64  `json:"loglevel"`
}

// bedJSON is one line of the beds stream; a bed the spatial server could not answer
// for has only id, plants, error and the two avg_plant_* nulls.
type bedJSON struct {
	ID uint64 `json:"id"`
	// Name is the bed's name as registered, else its project's on the spatial server
	// ("" when neither is known).
	Name        string           `json:"name"`
	Plant       string           `json:"plant,omitempty"`
	Variety     string           `json:"variety,omitempty"`
	Plants      string           `json:"plants"`
	SoilHumidty *float64         `json:"soil_humidty,omitempty"`
	Harvest     string           `json:"harvest,omitempty"`
	Yield       *float64         `json:"yield,omitempty"`
	Health      []healthJSON     `json:"health,omitempty"`
	PlantCoords []plantCoordJSON `json:"plant_coords,omitempty"`
	Error       string           `json:"error,omitempty"`
	// AsOf is when the bed's home read these values: set for a bed homed at another
	// site (bedvalues.go), absent for one read from the spatial server now.
	AsOf *time.Time `json:"as_of,omitempty"`
	compatBed
}

// compatBed is what the original PlantMap server sent besides the seed's fields and
// its web client reads (shared/spec/plantmap-client.md): the other spelling of the
// humidity, and the mean position of the bed's plants, which places the bed's marker.
// The client throws on an undefined position, so the two are null, never absent.
type compatBed struct {
	SoilHumidity *float64 `json:"soil_humidity,omitempty"`
	AvgPlantLat  *float64 `json:"avg_plant_lat"`
	AvgPlantLon  *float64 `json:"avg_plant_lon"`
}

// plantCoordJSON is a bed's plant position with the geometry uuid of the plant's point
// cloud (plant_id, as the original sent it).
type plantCoordJSON struct {
	store.LatLon
	PlantID string `json:"plant_id"`
}

type plantJSON struct {
	ID          string        `json:"id"`
	BedID       uint64        `json:"bedid"`
	BedName     string        `json:"bed_name"`
	Plant       string        `json:"plant,omitempty"`
	Variety     string        `json:"variety,omitempty"`
	SoilHumidty *float64      `json:"soil_humidty,omitempty"`
	Harvest     string        `json:"harvest,omitempty"`
	Yield       *float64      `json:"yield,omitempty"`
	Health      []healthJSON  `json:"health,omitempty"`
	PlantCoords *store.LatLon `json:"plant_coords,omitempty"`
	// PointCloud is where the plant's point cloud stands.
	PointCloud pointcloud.Status `json:"pointcloud,omitempty"`
	compatPlant
}

// compatPlant is the original's spelling of a plant's bed id and humidity. A missing
// yield stays missing: the client shows an absent one as "NaN" but a null as "0",
// which would pass for a measurement (docs/migrating.md).
type compatPlant struct {
	BedIDCompat  uint64   `json:"bed_id"`
	SoilHumidity *float64 `json:"soil_humidity,omitempty"`
}

// summaryFields fills the fields a bed and a plant share.
func summaryFields(sum spatial.Summary) (harvest string, health []healthJSON) {
	if sum.HarvestWeeks != nil {
		harvest = spatial.HarvestText(*sum.HarvestWeeks)
	}
	for _, h := range sum.Health {
		health = append(health, healthJSON{Type: h.Type, Loglevel: h.Level})
	}
	return harvest, health
}

func newBedJSON(id uint64, name, plantsURL string, b spatial.Bed, coords []*store.LatLon, now time.Time) bedJSON {
	sum := spatial.Summarize(b.Plants, now)
	out := bedJSON{ID: id, Name: name, Plant: sum.Species, Variety: sum.Variety, Plants: plantsURL,
		SoilHumidty: sum.SoilHumidity, Yield: sum.Yield}
	out.Harvest, out.Health = summaryFields(sum)
	out.SoilHumidity = sum.SoilHumidity
	// coords is in plant-name order, as b.Plants is; a known position implies a cloud.
	for i, c := range coords {
		if c != nil {
			out.PlantCoords = append(out.PlantCoords, plantCoordJSON{LatLon: *c, PlantID: b.Plants[i].Cloud.UUID})
		}
	}
	if len(out.PlantCoords) > 0 {
		lat, lon := meanPosition(out.PlantCoords)
		out.AvgPlantLat, out.AvgPlantLon = &lat, &lon
	}
	return out
}

// meanPosition averages positions; longitudes are averaged as offsets from the first,
// so a bed astride the antimeridian is not placed on the other side of the globe.
func meanPosition(cs []plantCoordJSON) (lat, lon float64) {
	lon0 := cs[0].Lon
	var dLon float64
	for _, c := range cs {
		lat += c.Lat
		dLon += wrapLongitude(c.Lon - lon0)
	}
	n := float64(len(cs))
	return lat / n, wrapLongitude(lon0 + dLon/n)
}

// wrapLongitude maps degrees into [−180, 180).
func wrapLongitude(v float64) float64 {
	v = math.Mod(v+180, 360)
	if v < 0 {
		v += 360
	}
	return v - 180
}

func newPlantJSON(bedID uint64, name string, p spatial.Plant, coord *store.LatLon, now time.Time) plantJSON {
	sum := spatial.PlantSummary(p, now)
	out := plantJSON{ID: p.ID, BedID: bedID, BedName: name, Plant: sum.Species, Variety: sum.Variety,
		SoilHumidty: sum.SoilHumidity, Yield: sum.Yield, PlantCoords: coord}
	out.Harvest, out.Health = summaryFields(sum)
	out.BedIDCompat, out.SoilHumidity = bedID, sum.SoilHumidity
	return out
}

// baseURL is the scheme and host the client used, for absolute URLs. Behind a trusted
// proxy, X-Forwarded-Proto and X-Forwarded-Host (their first values) say what the
// client used; otherwise they could be forged and are ignored.
func (s *Server) baseURL(r *http.Request) string {
	scheme, host := "http", r.Host
	if r.TLS != nil {
		scheme = "https"
	}
	if s.cfg.TrustProxy {
		if v := firstForwarded(r, "X-Forwarded-Proto"); v == "http" || v == "https" {
			scheme = v
		}
		if v := firstForwarded(r, "X-Forwarded-Host"); validHost(v) {
			host = v
		}
	}
	return scheme + "://" + host
}

func firstForwarded(r *http.Request, name string) string {
	v, _, _ := strings.Cut(r.Header.Get(name), ",")
	return strings.ToLower(strings.TrimSpace(v))
}

// validHost accepts a host[:port] of printable characters that cannot end the
// authority part of a URL.
func validHost(h string) bool {
	if h == "" || len(h) > 255 {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; c <= ' ' || c >= 0x7f || strings.IndexByte("/?#@\\", c) >= 0 {
			return false
		}
	}
	return true
}
