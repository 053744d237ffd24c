package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/gardend/gardend/spatial/demo"
	"github.com/gardend/gardend/store"
)

// Demo account credentials printed by serve --demo. They are well known on purpose:
// the demo is for trying gardend out on one's own machine.
const (
	DemoUsername = "demo"
	DemoPassword = "demo-gardener"
)

// Names of the demo records; seeding finds them by name, so it is idempotent.
const (
	DemoCompanyName = "Demo Farm"
	DemoGardenName  = "Demo Garden"
)

// seedDemo makes sure the demo account exists and, with the demo spatial server, a
// company with a garden holding its picture and one bed per demo project. Each step
// looks for what an earlier start made first, so restarts add nothing twice.
func (s *Server) seedDemo(ctx context.Context) error {
	u, err := s.store.UserByUsername(DemoUsername)
	switch {
	case err == nil:
	case errors.Is(err, store.ErrNotFound):
		hash, err := s.pw.Hash(ctx, DemoPassword)
		if err != nil {
			return err
		}
		if u, err = s.store.CreateUser(store.NewUser{Username: DemoUsername, FirstName: "Demo", LastName: "Gardener", PasswordHash: hash}); err != nil {
			return err
		}
	default:
		return err
	}
	if s.demo != nil {
		if err := s.seedDemoGarden(ctx, u); err != nil {
			return err
		}
	}
	// The password goes to the person at the terminal (serve --demo prints it), never
	// into the log, which is kept and shipped.
	s.log.Info().Str("username", DemoUsername).Str("garden", s.demoGarden).Msg("demo account ready (serve printed its password on standard output)")
	return nil
}

func (s *Server) seedDemoGarden(ctx context.Context, u store.User) error {
	companies, err := s.store.CompaniesOfUser(u.ID)
	if err != nil {
		return err
	}
	var c store.Company
	for _, co := range companies {
		if co.Name == DemoCompanyName {
			c = co
			break
		}
	}
	if c.ID == 0 {
		if c, err = s.store.CreateCompany(u.ID, DemoCompanyName); err != nil {
			return err
		}
	}
	gardens, err := s.store.GardensOfCompany(c.ID)
	if err != nil {
		return err
	}
	var g store.Garden
	for _, ga := range gardens {
		if ga.Name == DemoGardenName {
			g = ga
			break
		}
	}
	if g.ID == 0 {
		if g, err = s.store.CreateGarden(c.ID, DemoGardenName); err != nil {
			return err
		}
	}
	ds := s.demo.data
	if g.ImagePath == nil {
		png, corners := demo.GardenPNG(ds, 1200, 600)
		var coords store.Coordinates
		for _, name := range []string{"top_left", "top_right", "bottom_left", "bottom_right"} {
			coords = append(coords, store.Coordinate{Name: name, Latitude: corners[name].Lat, Longitude: corners[name].Lon})
		}
		if _, err := s.replaceGardenImage(ctx, g.ID, png, coords); err != nil {
			return fmt.Errorf("demo garden image: %w", err)
		}
	}
	beds, err := s.store.BedsOfGarden(g.ID)
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, b := range beds {
		have[b.UUID] = true
	}
	var created []store.Bed
	for _, b := range ds.Beds {
		if have[b.ProjectUUID] {
			continue
		}
		bed, err := s.store.CreateBed(g.ID, b.ProjectUUID, b.Name)
		if err != nil {
			return err
		}
		created = append(created, bed)
	}
	if err := s.seedDemoHistory(g, u, created); err != nil {
		return fmt.Errorf("demo history: %w", err)
	}
	s.demoGarden = "/companies/" + idText(c.ID) + "/gardens/" + idText(g.ID)
	return nil
}

// DemoGardenPath is the path of the demo garden once Run has seeded it ("" without
// --demo).
func (s *Server) DemoGardenPath() string { return s.demoGarden }
