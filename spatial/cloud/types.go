// Package cloud decodes ROS-style PointCloud2 data (as sent by the spatial data server)
// without knowing anything about protobuf: the centre of a cloud, and a PLY export for
// looking at a cloud in ordinary tools. It imports nothing from this module.
package cloud

import "strconv"

// Datatype is the type of one element of a field; the values are the wire values of
// PointField.Datatype.
type Datatype uint8

// The datatypes of PointField; 0 (UNSET) and anything above Float64 are unknown.
const (
	Int8    Datatype = 1
	Uint8   Datatype = 2
	Int16   Datatype = 3
	Uint16  Datatype = 4
	Int32   Datatype = 5
	Uint32  Datatype = 6
	Float32 Datatype = 7
	Float64 Datatype = 8
)

// datatypeNames and datatypeSizes are indexed by Datatype; index 0 is UNSET.
var (
	datatypeNames = [...]string{"UNSET", "INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32", "FLOAT32", "FLOAT64"}
	datatypeSizes = [...]uint32{0, 1, 1, 2, 2, 4, 4, 4, 8}
)

// Size is the size of one element in bytes, or 0 for an unknown datatype.
func (d Datatype) Size() uint32 {
	if int(d) < len(datatypeSizes) {
		return datatypeSizes[d]
	}
	return 0
}

// Known reports whether d is one of the eight datatypes.
func (d Datatype) Known() bool { return d.Size() != 0 }

func (d Datatype) String() string {
	if int(d) < len(datatypeNames) {
		return datatypeNames[d]
	}
	return "Datatype(" + strconv.Itoa(int(d)) + ")"
}

// Field describes one named field inside every point.
type Field struct {
	Name string
	// Offset is the byte offset of the field inside one point.
	Offset   uint32
	Datatype Datatype
	// Count is the number of elements; 0 is read as 1, as PCL does, because old
	// converters wrote 0 for scalar fields.
	Count uint32
}

// elems is the effective element count (see Count).
func (f Field) elems() uint32 {
	if f.Count == 0 {
		return 1
	}
	return f.Count
}

// PointCloud is a PointCloud2 message without its header: Width×Height points, point i
// of row r starting at byte r·RowStep + i·PointStep of Data. Points may be padded
// (PointStep larger than the fields need) and rows may be padded too.
type PointCloud struct {
	Width, Height, PointStep, RowStep uint32
	Fields                            []Field
	// BigEndian applies to every field of every point.
	BigEndian bool
	Data      []byte
}
