package store

// BedStatus is a bed with the state of its project's plant positions, for
// `gardend inspect beds`.
type BedStatus struct {
	Bed
	Garden uint64 `json:"garden"`
	// Positions counts clouds with a computed position, NoPosition those that yield
	// none; Queued counts downloads waiting, Failed those that ran out of attempts.
	Positions  int `json:"positions"`
	NoPosition int `json:"no_position"`
	Queued     int `json:"queued"`
	Failed     int `json:"failed"`
}
