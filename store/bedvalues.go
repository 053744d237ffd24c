package store

import (
	"encoding/json"
	"time"
)

// BedValues is what a bed's spatial server last said of it and its plants, kept at
// the bed's home so that other sites can show the bed "as of" At without reaching
// that spatial server (docs/sync.md). Data is the server's own rendering (the beds
// stream's line and the plants answer); the store keeps it as it is.
type BedValues struct {
	Bed    uint64          `json:"bed"`
	Garden uint64          `json:"garden"`
	At     time.Time       `json:"at"`
	Data   json.RawMessage `json:"data"`
}

// MaxBedValuesBytes bounds one bed's values: a bed of a few hundred plants.
const MaxBedValuesBytes = 4 << 20

// BedValueStore keeps the latest values of beds. A bed's values go with the bed.
type BedValueStore interface {
	// PutBedValues replaces the bed's values; a bed that is not the garden's is
	// ErrNotFound.
	PutBedValues(v BedValues) error
	// BedValuesOfGarden returns the values of the garden's beds that have some, by
	// bed id.
	BedValuesOfGarden(gardenID uint64) ([]BedValues, error)
}

// Validate checks the size and that Data is one JSON value.
func (v BedValues) Validate() error {
	switch {
	case len(v.Data) > MaxBedValuesBytes:
		return Invalid("data", "bed values must be at most 4 MiB")
	case !json.Valid(v.Data):
		return Invalid("data", "bed values must be one JSON value")
	}
	return nil
}
