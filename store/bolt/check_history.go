package bolt

import (
	"encoding/binary"
	"encoding/json"

	"github.com/gardend/gardend/store"
)

// history checks history and alerts: every series belongs to a bed that exists and
// has a distinct id; every chunk to a series, decodes and holds a point; every alert
// to a bed of its garden, listed under its garden (open or closed) and its bed, and
// an open one under what it is about; the index entries have their alerts; every
// guidance record has its garden.
func (c *indexCheck) history() {
	series := map[uint64]bool{}
	c.each(bucketHistorySeries, func(k, v []byte) {
		var r seriesRecord
		if err := json.Unmarshal(v, &r); err != nil || len(k) < 8 {
			c.bad("series %x: undecodable (%v)", k, err)
			return
		}
		if _, ok := c.bedM[btoi(k[:8])]; !ok {
			c.bad("series %d: bed %d does not exist", r.ID, btoi(k[:8]))
		}
		if series[r.ID] {
			c.bad("series id %d used twice", r.ID)
		}
		series[r.ID] = true
	})
	c.each(bucketHistoryPoints, func(k, v []byte) {
		if len(k) != 12 {
			c.bad("history chunk %x: key of %d bytes", k, len(k))
			return
		}
		id, day := btoi(k[:8]), binary.BigEndian.Uint32(k[8:])
		if !series[id] {
			c.bad("history chunk %d/%d: series does not exist", id, day)
		}
		if n, err := store.ChunkLen(day, v); err != nil || n == 0 {
			c.bad("history chunk %d/%d: %d points, %v", id, day, n, err)
		}
	})
	open, listed := 0, 0
	c.each(bucketAlerts, func(k, v []byte) {
		var r alertRecord
		if err := json.Unmarshal(v, &r); err != nil || r.ID != btoi(k) {
			c.bad("alert %d: undecodable or wrong id (%v)", btoi(k), err)
			return
		}
		a := r.alert()
		if b, ok := c.bedM[a.Bed]; !ok || b.Garden != a.Garden {
			c.bad("alert %d: bed %d is not one of garden %d", a.ID, a.Bed, a.Garden)
		}
		listed++
		if !c.has(bucketGardenAlerts, gardenAlertKey(a)) {
			c.bad("alert %d: missing from garden_alerts", a.ID)
		}
		if !c.has(bucketBedAlerts, pairKey(a.Bed, a.ID)) {
			c.bad("alert %d: missing from bed_alerts", a.ID)
		}
		if a.Open() {
			open++
			if v := c.tx.Bucket(bucketAlertsOpen).Get(openAlertKey(a.Bed, a.Plant, a.Kind)); v == nil || btoi(v) != a.ID {
				c.bad("alert %d: open, but not in alerts_open", a.ID)
			}
		}
	})
	for _, b := range []struct {
		name []byte
		want int
	}{{bucketAlertsOpen, open}, {bucketGardenAlerts, listed}, {bucketBedAlerts, listed}} {
		if n := c.tx.Bucket(b.name).Stats().KeyN; n != b.want {
			c.bad("%s holds %d entries, the alerts %d", b.name, n, b.want)
		}
	}
	c.each(bucketGuidance, func(k, _ []byte) {
		if _, ok := c.gardenM[btoi(k)]; !ok {
			c.bad("guidance of garden %d: the garden does not exist", btoi(k))
		}
	})
}
