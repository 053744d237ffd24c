package store

// Access is what one user holds on a company and on one of its gardens. The server's
// access model turns it into a role; the store only reports it, in the same read
// transaction that loads the record, so every request needs one lookup.
type Access struct {
	// Company is the user's company permission, "" when none.
	Company Level
	// Garden is the user's permission on the garden asked about, "" when none (or when
	// no garden was asked about).
	Garden Level
	// GardenMember: the user holds a permission on some garden of the company.
	GardenMember bool
}
