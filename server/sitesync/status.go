package sitesync

import (
	"github.com/gardend/gardend/store"
)

// StoreStatus is what a database says of its sync when no server runs on it: the
// change feed's backlog and, at the office, the register of sites; never connected.
func StoreStatus(st store.Backend) (Status, error) {
	fs, err := st.ChangeStats()
	if err != nil {
		return Status{}, err
	}
	out := Status{Role: "box", BacklogRecords: int64(fs.Records), Sites: []SiteInfo{}}
	if fs.Records > 0 {
		t := fs.Oldest
		out.OldestUnsent = &t
	}
	reg, ok := st.(store.SiteStore)
	if !ok {
		cur, err := st.ReplicaCursor(store.OfficeSite)
		if err != nil {
			return Status{}, err
		}
		if fs.On {
			out.Sites = append(out.Sites, SiteInfo{Number: store.OfficeSite, Name: store.OfficeName, Applied: cur})
		}
		return out, nil
	}
	out.Role, out.Site, out.Name = "office", store.OfficeSite, store.OfficeName
	sites, err := reg.Sites()
	if err != nil {
		return Status{}, err
	}
	for _, s := range sites {
		cur, err := st.ReplicaCursor(s.Number)
		if err != nil {
			return Status{}, err
		}
		out.Sites = append(out.Sites, SiteInfo{Number: s.Number, Name: s.Name, Applied: cur, LastContact: s.LastContact,
			BacklogRecords: s.BacklogRecords, BacklogBytes: s.BacklogBytes, OldestUnsent: s.OldestUnsent, Removed: s.Removed != nil})
	}
	return out, nil
}
