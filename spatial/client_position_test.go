package spatial_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/spatial/demo"
)

// TestPositionsFromDemo runs the whole path a plant's coordinates take (Bed, then
// PointCloud, then PlantPosition) against the demo garden, whose generator knows where
// each cloud's centre lies in its bed's map frame. It ties the client, the demo's
// clouds and transforms, and the position code together.
func TestPositionsFromDemo(t *testing.T) {
	ds := dataset(2)
	srv := startDemo(t, ds, demo.ServerOptions{})
	c := dial(t, srv.Addr(), spatial.ClientConfig{})
	ctx := context.Background()
	placed, unplaced := 0, 0
	for _, b := range ds.Beds {
		bed, err := c.Bed(ctx, b.ProjectUUID)
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range bed.Plants {
			gp := b.Plants[i]
			if p.Cloud == nil {
				if gp.CloudUUID != "" {
					t.Errorf("%s: cloud lost", p.Name)
				}
				continue
			}
			pc, err := c.PointCloud(ctx, b.ProjectUUID, p.Cloud.UUID)
			if err != nil {
				t.Fatal(err)
			}
			got, err := spatial.PlantPosition(pc, p.Cloud.FrameID, p.Cloud.Transform, bed.Origin)
			if !gp.HasPosition {
				unplaced++
				if !errors.Is(err, spatial.ErrNoTransform) {
					t.Errorf("%s in %s: err %v, want ErrNoTransform", p.Name, p.Cloud.FrameID, err)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s: %v", p.Name, err)
				continue
			}
			placed++
			want := spatial.LocalToWGS84(b.Geolocation, gp.MapPosition[0], gp.MapPosition[1], 0)
			// 1e-9 degrees is about 0.1 mm.
			if math.Abs(got.Lat-want.Lat) > 1e-9 || math.Abs(got.Lon-want.Lon) > 1e-9 {
				t.Errorf("%s: at %v, want %v", p.Name, got, want)
			}
		}
	}
	if placed < 40 || unplaced != 1 {
		t.Errorf("placed %d, unplaced %d: want most placed and the one orphan frame", placed, unplaced)
	}
}
