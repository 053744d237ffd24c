package store

// Garden belongs to one company for its whole life (nothing moves a garden), which lets
// indexes carry the company id.
type Garden struct {
	ID   uint64 `json:"id"`
	Name string `json:"name"`
	// ImagePath is relative to the data directory ("images/….png"); nil without image.
	ImagePath *string `json:"image_path"`
	Company   uint64  `json:"company"`
}

// Validate checks the name: 1–128 characters, not blank.
func (g Garden) Validate() error { return checkName(g.Name) }
