package pointcloud

import (
	"testing"

	"github.com/rs/zerolog"

	"github.com/gardend/gardend/store"
)

// TestPoolComputesPositions: queued jobs flow through the pool into positions and
// kept PLY files, and the queue empties.
func TestPoolComputesPositions(t *testing.T) {
	st := openStore(t)
	src := newHeldSource()
	close(src.release)
	files := NewFiles(t.TempDir(), 0, zerolog.Nop())
	p := NewPool(st, src, files, Config{}, st.Now, zerolog.Nop())
	p.Enqueue([]store.CloudJob{mapJob(cloudA), mapJob(cloudB)})
	startPool(t, p)
	state := drained(t, p, st)
	if len(state.Jobs) != 0 || len(state.Positions) != 2 {
		t.Fatalf("jobs %+v, positions %+v", state.Jobs, state.Positions)
	}
	for _, c := range []string{cloudA, cloudB} {
		if pos := state.Positions[c]; pos.Position == nil || pos.Points != 2 {
			t.Errorf("%s: %+v", c, pos)
		}
		if _, ok := files.Centre(project, c); !ok {
			t.Errorf("%s: no PLY file kept", c)
		}
	}
}
