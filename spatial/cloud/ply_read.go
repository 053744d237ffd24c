package cloud

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// MaxPLYData bounds the vertex data ReadPLY accepts (1 GiB, ten times the largest
// message a spatial server sends). Memory also grows only with data actually read, so
// a header that claims billions of vertices costs nothing before the data runs out.
const MaxPLYData = 1 << 30

// Header limits: real headers are a few hundred bytes.
const (
	maxPLYLine   = 4 << 10
	maxPLYHeader = 256 << 10
)

// ErrPLY is wrapped by every error about a malformed or unsupported PLY file.
var ErrPLY = errors.New("bad PLY file")

func plyErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrPLY}, args...)...)
}

type plyFormat int

const (
	plyASCII plyFormat = iota
	plyLittle
	plyBig
)

type plyProperty struct {
	name string
	typ  Datatype
	list bool
}

type plyElement struct {
	name  string
	count uint64
	props []plyProperty
}

// ReadPLY reads a PLY file's vertex element into a one-row PointCloud with packed
// points (Width = vertex count, Height = 1), in the file's byte order; ascii files come
// back little-endian. It reads binary_little_endian, binary_big_endian and ascii 1.0.
// Elements before the vertex element are skipped (list properties only in ascii);
// elements after it are not read. Properties name_0 … name_{k-1} become one field
// with Count k, so ReadPLY undoes WritePLY.
func ReadPLY(r io.Reader) (PointCloud, error) {
	br := bufio.NewReaderSize(r, maxPLYLine)
	format, elems, err := readPLYHeader(br)
	if err != nil {
		return PointCloud{}, err
	}
	var ascii *bufio.Scanner
	if format == plyASCII {
		ascii = bufio.NewScanner(br)
		ascii.Buffer(make([]byte, 0, 512), maxPLYLine)
		ascii.Split(bufio.ScanWords)
	}
	for _, e := range elems {
		if e.name == "vertex" {
			return readVertices(br, ascii, format, e)
		}
		if err := skipElement(br, ascii, e); err != nil {
			return PointCloud{}, err
		}
	}
	return PointCloud{}, plyErrorf("no vertex element")
}

func readPLYHeader(br *bufio.Reader) (plyFormat, []plyElement, error) {
	var (
		format    = plyFormat(-1)
		elems     []plyElement
		headerLen int
	)
	for lineNo := 0; ; lineNo++ {
		line, err := br.ReadSlice('\n')
		headerLen += len(line)
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			return 0, nil, plyErrorf("header line %d longer than %d bytes", lineNo+1, maxPLYLine)
		case err != nil:
			return 0, nil, plyErrorf("header: %v", err)
		case headerLen > maxPLYHeader:
			return 0, nil, plyErrorf("header longer than %d bytes", maxPLYHeader)
		}
		words := strings.Fields(string(line))
		if lineNo == 0 {
			if len(words) != 1 || words[0] != "ply" {
				return 0, nil, plyErrorf("does not start with \"ply\"")
			}
			continue
		}
		if len(words) == 0 {
			continue
		}
		switch words[0] {
		case "comment", "obj_info":
		case "format":
			if len(words) != 3 || words[2] != "1.0" || format != -1 {
				return 0, nil, plyErrorf("bad format line %q", strings.TrimSpace(string(line)))
			}
			switch words[1] {
			case "ascii":
				format = plyASCII
			case "binary_little_endian":
				format = plyLittle
			case "binary_big_endian":
				format = plyBig
			default:
				return 0, nil, plyErrorf("unknown format %q", words[1])
			}
		case "element":
			if len(words) != 3 {
				return 0, nil, plyErrorf("bad element line %q", strings.TrimSpace(string(line)))
			}
			n, err := strconv.ParseUint(words[2], 10, 64)
			if err != nil {
				return 0, nil, plyErrorf("bad element count %q", words[2])
			}
			elems = append(elems, plyElement{name: words[1], count: n})
		case "property":
			if len(elems) == 0 {
				return 0, nil, plyErrorf("property before any element")
			}
			p, err := parseProperty(words)
			if err != nil {
				return 0, nil, err
			}
			e := &elems[len(elems)-1]
			e.props = append(e.props, p)
		case "end_header":
			if format == -1 {
				return 0, nil, plyErrorf("no format line")
			}
			return format, elems, nil
		default:
			return 0, nil, plyErrorf("unknown header keyword %q", words[0])
		}
	}
}

