package cloud

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
)

// plyTypes are the PLY 1.0 type names, indexed by Datatype.
var plyTypes = [...]string{"", "char", "uchar", "short", "ushort", "int", "uint", "float", "double"}

// WritePLY writes pc as a binary_little_endian PLY 1.0 file: one vertex per point (all
// Width×Height of them, NaN points included: it is the raw cloud), one property per
// field element (a field with Count k > 1 becomes name_0 … name_{k-1}), with point and
// row padding removed and every value converted to little-endian.
func WritePLY(w io.Writer, pc PointCloud) error {
	if err := pc.checkLayout(); err != nil {
		return err
	}
	for _, f := range pc.Fields {
		if !plyName(f.Name) {
			return invalidf("field name %q cannot be a PLY property name", f.Name)
		}
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	_, _ = bw.Write(plyHeader(pc.Width, pc.Height, pc.Fields)) // a bufio error sticks: the writes below and Flush return it
	stride := 0
	for _, f := range pc.Fields {
		stride += int(f.Datatype.Size() * f.elems())
	}

	out := make([]byte, stride)
	for r := 0; r < int(pc.Height); r++ {
		row := pc.Data[r*int(pc.RowStep):]
		for i := 0; i < int(pc.Width); i++ {
			p := row[i*int(pc.PointStep):]
			k := 0
			for _, f := range pc.Fields {
				size := int(f.Datatype.Size())
				m := copy(out[k:], p[f.Offset:int(f.Offset)+size*int(f.elems())])
				if pc.BigEndian && size > 1 {
					swapEach(out[k:k+m], size)
				}
				k += m
			}
			if _, err := bw.Write(out); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}

// plyHeader is the header WritePLY writes for a width×height cloud with fields.
func plyHeader(width, height uint32, fields []Field) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "ply\nformat binary_little_endian 1.0\ncomment PointCloud2 width %d height %d\nelement vertex %d\n",
		width, height, uint64(width)*uint64(height))
	for _, f := range fields {
		for e := uint32(0); e < f.elems(); e++ {
			if f.elems() == 1 {
				fmt.Fprintf(&b, "property %s %s\n", plyTypes[f.Datatype], f.Name)
			} else {
				fmt.Fprintf(&b, "property %s %s_%d\n", plyTypes[f.Datatype], f.Name, e)
			}
		}
	}
	b.WriteString("end_header\n")
	return b.Bytes()
}

// plyName reports whether s is one token of printable ASCII, as a PLY header needs.
func plyName(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return s != ""
}

// swapEach reverses the bytes of every size-byte element of b.
func swapEach(b []byte, size int) {
	for i := 0; i+size <= len(b); i += size {
		e := b[i : i+size]
		for j, k := 0, size-1; j < k; j, k = j+1, k-1 {
			e[j], e[k] = e[k], e[j]
		}
	}
}

// plyTypeOf maps a PLY type name (1.0 names and the sized aliases) to a Datatype.
func plyTypeOf(name string) (Datatype, bool) {
	switch name {
	case "char", "int8":
		return Int8, true
	case "uchar", "uint8":
		return Uint8, true
	case "short", "int16":
		return Int16, true
	case "ushort", "uint16":
		return Uint16, true
	case "int", "int32":
		return Int32, true
	case "uint", "uint32":
		return Uint32, true
	case "float", "float32":
		return Float32, true
	case "double", "float64":
		return Float64, true
	}
	return 0, false
}

// mergeCounted folds runs of properties name_0 … name_{k-1} (k ≥ 2, one datatype)
// back into a field with Count k, undoing WritePLY's expansion.
func mergeCounted(props []Field) []Field {
	var out []Field
	for i := 0; i < len(props); {
		base, ok := countedBase(props[i].Name, 0)
		k := 1
		for ok && i+k < len(props) && props[i+k].Datatype == props[i].Datatype {
			if b, ok2 := countedBase(props[i+k].Name, k); !ok2 || b != base {
				break
			}
			k++
		}
		if !ok || k < 2 {
			out = append(out, props[i])
			i++
			continue
		}
		f := props[i]
		f.Name, f.Count = base, uint32(k)
		out = append(out, f)
		i += k
	}
	return out
}

// countedBase returns base when name is base_k.
func countedBase(name string, k int) (string, bool) {
	suffix := "_" + strconv.Itoa(k)
	if len(name) > len(suffix) && name[len(name)-len(suffix):] == suffix {
		return name[:len(name)-len(suffix)], true
	}
	return "", false
}
