package pointcloud

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"

	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/spatial/cloud"
	"github.com/gardend/gardend/store"
	"github.com/gardend/gardend/store/bolt"
)

// instantSource answers every download at once with the same small cloud.
type instantSource struct{ pc cloud.PointCloud }

func (s instantSource) PointCloud(context.Context, string, string) (cloud.PointCloud, error) {
	return s.pc, nil
}

func (instantSource) Beds(context.Context, []string) <-chan spatial.BedResult { panic("not used") }

// BenchmarkPoolDrain measures the pool's own cost per job (the queue's transactions,
// the PLY file, the position) with downloads that take no time: 200 jobs from
// queueing to an idle queue.
func BenchmarkPoolDrain(b *testing.B) {
	const jobs = 200
	pc := xyzCloud([3]float32{1, 2, 0}, [3]float32{3, 4, 0})
	b.StopTimer()
	for range b.N {
		dir := b.TempDir()
		st, err := bolt.Open(filepath.Join(dir, bolt.FileName), bolt.Options{})
		if err != nil {
			b.Fatal(err)
		}
		u, _ := st.CreateUser(store.NewUser{Username: "ann", FirstName: "A", LastName: "B", PasswordHash: "x"})
		c, _ := st.CreateCompany(u.ID, "Farm")
		g, _ := st.CreateGarden(c.ID, "Garden")
		if _, err := st.CreateBed(g.ID, project, "bed"); err != nil {
			b.Fatal(err)
		}
		queue := make([]store.CloudJob, jobs)
		for i := range queue {
			queue[i] = mapJob(fmt.Sprintf("0b5e8a1c-0000-4000-8000-%012d", i))
		}
		p := NewPool(st, instantSource{pc}, NewFiles(dir, 0, zerolog.Nop()), Config{}, st.Now, zerolog.Nop())
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		b.StartTimer()
		p.Enqueue(queue)
		go func() {
			defer close(done)
			p.Run(ctx)
		}()
		if err := p.WaitIdle(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		cancel()
		<-done
		st.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*jobs), "µs/job")
	b.ReportMetric(0, "ns/op")
}
