package bolt

import (
	"bytes"
	"encoding/json"

	"github.com/gardend/gardend/store"
)

// logs checks the logbook: every log belongs to a garden and an author that exist
// (and an assignee, when it has one), is listed under exactly its index terms and,
// when a pending task with an assignee, in log_tasks; every photo belongs to a log of
// its garden and is listed under it, and photo_bytes is their sum; every plant
// identity belongs to a project some bed refers to and has its reverse entry.
func (c *indexCheck) logs() {
	logs := map[uint64]store.ArchivedLog{}
	wantIndex, wantTasks := 0, 0
	c.each(bucketLogs, func(k, v []byte) {
		var a store.ArchivedLog
		if err := json.Unmarshal(v, &a); err != nil || a.ID != btoi(k) {
			c.bad("log %d: undecodable or wrong id (%v)", btoi(k), err)
			return
		}
		logs[a.ID] = a
		if _, ok := c.gardenM[a.Garden]; !ok {
			c.bad("log %d: garden %d does not exist", a.ID, a.Garden)
		}
		if !c.has(bucketUsers, itob(a.AuthorID)) {
			c.bad("log %d: author %d does not exist", a.ID, a.AuthorID)
		}
		if a.AssigneeID != 0 && !c.has(bucketUsers, itob(a.AssigneeID)) {
			c.bad("log %d: assignee %d does not exist", a.ID, a.AssigneeID)
		}
		suffix := logSuffix(a.At, a.ID)
		for _, term := range logTerms(a, a.AssigneeID) {
			wantIndex++
			if !c.has(bucketLogIndex, append(termPrefix(a.Garden, term), suffix...)) {
				c.bad("log %d: missing from log_index under %q", a.ID, term)
			}
		}
		if a.Type == store.LogTask && a.Status == store.LogPending && a.AssigneeID != 0 {
			wantTasks++
			if v := c.tx.Bucket(bucketTasks).Get(taskKey(a.AssigneeID, a.At, a.ID)); !bytes.Equal(v, itob(a.Garden)) {
				c.bad("log %d: missing from log_tasks", a.ID)
			}
		}
	})
	n := 0
	c.each(bucketLogIndex, func(k, _ []byte) {
		n++
		if len(k) < 8+1+16 {
			c.bad("log_index %x: too short", k)
			return
		}
		if a, ok := logs[suffixID(k[len(k)-16:])]; !ok || a.Garden != btoi(k) {
			c.bad("log_index %x: no such log of that garden", k)
		}
	})
	if n != wantIndex {
		c.bad("log_index holds %d entries, the logs %d", n, wantIndex)
	}
	n = 0
	c.each(bucketTasks, func(k, _ []byte) { n++ })
	if n != wantTasks {
		c.bad("log_tasks holds %d entries, the pending assigned tasks are %d", n, wantTasks)
	}

	var sum int64
	photos := map[uint64]store.Photo{}
	c.each(bucketPhotos, func(k, v []byte) {
		var p store.Photo
		if err := json.Unmarshal(v, &p); err != nil || p.ID != btoi(k) {
			c.bad("photo %d: undecodable or wrong id (%v)", btoi(k), err)
			return
		}
		photos[p.ID] = p
		sum += p.Bytes()
		if a, ok := logs[p.Log]; !ok || a.Garden != p.Garden {
			c.bad("photo %d: no log %d of garden %d", p.ID, p.Log, p.Garden)
		}
		if !c.has(bucketLogPhotos, pairKey(p.Log, p.ID)) {
			c.bad("photo %d: missing from log_photos", p.ID)
		}
	})
	c.each(bucketLogPhotos, func(k, _ []byte) {
		if p, ok := photos[btoi(k[8:])]; !ok || p.Log != btoi(k) {
			c.bad("log_photos %d|%d: no such photo of that log", btoi(k), btoi(k[8:]))
		}
	})
	if got := int64(photoBytes(c.tx)); got != sum {
		c.bad("photo_bytes is %d, the photos keep %d", got, sum)
	}

	names := 0
	c.each(bucketPlantIDs, func(k, v []byte) {
		names++
		project, name, ok := bytes.Cut(k, []byte{0})
		if !ok {
			c.bad("plant_ids %q: no project", k)
			return
		}
		if !projectReferenced(c.tx, string(project)) {
			c.bad("plant_ids %q: no bed refers to project %s", k, project)
		}
		if got := c.tx.Bucket(bucketPlantIDNames).Get(cloudKey(string(project), string(v))); !bytes.Equal(got, name) {
			c.bad("plant_ids %q: plant_id_names does not point back", k)
		}
	})
	ids := 0
	c.each(bucketPlantIDNames, func(k, _ []byte) { ids++ })
	if ids != names {
		c.bad("%d plant names, %d plant ids", names, ids)
	}
}
