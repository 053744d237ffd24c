package cloud

import (
	"bufio"
	"io"
)

// Streaming over binary PLY files: what a server does with a kept cloud on every
// request (its centre, its finite points for a viewer) reads the file a chunk at a
// time, so a request costs a few tens of KiB whatever the cloud's size. ReadPLY, which
// holds the whole cloud, is for the clouds a download has in memory anyway.

// streamChunk is about how much vertex data a stream reads at a time.
const streamChunk = 32 << 10

// plyStream reads the vertex element of a binary PLY file chunk by chunk.
type plyStream struct {
	br     *bufio.Reader
	fields []Field // as ReadPLY returns them (counted properties merged)
	sizes  []int   // the size of each property, in file order, for byte swapping
	stride int
	count  uint64
	big    bool
	xyz    xyzLayout // of one vertex
}

// openPLYStream reads the header and whatever comes before the vertex element. The
// vertices need fields x, y and z.
func openPLYStream(r io.Reader) (*plyStream, error) {
	br := bufio.NewReaderSize(r, maxPLYLine)
	format, elems, err := readPLYHeader(br)
	if err != nil {
		return nil, err
	}
	if format == plyASCII {
		return nil, plyErrorf("an ascii PLY file cannot be streamed; only binary ones")
	}
	for _, e := range elems {
		if e.name != "vertex" {
			if err := skipElement(br, nil, e); err != nil {
				return nil, err
			}
			continue
		}
		if len(e.props) == 0 {
			return nil, plyErrorf("vertex element has no properties")
		}
		s := &plyStream{br: br, count: e.count, big: format == plyBig}
		props := make([]Field, len(e.props))
		for i, p := range e.props {
			if p.list {
				return nil, plyErrorf("vertex list property %q is not supported", p.name)
			}
			props[i] = Field{Name: p.name, Offset: uint32(s.stride), Datatype: p.typ, Count: 1}
			s.sizes = append(s.sizes, int(p.typ.Size()))
			s.stride += int(p.typ.Size())
			if s.stride > MaxPLYData {
				return nil, plyErrorf("vertex has too many properties")
			}
		}
		if e.count > uint64(MaxPLYData/s.stride) {
			return nil, plyErrorf("%d vertices of %d bytes exceed the limit of %d bytes", e.count, s.stride, MaxPLYData)
		}
		s.fields = mergeCounted(props)
		one := PointCloud{Width: 1, Height: 1, PointStep: uint32(s.stride), RowStep: uint32(s.stride),
			Fields: s.fields, BigEndian: s.big, Data: make([]byte, s.stride)}
		if s.xyz, err = one.xyzLayout(); err != nil {
			return nil, err
		}
		return s, nil
	}
	return nil, plyErrorf("no vertex element")
}

// newChunk is a buffer for a whole number of vertices, at least one.
func (s *plyStream) newChunk() []byte {
	return make([]byte, max(1, streamChunk/s.stride)*s.stride)
}

// next reads the next vertices into buf (from newChunk) and returns them; none at the
// end. A file that ends early is an error.
func (s *plyStream) next(buf []byte, done *uint64) ([]byte, error) {
	left := s.count - *done
	if left == 0 {
		return nil, nil
	}
	n := min(uint64(len(buf)/s.stride), left)
	chunk := buf[:int(n)*s.stride]
	if _, err := io.ReadFull(s.br, chunk); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, plyErrorf("vertex data after %d of %d vertices: %w", *done, s.count, err)
	}
	*done += n
	return chunk, nil
}

// point decodes one vertex's x, y and z; ok is false unless all three are finite.
func (s *plyStream) point(p []byte) (v [3]float64, ok bool) {
	l := s.xyz
	ok = true
	for k := range v {
		v[k] = decode(p[l.off[k]:], l.typ[k], l.big)
		ok = ok && finite(v[k])
	}
	return v, ok
}

// PLYStats is what one pass over a binary PLY file's vertices tells.
type PLYStats struct {
	// Vertices counts the vertices, Finite those whose x, y and z are all finite.
	Vertices, Finite int64
	// Mean is the mean of the finite vertices, as MeanXYZ computes it; MeanOK is false
	// when there is none (or the mean overflows).
	Mean   [3]float64
	MeanOK bool
	// Plain: the file is little-endian and every vertex is finite, so its vertex data
	// is already what FinitePLY would send.
	Plain bool
}

