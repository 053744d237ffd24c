package web_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gardend/gardend/server"
)

// BenchmarkGardenPage measures the time from navigating to the demo garden's page
// (a full page load: the app's assets, then the API) to the page fully drawn: every
// bed line in, every bed's plants fetched and on the map. The demo spatial server
// answers each call after 30 ms, as a real one; every point cloud is already kept, so
// the page draws every plant. "cold": the spatial answer cache is emptied before each
// load; "warm": it holds the previous load's answers. ms-to-drawn is the page's own
// performance mark, from navigation start.
//
//	go test ./server/web -run '^$' -bench GardenPage -benchtime 10x
func BenchmarkGardenPage(b *testing.B) {
	d := startDemo(b, 30*time.Millisecond)
	d.api(b, "GET", d.srv.DemoGardenPath()+"/beds", nil, 200, nil)
	for _, bed := range demoBeds(b, d) {
		d.api(b, "GET", d.srv.DemoGardenPath()+"/beds/"+itoa(bed.id)+"/plants", nil, 200, nil)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := d.srv.WaitCloudsIdle(ctx); err != nil {
		b.Fatal(err)
	}
	br := newBrowser(b)
	p := br.page(b, d.base, 1024, 600)
	p.login(server.DemoUsername, server.DemoPassword)
	for _, cache := range []string{"cold", "warm"} {
		b.Run(cache, func(b *testing.B) {
			p.t = b
			var total float64
			n := 0
			for b.Loop() {
				n++
				if cache == "cold" {
					d.srv.ResetSpatialCache()
				}
				// A new query string makes it a real page load, not a move within the page.
				p.do("load the garden page", chromedp.Navigate(d.base+"/?load="+cache+itoa(uint64(n))+"#/c/1/g/1"))
				p.waitFor("the garden drawn", `document.querySelector('main').dataset.drawn`)
				var ms float64
				p.eval(`performance.getEntriesByName('gardend:garden-drawn')[0].startTime`, &ms)
				total += ms
			}
			b.ReportMetric(total/float64(b.N), "ms-to-drawn")
		})
	}
}

func itoa(v uint64) string {
	var buf [20]byte
	i := len(buf)
	for {
		i--
		buf[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return string(buf[i:])
		}
	}
}