func parseProperty(words []string) (plyProperty, error) {
	if len(words) == 5 && words[1] == "list" {
		if t, ok := plyTypeOf(words[2]); !ok || t == Float32 || t == Float64 {
			return plyProperty{}, plyErrorf("bad list count type %q", words[2])
		}
		if _, ok := plyTypeOf(words[3]); !ok {
			return plyProperty{}, plyErrorf("unknown list item type %q", words[3])
		}
		// List properties are only ever skipped: their names do not matter.
		return plyProperty{name: words[4], list: true}, nil
	}
	if len(words) != 3 {
		return plyProperty{}, plyErrorf("bad property line %q", strings.Join(words, " "))
	}
	t, ok := plyTypeOf(words[1])
	if !ok {
		return plyProperty{}, plyErrorf("unknown property type %q", words[1])
	}
	if !plyName(words[2]) {
		return plyProperty{}, plyErrorf("property name %q is not printable ASCII", words[2])
	}
	return plyProperty{name: words[2], typ: t}, nil
}

// skipElement reads past an element that comes before the vertices.
func skipElement(br *bufio.Reader, ascii *bufio.Scanner, e plyElement) error {
	var size uint64
	for _, p := range e.props {
		if p.list && ascii == nil {
			return plyErrorf("list property %q in element %q before the vertices is not supported", p.name, e.name)
		}
		size += uint64(p.typ.Size())
	}
	if ascii == nil {
		// Counts up to 2^64 and sizes up to 8·props: the product may wrap, so divide.
		if size != 0 && e.count > math.MaxInt64/size {
			return plyErrorf("element %q is too large", e.name)
		}
		if _, err := io.CopyN(io.Discard, br, int64(e.count*size)); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return plyErrorf("element %q: %v", e.name, err)
		}
		return nil
	}
	if len(e.props) == 0 {
		return nil
	}
	for i := uint64(0); i < e.count; i++ {
		for _, p := range e.props {
			tok, err := nextToken(ascii)
			if err != nil {
				return err
			}
			if p.list {
				k, err := strconv.ParseUint(tok, 10, 32)
				if err != nil {
					return plyErrorf("bad list length %q", tok)
				}
				for ; k > 0; k-- {
					if _, err := nextToken(ascii); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

func readVertices(br *bufio.Reader, ascii *bufio.Scanner, format plyFormat, e plyElement) (PointCloud, error) {
	if len(e.props) == 0 {
		return PointCloud{}, plyErrorf("vertex element has no properties")
	}
	props := make([]Field, len(e.props))
	var stride uint64
	for i, p := range e.props {
		if p.list {
			return PointCloud{}, plyErrorf("vertex list property %q is not supported", p.name)
		}
		props[i] = Field{Name: p.name, Offset: uint32(stride), Datatype: p.typ, Count: 1}
		stride += uint64(p.typ.Size())
		if stride > MaxPLYData {
			return PointCloud{}, plyErrorf("vertex has too many properties")
		}
	}
	if e.count > MaxPLYData/stride {
		return PointCloud{}, plyErrorf("%d vertices of %d bytes exceed the limit of %d bytes", e.count, stride, MaxPLYData)
	}
	want := int64(e.count * stride)
	pc := PointCloud{
		Width: uint32(e.count), Height: 1, PointStep: uint32(stride), RowStep: uint32(want),
		Fields: mergeCounted(props), BigEndian: format == plyBig,
	}
	var err error
	if ascii == nil {
		// ReadAll grows with the data that really arrives, never with the claim.
		pc.Data, err = io.ReadAll(io.LimitReader(br, want))
		if err == nil && int64(len(pc.Data)) < want {
			err = plyErrorf("vertex data: %d of %d bytes: %v", len(pc.Data), want, io.ErrUnexpectedEOF)
		}
	} else {
		pc.Data, err = readASCIIVertices(ascii, props, e.count)
	}
	if err != nil {
		return PointCloud{}, err
	}
	return pc, nil
}
