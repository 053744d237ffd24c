package cloud_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"

	"github.com/gardend/gardend/spatial/cloud"
)

func ExampleCentroid() {
	// Two float32 points (x, y, z) and one with a NaN x, which is skipped.
	var data []byte
	for _, v := range []float32{1, 2, 0, 3, 6, 0, float32(math.NaN()), 1, 0} {
		data = binary.LittleEndian.AppendUint32(data, math.Float32bits(v))
	}
	pc := cloud.PointCloud{
		Width: 3, Height: 1, PointStep: 12, RowStep: 36,
		Fields: []cloud.Field{
			{Name: "x", Offset: 0, Datatype: cloud.Float32, Count: 1},
			{Name: "y", Offset: 4, Datatype: cloud.Float32, Count: 1},
			{Name: "z", Offset: 8, Datatype: cloud.Float32, Count: 1},
		},
		Data: data,
	}
	x, y, n, err := cloud.Centroid(pc)
	fmt.Println(x, y, n, err)

	// The same cloud as PLY, for a viewer; the header is text.
	if err := cloud.WritePLY(os.Stdout, cloud.PointCloud{Fields: pc.Fields, PointStep: 12}); err != nil {
		fmt.Println(err)
	}
	// Output:
	// 2 4 2 <nil>
	// ply
	// format binary_little_endian 1.0
	// comment PointCloud2 width 0 height 0
	// element vertex 0
	// property float x
	// property float y
	// property float z
	// end_header
}
