package server

import "fmt"

// RegistrationMode says who may create accounts through POST /register.
type RegistrationMode string

const (
	// RegistrationOpen lets anyone register (the default, as the original service).
	RegistrationOpen RegistrationMode = "open"
	// RegistrationClosed answers /register with 403; accounts come from `gardend user
	// create` instead. For boxes on a shared network.
	RegistrationClosed RegistrationMode = "closed"
)

// ParseRegistrationMode accepts "open" or "closed".
func ParseRegistrationMode(s string) (RegistrationMode, error) {
	switch m := RegistrationMode(s); m {
	case RegistrationOpen, RegistrationClosed:
		return m, nil
	}
	return "", fmt.Errorf("registration mode %q: use open or closed", s)
}
