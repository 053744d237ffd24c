package cloud

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
)

// The ascii PLY format: whitespace-separated tokens, one value per token, written into
// little-endian packed points.

func nextToken(s *bufio.Scanner) (string, error) {
	if s.Scan() {
		return s.Text(), nil
	}
	if err := s.Err(); err != nil {
		return "", plyErrorf("ascii data: %v", err)
	}
	return "", plyErrorf("ascii data: %v", io.ErrUnexpectedEOF)
}

func readASCIIVertices(s *bufio.Scanner, props []Field, count uint64) ([]byte, error) {
	var data []byte
	var buf [8]byte
	for i := uint64(0); i < count; i++ {
		for _, p := range props {
			tok, err := nextToken(s)
			if err != nil {
				return nil, err
			}
			v, err := parseASCII(tok, p.Datatype)
			if err != nil {
				return nil, plyErrorf("vertex %d property %q: %v", i, p.Name, err)
			}
			put := buf[:p.Datatype.Size()]
			encodeLE(put, p.Datatype, v)
			data = append(data, put...)
		}
	}
	return data, nil
}

// asciiValue holds one parsed ascii value; ints keep full precision.
type asciiValue struct {
	i int64
	u uint64
	f float64
}

func parseASCII(tok string, t Datatype) (asciiValue, error) {
	var v asciiValue
	var err error
	switch t {
	case Int8, Int16, Int32:
		v.i, err = strconv.ParseInt(tok, 10, int(t.Size())*8)
	case Uint8, Uint16, Uint32:
		v.u, err = strconv.ParseUint(tok, 10, int(t.Size())*8)
	case Float32:
		v.f, err = strconv.ParseFloat(tok, 32)
	default:
		v.f, err = strconv.ParseFloat(tok, 64)
	}
	if err != nil {
		return v, fmt.Errorf("bad %s %q", plyTypes[t], tok)
	}
	return v, nil
}

// encodeLE writes v as a little-endian t into b (len(b) == t.Size()).
func encodeLE(b []byte, t Datatype, v asciiValue) {
	var bits uint64
	switch t {
	case Int8, Int16, Int32:
		bits = uint64(v.i)
	case Uint8, Uint16, Uint32:
		bits = v.u
	case Float32:
		bits = uint64(math.Float32bits(float32(v.f)))
	default:
		bits = math.Float64bits(v.f)
	}
	for i := range b {
		b[i] = byte(bits >> (8 * i))
	}
}
