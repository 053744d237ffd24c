package store

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Company owns gardens; its members hold company permissions.
type Company struct {
	ID   uint64 `json:"id"`
	Name string `json:"name"`
}

// maxNameLen bounds the names of companies, gardens and beds, in characters.
const maxNameLen = 128

// Validate checks the name: 1–128 characters, not blank, text (CleanText).
func (c Company) Validate() error { return checkName(c.Name) }

func checkName(name string) error {
	switch {
	case strings.TrimSpace(name) == "":
		return Invalid("name", "name is required and must not be blank")
	case utf8.RuneCountInString(name) > maxNameLen:
		return Invalid("name", fmt.Sprintf("name must be at most %d characters", maxNameLen))
	case !CleanText(name):
		return Invalid("name", "name "+textProblem(name))
	}
	return nil
}
