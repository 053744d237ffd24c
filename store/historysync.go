package store

import (
	"fmt"
	"strings"
	"time"
)

// History, alerts and guidance replicate like the rest of a garden (docs/sync.md).
//
// A box records many points (a reading every few minutes for every plant), so the
// unit of history on the wire is a span of one bed: every series of the bed (its
// own and its plants') over one UTC hour of one day, or over a whole day. A reading
// records a change for each (bed, hour) it adds points to, so the readings of an
// hour coalesce into one message and a day already sent is not sent again as it
// grows; a first snapshot sends whole days. The receiver replaces what it holds of
// the bed in the span with what comes: a span is the whole truth for its time.

// KindHistory is a change of a span of a bed's history (ID: the bed, Ref:
// HistorySpanRef). Alerts change as KindAlert (ID: the alert, Ref: its garden),
// guidance as KindGuidance (ID: the garden, Ref: its company).
const KindHistory = "history"

// WholeDay is the slot of a span that covers its whole day; slots 0–23 are hours.
const WholeDay = 24

// HistorySpanRef is the change Ref of a span: day and slot in one number, below
// 2^40 like any local id.
func HistorySpanRef(day uint32, slot uint8) uint64 { return uint64(day)<<5 | uint64(slot) }

// SpanOfRef reads a change Ref back; ok is false when it names no span.
func SpanOfRef(ref uint64) (day uint32, slot uint8, ok bool) {
	slot = uint8(ref & 31)
	day64 := ref >> 5
	return uint32(day64), slot, slot <= WholeDay && day64 < 1<<32
}

// SpanBounds is the time a span covers: from ≤ t < until.
func SpanBounds(day uint32, slot uint8) (from, until time.Time) {
	from = DayStart(day)
	if slot == WholeDay {
		return from, from.Add(24 * time.Hour)
	}
	from = from.Add(time.Duration(slot) * time.Hour)
	return from, from.Add(time.Hour)
}

// SpanSlot is the hour slot a point of time t falls in.
func SpanSlot(t time.Time) uint8 { return uint8(t.UTC().Hour()) }

// HistorySpan is a bed's history over a span: each series with points in it.
type HistorySpan struct {
	Bed, Garden uint64
	Day         uint32
	Slot        uint8
	Series      []SeriesSpan
}

// SeriesSpan is one series' points in a span.
type SeriesSpan struct {
	// Plant is the plant's kept id; "" for the bed's own series.
	Plant   string
	Species string
	// Name is the bed's name as read (the bed's series).
	Name string
	// Points are the span's points, EncodeChunk of the day.
	Points []byte
}

// Validate checks a span as a replica receives it: the span, plants distinct and
// short, and every series' points decoding, inside the span and in order.
func (s HistorySpan) Validate() error {
	v := &ValidationError{}
	if s.Slot > WholeDay || !InHistoryRange(DayStart(s.Day)) {
		v.Add("span", fmt.Sprintf("a history span is a day between 1970 and 2200 and an hour 0–23 or %d for the whole day", WholeDay))
		return v.OrNil()
	}
	from, until := SpanBounds(s.Day, s.Slot)
	seen := make(map[string]bool, len(s.Series))
	for _, sr := range s.Series {
		switch {
		case len(sr.Plant) > maxPlantKey || strings.ContainsRune(sr.Plant, 0):
			v.Add("plant", fmt.Sprintf("plant id %q must be at most %d bytes without NUL", sr.Plant, maxPlantKey))
		case seen[sr.Plant]:
			v.Add("plant", fmt.Sprintf("plant %q is twice in one span", sr.Plant))
		case len(sr.Species) > maxSpecies || len(sr.Name) > maxSpecies:
			v.Add("plant", fmt.Sprintf("plant %q: species and name must be at most %d bytes", sr.Plant, maxSpecies))
		}
		seen[sr.Plant] = true
		pts, err := DecodeChunk(s.Day, sr.Points)
		if err != nil {
			v.Add("points", fmt.Sprintf("plant %q: %v", sr.Plant, err))
			continue
		}
		for i, p := range pts {
			if p.At.Before(from) || !p.At.Before(until) || i > 0 && !pts[i-1].At.Before(p.At) {
				v.Add("points", fmt.Sprintf("plant %q: points must lie in the span, in order", sr.Plant))
				break
			}
		}
	}
	return v.OrNil()
}

// SpanPoints returns the points of a day's chunk in the span, encoded (nil when
// there are none).
func SpanPoints(day uint32, slot uint8, chunk []byte) ([]byte, error) {
	if slot == WholeDay {
		return chunk, nil
	}
	from, until := SpanBounds(day, slot)
	pts, err := decodeChunkInto(nil, &slab{}, day, chunk, from, until)
	if err != nil || len(pts) == 0 {
		return nil, err
	}
	return EncodeChunk(day, pts), nil
}

// ReplaceSpan returns a day's chunk with its points in the span replaced by
// incoming's (the span's points, encoded): nil when none is left, and the newest
// point of the result.
func ReplaceSpan(day uint32, slot uint8, chunk, incoming []byte) ([]byte, *HistoryPoint, error) {
	from, until := SpanBounds(day, slot)
	old, err := DecodeChunk(day, chunk)
	if err != nil {
		return nil, nil, err
	}
	in, err := DecodeChunk(day, incoming)
	if err != nil {
		return nil, nil, err
	}
	out := make([]HistoryPoint, 0, len(old)+len(in))
	for _, p := range old {
		if p.At.Before(from) {
			out = append(out, p)
		}
	}
	out = append(out, in...)
	for _, p := range old {
		if !p.At.Before(until) {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, nil, nil
	}
	return EncodeChunk(day, out), &out[len(out)-1], nil
}

// HistoryReplication reads what history replicates.
type HistoryReplication interface {
	// HistorySpan returns a bed's series with points in the span; ErrNotFound when
	// the bed is gone.
	HistorySpan(bedID uint64, day uint32, slot uint8) (HistorySpan, error)
}

// ReplicaAlert checks an alert as a replica receives it (as an archive's alert is
// checked) and returns it with its times as an alert keeps them.
func ReplicaAlert(a Alert) (Alert, error) {
	r := ArchivedAlertOf(a)
	if _, err := checkHistoryArchived(&r); err != nil {
		return a, err
	}
	a.Since = HistoryTime(a.Since)
	if a.Closed != nil {
		c := HistoryTime(*a.Closed)
		a.Closed = &c
	}
	return a, nil
}
