package spatial_test

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/spatial/cloud"
)

func ExamplePlantPosition() {
	// One point 2 m along the camera's x axis; the camera is yawed 90° and sits at
	// (0.5, 0.25) in the bed's map frame, so the plant is 0.5 m east, 2.25 m north.
	var data []byte
	for _, v := range []float64{2, 0, 0} {
		data = binary.LittleEndian.AppendUint64(data, math.Float64bits(v))
	}
	pc := cloud.PointCloud{
		Width: 1, Height: 1, PointStep: 24, RowStep: 24,
		Fields: []cloud.Field{
			{Name: "x", Offset: 0, Datatype: cloud.Float64, Count: 1},
			{Name: "y", Offset: 8, Datatype: cloud.Float64, Count: 1},
		},
		Data: data,
	}
	tf := &spatial.Transform{Translation: [3]float64{0.5, 0.25, 0}, Rotation: [4]float64{0, 0, math.Sqrt2 / 2, math.Sqrt2 / 2}}
	pos, err := spatial.PlantPosition(pc, "camera", tf, spatial.LatLon{Lat: 52.3171, Lon: 7.6306})
	fmt.Printf("%.9f %.9f %v\n", pos.Lat, pos.Lon, err)
	// Output: 52.317120220 7.630607332 <nil>
}
