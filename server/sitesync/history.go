package sitesync

import (
	"github.com/gardend/gardend/store"
)

// History, alerts and guidance: the company's records like the rest of a garden,
// written only at their home (docs/sync.md). History travels as spans of a bed
// (store/historysync.go): every series of the bed over one hour (a reading's
// change) or one day (a first snapshot), the points as the store encodes them.

type wireSeriesSpan struct {
	Plant   string `json:"plant"`
	Species string `json:"species,omitempty"`
	Name    string `json:"name,omitempty"`
	// Points are store.EncodeChunk's encoding (base64 in JSON): about 16 bytes a
	// point.
	Points []byte `json:"points"`
}

type wireHistorySpan struct {
	Bed    uint64           `json:"bed"`
	Garden uint64           `json:"garden"`
	Day    uint32           `json:"day"`
	Slot   uint8            `json:"slot"`
	Series []wireSeriesSpan `json:"series"`
}

type wireGuidance struct {
	Garden   uint64         `json:"garden"`
	Company  uint64         `json:"company"`
	Guidance store.Guidance `json:"guidance"`
}

func init() {
	Register(Kind[wireHistorySpan]{
		Name: store.KindHistory,
		Load: func(st store.Backend, bed, ref uint64) (wireHistorySpan, bool, error) {
			day, slot, ok := store.SpanOfRef(ref)
			if !ok {
				return wireHistorySpan{}, false, nil
			}
			sp, err := st.HistorySpan(bed, day, slot)
			if err != nil {
				return found(wireHistorySpan{}, err)
			}
			w := wireHistorySpan{Bed: sp.Bed, Garden: sp.Garden, Day: sp.Day, Slot: sp.Slot, Series: make([]wireSeriesSpan, len(sp.Series))}
			for i, s := range sp.Series {
				w.Series[i] = wireSeriesSpan(s)
			}
			return w, true, nil
		},
		// An hour is part of its day: a burst of readings (a reader catching up, the
		// demo's history) goes as whole days, not hour by hour.
		Coarsen: func(ref uint64) (uint64, bool) {
			day, _, ok := store.SpanOfRef(ref)
			return store.HistorySpanRef(day, store.WholeDay), ok
		},
		IDs:   func(h *wireHistorySpan) []*uint64 { return []*uint64{&h.Bed, &h.Garden} },
		Homes: func(h *wireHistorySpan) []uint64 { return []uint64{h.Bed, h.Garden} },
		Put: func(w store.ReplicaWriter, h wireHistorySpan) error {
			sp := store.HistorySpan{Bed: h.Bed, Garden: h.Garden, Day: h.Day, Slot: h.Slot, Series: make([]store.SeriesSpan, len(h.Series))}
			for i, s := range h.Series {
				sp.Series[i] = store.SeriesSpan(s)
			}
			return w.PutHistorySpan(sp)
		},
		// History goes with its bed; days trimmed at the home stay here until this
		// site's own retention drops them (docs/sync.md).
	})
	Register(Kind[store.ArchivedAlert]{
		Name: store.KindAlert,
		Load: func(st store.Backend, id, garden uint64) (store.ArchivedAlert, bool, error) {
			a, err := st.Alert(garden, id)
			return found(store.ArchivedAlertOf(a), err)
		},
		IDs: func(a *store.ArchivedAlert) []*uint64 {
			ids := []*uint64{&a.ID, &a.Garden, &a.Bed}
			if a.Task != nil {
				ids = append(ids, a.Task)
			}
			return ids
		},
		Homes: func(a *store.ArchivedAlert) []uint64 {
			homes := []uint64{a.ID, a.Garden, a.Bed}
			if a.Task != nil {
				homes = append(homes, *a.Task)
			}
			return homes
		},
		Put: func(w store.ReplicaWriter, a store.ArchivedAlert) error { return w.PutAlert(a.Alert()) },
		// Alerts go with their bed.
	})
	Register(Kind[wireGuidance]{
		Name: store.KindGuidance,
		Load: func(st store.Backend, garden, company uint64) (wireGuidance, bool, error) {
			g, err := st.Guidance(garden)
			return found(wireGuidance{Garden: garden, Company: company, Guidance: g}, err)
		},
		IDs:   func(g *wireGuidance) []*uint64 { return []*uint64{&g.Garden, &g.Company} },
		Homes: func(g *wireGuidance) []uint64 { return []uint64{g.Garden, g.Company} },
		Put:   func(w store.ReplicaWriter, g wireGuidance) error { return w.PutGuidance(g.Garden, g.Guidance) },
		// Guidance goes with its garden.
	})
}
