package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Coordinate is one georeferencing point of a garden image.
type Coordinate struct {
	Name      string  `json:"name"`
	Latitude  float64 `json:"latitude"`
	Longitude float64 `json:"longitude"`
}

// Coordinates is a garden image's point set, in the order uploaded.
type Coordinates []Coordinate

// requiredCorners place an image on a map (seed: image upload).
var requiredCorners = []string{"top_left", "top_right", "bottom_left"}

// maxCoordinates bounds a point set; georeferencing needs a handful.
const maxCoordinates = 1000

const coordinatesHint = "an array of {name, latitude, longitude} including top_left, top_right and bottom_left"

// Validate checks names (non-empty, unique), ranges and the required corners. Fields
// are named as in the upload, e.g. coordinates[2].latitude.
func (cs Coordinates) Validate() error {
	if len(cs) > maxCoordinates {
		return Invalid("coordinates", fmt.Sprintf("coordinates may hold at most %d points", maxCoordinates))
	}
	v := &ValidationError{}
	seen := make(map[string]int, len(cs))
	for i, c := range cs {
		field := fmt.Sprintf("coordinates[%d]", i)
		switch first, dup := seen[c.Name]; {
		case strings.TrimSpace(c.Name) == "":
			v.Add(field+".name", field+".name must not be empty")
		case utf8.RuneCountInString(c.Name) > maxNameLen:
			v.Add(field+".name", fmt.Sprintf("%s.name must be at most %d characters", field, maxNameLen))
		case !CleanText(c.Name):
			v.Add(field+".name", field+".name "+textProblem(c.Name))
		case dup:
			v.Add(field+".name", fmt.Sprintf("%s.name repeats the name of coordinates[%d]; names must be unique", field, first))
		default:
			seen[c.Name] = i
		}
		// Written so that NaN fails too.
		if !(c.Latitude >= -90 && c.Latitude <= 90) {
			v.Add(field+".latitude", field+".latitude must be between -90 and 90")
		}
		if !(c.Longitude >= -180 && c.Longitude <= 180) {
			v.Add(field+".longitude", field+".longitude must be between -180 and 180")
		}
	}
	var missing []string
	for _, corner := range requiredCorners {
		if _, ok := seen[corner]; !ok {
			missing = append(missing, corner)
		}
	}
	if len(missing) > 0 {
		v.Add("coordinates", "coordinates must include top_left, top_right and bottom_left; missing: "+strings.Join(missing, ", "))
	}
	return v.OrNil()
}

// ParseCoordinates reads the coordinates of an upload strictly: every field present
// and of its JSON type (a latitude sent as a string is an error, not a conversion),
// then validates the set. Errors name the field, e.g. coordinates[2].latitude.
func ParseCoordinates(raw json.RawMessage) (Coordinates, error) {
	if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
		return nil, Invalid("coordinates", "coordinates is required: "+coordinatesHint)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, Invalid("coordinates", "coordinates must be "+coordinatesHint)
	}
	if len(items) > maxCoordinates {
		return nil, Invalid("coordinates", fmt.Sprintf("coordinates may hold at most %d points", maxCoordinates))
	}
	v := &ValidationError{}
	cs := make(Coordinates, len(items))
	for i, item := range items {
		field := fmt.Sprintf("coordinates[%d]", i)
		if !bytes.HasPrefix(bytes.TrimSpace(item), []byte("{")) {
			v.Add(field, field+" must be an object with name, latitude and longitude")
			continue
		}
		var w struct {
			Name      *string  `json:"name"`
			Latitude  *float64 `json:"latitude"`
			Longitude *float64 `json:"longitude"`
		}
		if err := json.Unmarshal(item, &w); err != nil {
			var te *json.UnmarshalTypeError
			if !errors.As(err, &te) || te.Field == "" {
				v.Add(field, field+" is malformed")
				continue
			}
			kind := "a number"
			if te.Field == "name" {
				kind = "a string"
			}
			v.Add(field+"."+te.Field, field+"."+te.Field+" must be "+kind)
			continue
		}
		if w.Name == nil {
			v.Add(field+".name", field+".name is required")
		}
		if w.Latitude == nil {
			v.Add(field+".latitude", field+".latitude is required")
		}
		if w.Longitude == nil {
			v.Add(field+".longitude", field+".longitude is required")
		}
		if w.Name != nil && w.Latitude != nil && w.Longitude != nil {
			cs[i] = Coordinate{Name: *w.Name, Latitude: *w.Latitude, Longitude: *w.Longitude}
		}
	}
	if err := v.OrNil(); err != nil {
		return nil, err
	}
	if err := cs.Validate(); err != nil {
		return nil, err
	}
	return cs, nil
}
