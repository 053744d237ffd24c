package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// The encoding of history points, shared by both backends. A chunk holds the points
// of one series and one UTC day, oldest first, each:
//
//	uvarint  time since the previous point (the day's start for the first):
//	         seconds<<1 when whole seconds, else microseconds<<1|1
//	byte     which values follow (flag*)
//	number   soil humidity, yield (encodeNumber)
//	varint   harvest weeks
//	uvarint  count of health entries, then each: uvarint aspect code (water 0,
//	         nutrients 1, diseases 2; 3: a name follows as uvarint length and bytes),
//	         varint level
//	uvarint  plants (a bed's)
//
// A point with three health aspects and values of three decimals takes about 16
// bytes.

const (
	flagHumidity = 1 << iota
	flagYield
	flagHarvest
	flagHealth
	flagPlants
	flagsKnown = flagHumidity | flagYield | flagHarvest | flagHealth | flagPlants
)

var healthCodes = []string{"water", "nutrients", "diseases"}

const healthNamed = 3

// maxHealthName bounds an unknown aspect's name kept in a point.
const maxHealthName = 64

// errChunk: stored history that does not decode (corruption).
var errChunk = errors.New("history chunk does not decode")

// AppendValues appends the encoding of v (without a time).
func AppendValues(b []byte, v HistoryValues) []byte {
	var flags byte
	if v.SoilHumidity != nil {
		flags |= flagHumidity
	}
	if v.Yield != nil {
		flags |= flagYield
	}
	if v.HarvestWeeks != nil {
		flags |= flagHarvest
	}
	if len(v.Health) > 0 {
		flags |= flagHealth
	}
	if v.Plants != nil {
		flags |= flagPlants
	}
	b = append(b, flags)
	if v.SoilHumidity != nil {
		b = appendNumber(b, *v.SoilHumidity)
	}
	if v.Yield != nil {
		b = appendNumber(b, *v.Yield)
	}
	if v.HarvestWeeks != nil {
		b = binary.AppendVarint(b, *v.HarvestWeeks)
	}
	if len(v.Health) > 0 {
		b = binary.AppendUvarint(b, uint64(len(v.Health)))
		for _, h := range v.Health {
			if code := slices.Index(healthCodes, h.Type); code >= 0 {
				b = binary.AppendUvarint(b, uint64(code))
			} else {
				name := h.Type
				if len(name) > maxHealthName {
					name = name[:maxHealthName]
				}
				b = binary.AppendUvarint(b, healthNamed)
				b = binary.AppendUvarint(b, uint64(len(name)))
				b = append(b, name...)
			}
			b = binary.AppendVarint(b, h.Level)
		}
	}
	if v.Plants != nil {
		b = binary.AppendVarint(b, *v.Plants)
	}
	return b
}

// appendNumber writes v in thousandths when that is exact (most measurements), as
// zigzag(n)<<1 in a uvarint; else a uvarint 1 and the 8 bytes of the float.
func appendNumber(b []byte, v float64) []byte {
	n := math.Round(v * 1000)
	if math.Abs(n) < 1<<52 && math.Float64bits(n/1000) == math.Float64bits(v) {
		i := int64(n)
		zz := uint64(i<<1) ^ uint64(i>>63)
		return binary.AppendUvarint(b, zz<<1)
	}
	b = binary.AppendUvarint(b, 1)
	return binary.BigEndian.AppendUint64(b, math.Float64bits(v))
}

// decoder reads an encoding, remembering the first error. Values are carved out of
// slabs shared by every point it decodes: a listing of 17,520 points makes a few
// hundred allocations, not five per point.
type decoder struct {
	b   []byte
	err error
	*slab
}

// slab's slices start small and double up to slabSize: decoding one series' values
// or one day's chunk (every recorded point does both) allocated three full slabs,
// about 40 KB, for a few values.
type slab struct {
	floats []float64
	ints   []int64
	health []HealthLevel
}

const (
	firstSlab = 8
	slabSize  = 1024
)

// nextSlab is the capacity of the slab after one of capacity c, with room for n.
func nextSlab(c, n int) int {
	return max(n, min(slabSize, max(firstSlab, 2*c)))
}

func (s *slab) float(v float64) *float64 {
	if len(s.floats) == cap(s.floats) {
		s.floats = make([]float64, 0, nextSlab(cap(s.floats), 1))
	}
	s.floats = append(s.floats, v)
	return &s.floats[len(s.floats)-1]
}

func (s *slab) int(v int64) *int64 {
	if len(s.ints) == cap(s.ints) {
		s.ints = make([]int64, 0, nextSlab(cap(s.ints), 1))
	}
	s.ints = append(s.ints, v)
	return &s.ints[len(s.ints)-1]
}

