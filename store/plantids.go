package store

import (
	"fmt"
	"hash/fnv"
	"strings"
)

// A plant is the set of geometries sharing a name within its bed's project (the
// spatial server may add a new measurement geometry per scan under the same name).
// Its id is the id gardend first reported for that name, kept here per project, so
// that it stays the same across scans, and logs and history keyed by it stay
// attached. The identities of a project go with it, when no bed refers to it any more.

// PlantID is the id gardend keeps for a plant name of a project.
type PlantID struct {
	Project string `json:"project"`
	Name    string `json:"name"`
	ID      string `json:"id"`
}

// maxPlantName bounds the names kept: a geometry name is short; a longer one is not
// kept (its plant is reported with the id the server gives, and may change).
const maxPlantName = 512

// Keepable reports whether the identity can be kept: a project and id of the
// spatial server's form, and a name without NUL bytes of at most 512 bytes.
func (p PlantID) Keepable() bool {
	return ValidUUID(p.Project) && p.ID != "" && ValidUUID(p.ID) && len(p.Name) <= maxPlantName && !strings.ContainsRune(p.Name, 0)
}

// Validate is Keepable with a message, for archives.
func (p PlantID) Validate() error {
	if !p.Keepable() {
		return Invalid("plant_id", fmt.Sprintf("plant identity %q of project %q: project and id must be spatial-server uuids and the name at most %d bytes without NUL", p.ID, p.Project, maxPlantName))
	}
	return nil
}

// PlanPlantIDs works out, from the identities kept for a project (kept: name → id)
// and the plants just read (seen, the ids the server gives now), the id of every
// plant and the identities to add. A name seen for the first time keeps the id it
// came with, unless another name of the project has that id already (the server
// renamed a geometry): then it gets that id with a suffix derived from its name, the
// same on every node.
func PlanPlantIDs(kept map[string]string, seen []PlantID) (ids map[string]string, add []PlantID) {
	ids = make(map[string]string, len(seen))
	taken := make(map[string]bool, len(kept))
	for _, id := range kept {
		taken[id] = true
	}
	for _, p := range seen {
		if id, ok := kept[p.Name]; ok {
			ids[p.Name] = id
			continue
		}
		if _, dup := ids[p.Name]; dup || !p.Keepable() {
			if !dup {
				ids[p.Name] = p.ID
			}
			continue
		}
		id := p.ID
		if taken[id] {
			h := fnv.New32a()
			h.Write([]byte(p.Name))
			id = fmt.Sprintf("%s-%08x", truncate(p.ID, maxUUIDLen-9), h.Sum32())
		}
		if taken[id] {
			ids[p.Name] = p.ID // not kept: a collision of a collision
			continue
		}
		taken[id] = true
		ids[p.Name] = id
		add = append(add, PlantID{Project: p.Project, Name: p.Name, ID: id})
	}
	return ids, add
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
