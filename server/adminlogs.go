package server

import (
	"context"

	"github.com/gardend/gardend/store"
)

// The logbook's inspections: every garden's logs (the newest inspectLogsPerGarden
// of each) and their photos, for `gardend inspect logs` and `inspect photos`.
type (
	InspectLogs   struct{}
	InspectPhotos struct{}
)

func (InspectLogs) OpName() string   { return "inspect.logs" }
func (InspectPhotos) OpName() string { return "inspect.photos" }

// inspectLogsPerGarden bounds what an inspection reads of one garden.
const inspectLogsPerGarden = 10000

func (InspectLogs) run(_ context.Context, a *Admin, answer func([]store.Log) error) error {
	logs, err := inspectLogs(a.store)
	return once(answer)(logs, err)
}

func (InspectPhotos) run(_ context.Context, a *Admin, answer func([]store.Photo) error) error {
	logs, err := inspectLogs(a.store)
	if err != nil {
		return err
	}
	photos := []store.Photo{}
	for _, l := range logs {
		for _, id := range l.Photos {
			p, err := a.store.Photo(l.Garden, l.ID, id)
			if err != nil {
				return err
			}
			photos = append(photos, p)
		}
	}
	return answer(photos)
}

// inspectLogs reads every garden's newest logs, gardens by id.
func inspectLogs(st store.Backend) ([]store.Log, error) {
	gardens, err := st.Gardens()
	if err != nil {
		return nil, err
	}
	out := []store.Log{}
	for _, g := range gardens {
		f := store.LogFilter{Limit: store.MaxLogPage}
		for n := 0; n < inspectLogsPerGarden; {
			page, err := st.ListLogs(g.ID, f)
			if err != nil {
				return nil, err
			}
			out = append(out, page.Logs...)
			n += len(page.Logs)
			if page.Next == nil {
				break
			}
			f.After = page.Next
		}
	}
	return out, nil
}
