package pngstream

import (
	"bufio"
	"encoding/binary"
	"hash"
	"hash/crc32"
	"io"
)

// source is the PNG's bytes; each reader of it is a stream of its own.
type source struct {
	r    io.ReaderAt
	size int64
}

// readError marks an error of the io.ReaderAt itself (not the end of the data), so
// that it is not mistaken for a problem of the picture.
type readError struct{ err error }

func (e readError) Error() string { return e.err.Error() }
func (e readError) Unwrap() error { return e.err }

// readerAt passes the data through and marks the reader's own errors.
type readerAt struct{ r io.ReaderAt }

func (r readerAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := r.r.ReadAt(p, off)
	if err != nil && err != io.EOF {
		err = readError{err}
	}
	return n, err
}

// streamBuffer is the read-ahead of one stream: large enough for few system calls,
// small enough that seven (an interlaced picture) cost little.
const streamBuffer = 32 << 10

// at starts a stream at off.
func (s *source) at(off int64) *stream {
	sec := io.NewSectionReader(readerAt{s.r}, off, s.size-off)
	return &stream{br: bufio.NewReaderSize(sec, streamBuffer), off: off, crc: crc32.NewIEEE()}
}

// stream reads chunks in order, keeping the CRC of the current one.
type stream struct {
	br  *bufio.Reader
	off int64
	crc hash.Hash32
}

// readFull reads len(p) bytes, as io.ReadFull: never fewer without an error. That is
// how image/png's reads go on a reader that returns all it is asked for, and the zlib
// reader's look-ahead, and so which malformed files are caught, depends on it.
func (s *stream) readFull(p []byte) error {
	n, err := io.ReadFull(s.br, p)
	s.off += int64(n)
	return err
}

// chunkHeader reads a chunk's length and type and starts its CRC.
func (s *stream) chunkHeader() (uint32, string, error) {
	var b [8]byte
	if err := s.readFull(b[:]); err != nil {
		return 0, "", err
	}
	s.crc.Reset()
	s.crc.Write(b[4:8])
	return binary.BigEndian.Uint32(b[:4]), string(b[4:8]), nil
}

// skipChunk reads past a chunk's data, checking its CRC.
func (s *stream) skipChunk(length uint32) error {
	if length > 0x7fffffff {
		return formatError("bad chunk length")
	}
	var buf [4096]byte
	for length > 0 {
		n := min(len(buf), int(length))
		if err := s.readFull(buf[:n]); err != nil {
			return err
		}
		s.crc.Write(buf[:n])
		length -= uint32(n)
	}
	return s.verifyCRC()
}

// verifyCRC reads the chunk's CRC and compares it with the data read.
func (s *stream) verifyCRC() error {
	var b [4]byte
	if err := s.readFull(b[:]); err != nil {
		return err
	}
	if binary.BigEndian.Uint32(b[:]) != s.crc.Sum32() {
		return formatError("invalid checksum")
	}
	return nil
}

// idatReader presents consecutive IDAT chunks as one stream, as image/png's decoder
// does (decoder.Read), read for read: it must not be an io.ByteReader, so that zlib
// reads it through a bufio.Reader of its own exactly as there.
type idatReader struct {
	s      *stream
	length uint32 // left in the current chunk
}

func (d *idatReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for d.length == 0 {
		if err := d.s.verifyCRC(); err != nil {
			return 0, err
		}
		length, typ, err := d.s.chunkHeader()
		if err != nil {
			return 0, err
		}
		if typ != "IDAT" {
			return 0, formatError("not enough pixel data")
		}
		d.length = length
	}
	n := min(len(p), int(d.length))
	if err := d.s.readFull(p[:n]); err != nil {
		return 0, err
	}
	d.s.crc.Write(p[:n])
	d.length -= uint32(n)
	return n, nil
}
