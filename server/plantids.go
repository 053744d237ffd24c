package server

import (
	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/store"
)

// keepPlantIDs gives every plant of bed the id gardend first reported for its name in
// the bed's project (store.LogStore.KeepPlantIDs), keeping the ids of names seen for
// the first time: a spatial server that adds a measurement geometry per scan under
// the same name changes the plant's values, never its id. The store is asked after
// the spatial server answered, never during.
func (s *Server) keepPlantIDs(bed *spatial.Bed) error {
	if len(bed.Plants) == 0 {
		return nil
	}
	seen := make([]store.PlantID, len(bed.Plants))
	for i, p := range bed.Plants {
		seen[i] = store.PlantID{Name: p.Name, ID: p.ID}
	}
	ids, err := s.store.KeepPlantIDs(bed.ProjectUUID, seen)
	if err != nil {
		return err
	}
	for i := range bed.Plants {
		if id, ok := ids[bed.Plants[i].Name]; ok {
			bed.Plants[i].ID = id
		}
	}
	return nil
}

// bedName is what a bed is called: as registered, else its project's name on the
// spatial server.
func bedName(b store.Bed, bed *spatial.Bed) string {
	if b.Name != "" || bed == nil {
		return b.Name
	}
	return bed.Name
}