// levels returns an empty slice with room for n levels of its own: appending to it
// never reaches another point's.
func (s *slab) levels(n int) []HealthLevel {
	if cap(s.health)-len(s.health) < n {
		s.health = make([]HealthLevel, 0, nextSlab(cap(s.health), n))
	}
	start := len(s.health)
	s.health = s.health[:start+n]
	return s.health[start : start : start+n]
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = errChunk
	}
	d.b = nil
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) byte() byte {
	if len(d.b) < 1 {
		d.fail()
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) bytes(n uint64) []byte {
	if uint64(len(d.b)) < n {
		d.fail()
		return nil
	}
	out := d.b[:n]
	d.b = d.b[n:]
	return out
}

func (d *decoder) number() float64 {
	u := d.uvarint()
	if u&1 == 0 {
		zz := u >> 1
		i := int64(zz>>1) ^ -int64(zz&1)
		return float64(i) / 1000
	}
	if u != 1 {
		d.fail()
		return 0
	}
	raw := d.bytes(8)
	if raw == nil {
		return 0
	}
	return math.Float64frombits(binary.BigEndian.Uint64(raw))
}

func (d *decoder) values() HistoryValues {
	var v HistoryValues
	flags := d.byte()
	if flags&^flagsKnown != 0 {
		d.fail()
		return v
	}
	if flags&flagHumidity != 0 {
		v.SoilHumidity = d.float(d.number())
	}
	if flags&flagYield != 0 {
		v.Yield = d.float(d.number())
	}
	if flags&flagHarvest != 0 {
		v.HarvestWeeks = d.int(d.varint())
	}
	if flags&flagHealth != 0 {
		n := d.uvarint()
		if n > uint64(len(d.b)) {
			d.fail()
			return v
		}
		v.Health = d.levels(int(n))
		for range n {
			var h HealthLevel
			code := d.uvarint()
			switch {
			case code < healthNamed:
				h.Type = healthCodes[code]
			case code == healthNamed:
				h.Type = string(d.bytes(d.uvarint()))
			default:
				d.fail()
			}
			h.Level = d.varint()
			if d.err != nil {
				return v
			}
			v.Health = append(v.Health, h)
		}
	}
	if flags&flagPlants != 0 {
		v.Plants = d.int(d.varint())
	}
	return v
}

// DecodeValues reads what AppendValues wrote.
func DecodeValues(b []byte) (HistoryValues, error) {
	d := decoder{b: b, slab: &slab{}}
	v := d.values()
	if d.err == nil && len(d.b) != 0 {
		d.fail()
	}
	return v, d.err
}

// EncodeChunk encodes the points of one day, which must be sorted by At, distinct,
// and within the day.
func EncodeChunk(day uint32, pts []HistoryPoint) []byte {
	b := make([]byte, 0, 16*len(pts))
	prev := DayStart(day).UnixMicro()
	for _, p := range pts {
		at := p.At.UnixMicro()
		delta := uint64(at - prev)
		if delta%1_000_000 == 0 {
			b = binary.AppendUvarint(b, delta/1_000_000<<1)
		} else {
			b = binary.AppendUvarint(b, delta<<1|1)
		}
		prev = at
		b = AppendValues(b, p.HistoryValues)
	}
	return b
}

// DecodeChunk reads the points of one day.
func DecodeChunk(day uint32, data []byte) ([]HistoryPoint, error) {
	return decodeChunkInto(nil, &slab{}, day, data, time.Time{}, maxHistoryTime)
}

// decodeChunkInto appends the chunk's points with from ≤ At < until to out.
func decodeChunkInto(out []HistoryPoint, sl *slab, day uint32, data []byte, from, until time.Time) ([]HistoryPoint, error) {
	d := decoder{b: data, slab: sl}
	start := DayStart(day).UnixMicro()
	at := start
	for len(d.b) > 0 {
		u := d.uvarint()
		if u&1 == 0 {
			at += int64(u>>1) * 1_000_000
		} else {
			at += int64(u >> 1)
		}
		v := d.values()
		if d.err != nil {
			return out, fmt.Errorf("%w (day %d)", d.err, day)
		}
		if at < start || at >= start+microsPerDay {
			return out, fmt.Errorf("%w: a point outside its day %d", errChunk, day)
		}
		t := time.UnixMicro(at).UTC()
		if !t.Before(from) && t.Before(until) {
			out = append(out, HistoryPoint{At: t, HistoryValues: v})
		}
	}
	return out, nil
}

// ChunkReader reads the chunks of a listing, sharing its allocations between them.
// The zero value is ready to use.
type ChunkReader struct{ slab slab }

// Append appends the points of a chunk with from ≤ At < until to out.
func (r *ChunkReader) Append(out []HistoryPoint, day uint32, data []byte, from, until time.Time) ([]HistoryPoint, error) {
	return decodeChunkInto(out, &r.slab, day, data, from, until)
}

// MergeIntoChunk returns the chunk data of day with p added, replacing a point at the
// same instant; p must lie within the day.
func MergeIntoChunk(day uint32, data []byte, p HistoryPoint) ([]byte, error) {
	pts, err := DecodeChunk(day, data)
	if err != nil {
		return nil, err
	}
	i, found := slices.BinarySearchFunc(pts, p.At, func(q HistoryPoint, t time.Time) int { return q.At.Compare(t) })
	if found {
		pts[i] = p
	} else {
		pts = slices.Insert(pts, i, p)
	}
	return EncodeChunk(day, pts), nil
}

// TrimChunk drops the points of a chunk dated before t; it returns the new data (nil
// when no point is left) and how many it dropped.
func TrimChunk(day uint32, data []byte, t time.Time) ([]byte, int, error) {
	pts, err := DecodeChunk(day, data)
	if err != nil {
		return nil, 0, err
	}
	i, _ := slices.BinarySearchFunc(pts, t, func(q HistoryPoint, t time.Time) int { return q.At.Compare(t) })
	if i == 0 {
		return data, 0, nil
	}
	if i == len(pts) {
		return nil, i, nil
	}
	return EncodeChunk(day, pts[i:]), i, nil
}

// ChunkLen counts the points of a chunk.
func ChunkLen(day uint32, data []byte) (int, error) {
	pts, err := DecodeChunk(day, data)
	return len(pts), err
}
