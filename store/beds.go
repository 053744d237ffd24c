package store

import (
	"fmt"
	"unicode/utf8"
)

// Bed is a bed of a garden: a project on the spatial data server, named by its uuid.
// Garden is not part of the API's bed object; the stored record keeps it.
type Bed struct {
	ID     uint64 `json:"id"`
	Garden uint64 `json:"-"`
	UUID   string `json:"uuid"`
	Name   string `json:"name"`
}

// maxUUIDLen bounds a project uuid; a standard uuid has 36 characters.
const maxUUIDLen = 64

// uuidChars reports whether s is made of ASCII letters, digits and '-' only (and is
// not empty).
func uuidChars(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && c != '-' {
			return false
		}
	}
	return s != ""
}

// Validate checks the uuid (1–64 letters, digits and '-') and the optional name.
func (b Bed) Validate() error {
	v := &ValidationError{}
	switch {
	case b.UUID == "":
		v.Add("uuid", "uuid is required: the uuid of the bed's project on the spatial data server")
	case len(b.UUID) > maxUUIDLen || !uuidChars(b.UUID):
		v.Add("uuid", fmt.Sprintf("uuid must be a spatial data server (SEEREP) project uuid: at most %d letters, digits and '-', like 3fa85f64-5717-4562-b3fc-2c963f66afa6", maxUUIDLen))
	}
	if utf8.RuneCountInString(b.Name) > maxNameLen {
		v.Add("name", fmt.Sprintf("name must be at most %d characters", maxNameLen))
	} else if msg := textProblem(b.Name); msg != "" {
		v.Add("name", "name "+msg)
	}
	return v.OrNil()
}

// ErrTooManyBeds: the garden already has the most beds CreateBedUpTo allows. It is
// ErrInvalid under errors.Is.
var ErrTooManyBeds = fmt.Errorf("%w: the garden has as many beds as it may have", ErrInvalid)

// ProjectBed is a bed of a project in another garden than the one a bed of the
// project is being created in, with what the creating user holds on its garden
// (CreateBedFor).
type ProjectBed struct {
	Bed Bed
	// Company is the company of the bed's garden.
	Company uint64
	Access  Access
}