// StatPLY reads a binary PLY file's vertices (which need fields x, y and z) a chunk at
// a time and reports their counts and mean.
func StatPLY(r io.Reader) (PLYStats, error) {
	s, err := openPLYStream(r)
	if err != nil {
		return PLYStats{}, err
	}
	st := PLYStats{Vertices: int64(s.count)}
	// Offsets from the first point keep the sum exact, as in MeanXYZ.
	var first, sum [3]float64
	buf := s.newChunk()
	for done := uint64(0); ; {
		chunk, err := s.next(buf, &done)
		if err != nil {
			return PLYStats{}, err
		}
		if chunk == nil {
			break
		}
		for i := 0; i < len(chunk); i += s.stride {
			v, ok := s.point(chunk[i : i+s.stride])
			if !ok {
				continue
			}
			if st.Finite == 0 {
				first = v
			}
			for k := range v {
				sum[k] += v[k] - first[k]
			}
			st.Finite++
		}
	}
	if st.Finite > 0 {
		st.MeanOK = true
		for k := range st.Mean {
			st.Mean[k] = first[k] + sum[k]/float64(st.Finite)
			st.MeanOK = st.MeanOK && finite(st.Mean[k])
		}
		if !st.MeanOK {
			st.Mean = [3]float64{}
		}
	}
	st.Plain = !s.big && st.Finite == st.Vertices
	return st, nil
}

// FinitePLY returns a reader of the PLY file ReadPLY, FinitePoints and WritePLY make of
// the binary PLY file r, byte for byte, without holding more than a chunk of it: r's
// vertices whose x, y and z are all finite, little-endian, under a header that counts
// finite of them (StatPLY's Finite, which the header must state before the vertices
// are read). size is the number of bytes the reader yields. Should r hold another
// number of finite vertices (it changed since it was counted), reading fails at the
// point where that shows.
func FinitePLY(r io.Reader, finite int64) (rd io.Reader, size int64, err error) {
	s, err := openPLYStream(r)
	if err != nil {
		return nil, 0, err
	}
	if finite < 0 || uint64(finite) > s.count {
		return nil, 0, plyErrorf("%d finite vertices claimed of %d", finite, s.count)
	}
	head := plyHeader(uint32(finite), 1, s.fields)
	return &finiteReader{s: s, head: head, buf: s.newChunk(), want: finite},
		int64(len(head)) + finite*int64(s.stride), nil
}

// finiteReader is FinitePLY's reader: the header, then each chunk of vertices with
// the non-finite ones squeezed out in place.
type finiteReader struct {
	s    *plyStream
	head []byte
	buf  []byte
	out  []byte // what is left of the last chunk
	done uint64 // vertices read
	want int64
	sent int64 // finite vertices passed on
	err  error
}

func (f *finiteReader) Read(p []byte) (int, error) {
	for {
		switch {
		case len(f.head) > 0:
			n := copy(p, f.head)
			f.head = f.head[n:]
			return n, nil
		case len(f.out) > 0:
			n := copy(p, f.out)
			f.out = f.out[n:]
			return n, nil
		case f.err != nil:
			return 0, f.err
		}
		f.out, f.err = f.fill()
	}
}

// fill reads the next chunk and keeps its finite vertices, converted to little-endian.
func (f *finiteReader) fill() ([]byte, error) {
	s := f.s
	chunk, err := s.next(f.buf, &f.done)
	if err != nil {
		return nil, err
	}
	if chunk == nil {
		if f.sent != f.want {
			return nil, plyErrorf("the file has %d finite vertices, %d were expected: it changed while it was read", f.sent, f.want)
		}
		return nil, io.EOF
	}
	kept := 0
	for i := 0; i < len(chunk); i += s.stride {
		p := chunk[i : i+s.stride]
		if _, ok := s.point(p); !ok {
			continue
		}
		q := chunk[kept : kept+s.stride]
		copy(q, p) // never ahead of p: the copy runs forward within the chunk
		if s.big {
			k := 0
			for _, size := range s.sizes {
				if size > 1 {
					swapEach(q[k:k+size], size)
				}
				k += size
			}
		}
		kept += s.stride
	}
	f.sent += int64(kept / s.stride)
	if f.sent > f.want {
		return nil, plyErrorf("the file has more than the %d finite vertices expected: it changed while it was read", f.want)
	}
	if kept == 0 {
		return chunk[:0], nil
	}
	return chunk[:kept], nil
}
