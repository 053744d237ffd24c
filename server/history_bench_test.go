package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/store"
)

// BenchmarkReaderPerBed: what the background reader costs per bed of 33 plants, once
// an hour as by default: the spatial client's answers have expired (its cache lives
// 30 s), the robot has scanned again, so every plant has a new measurement to keep.
// Reported per bed: time, the process's CPU time (gardend's and the in-process
// spatial server's), spatial calls and points recorded; "latency-30ms" answers each
// call after 30 ms, as a deployed spatial server does.
func BenchmarkReaderPerBed(b *testing.B) {
	for _, bc := range []struct {
		name    string
		latency time.Duration
	}{{"latency-0", 0}, {"latency-30ms", 30 * time.Millisecond}} {
		b.Run(bc.name, func(b *testing.B) {
			rg := newRobotGarden(b, 21, 6, 33)
			rg.srv.SetLatency(bc.latency)
			clock := &settable{t: time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)}
			g := startGardend(b, server.Config{Now: clock.Now,
				Spatial: spatial.ClientConfig{Addr: rg.srv.Addr(), Now: clock.Now},
				History: server.HistoryConfig{ScanInterval: -1}})
			token := g.register("bench")
			g.gardenWithBeds(token, rg.ds.ProjectUUIDs())
			points := 0
			g.srv.Reader().OnRead(func(_ store.Bed, rec store.Recorded, err error) {
				if err != nil {
					b.Error(err)
				}
				points += rec.Plants + 1
			})
			before, _ := g.srv.SpatialStats()
			calls0 := sumCalls(before.Calls)
			beds := 0
			var cpu time.Duration
			for b.Loop() {
				b.StopTimer()
				clock.Add(time.Hour)
				rg.scan(clock.Now())
				b.StartTimer()
				cpu0 := processCPU()
				if err := g.srv.Reader().ReadAll(context.Background()); err != nil {
					b.Fatal(err)
				}
				cpu += processCPU() - cpu0
				beds += len(rg.ds.Beds)
			}
			after, _ := g.srv.SpatialStats()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(beds), "ns/bed")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(beds), "cpu-ns/bed")
			b.ReportMetric(float64(sumCalls(after.Calls)-calls0)/float64(beds), "calls/bed")
			b.ReportMetric(float64(points)/float64(beds), "points/bed")
		})
	}
}

func sumCalls(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}
