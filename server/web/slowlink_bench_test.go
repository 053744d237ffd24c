package web_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/gardend/gardend/imagestore/pngtest"
	"github.com/gardend/gardend/server"
)

// The slow-link benchmarks measure what a farm worker on a field's mobile link waits
// for: Chromium throttled to 1.6 Mbit/s down and up with 150 ms of latency (DevTools'
// Network.emulateNetworkConditions), against the demo server (30 ms per spatial call,
// its answers and point clouds warm). They use only what any gardend serves, so that
// the same file measures the code before tiles too.
//
//	go test ./server/web -run '^$' -bench SlowLink -benchtime 1x -timeout 60m

const (
	slowLatency    = 150              // ms
	slowThroughput = 1.6e6 / 8        // bytes per second
	slowWait       = 20 * time.Minute // the whole picture over such a link takes minutes
	slowPoll       = 100 * time.Millisecond
)

// netConditions are the parameters of Network.emulateNetworkConditions (deprecated in
// the protocol for …ByRule, which Chromium still maps onto the same throttling).
type netConditions struct {
	Offline            bool    `json:"offline"`
	Latency            float64 `json:"latency"`
	DownloadThroughput float64 `json:"downloadThroughput"`
	UploadThroughput   float64 `json:"uploadThroughput"`
}

var emulateNetworkConditions = cdp.Command[netConditions, cdp.Empty]{Method: "Network.emulateNetworkConditions"}

// throttle turns the slow link on (or off) and empties the browser's cache.
func (p *page) throttle(on bool) {
	p.t.Helper()
	if on {
		p.throttleAt(slowThroughput)
		return
	}
	p.setConditions(netConditions{DownloadThroughput: -1, UploadThroughput: -1})
}

// throttleAt makes the link slowLatency and bytesPerSecond.
func (p *page) throttleAt(bytesPerSecond float64) {
	p.t.Helper()
	p.setConditions(netConditions{Latency: slowLatency, DownloadThroughput: bytesPerSecond, UploadThroughput: bytesPerSecond})
}

func (p *page) setConditions(c netConditions) {
	p.t.Helper()
	p.do("network conditions", chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulateNetworkConditions, c)
		return err
	}))
}

func (p *page) clearCache() {
	p.t.Helper()
	p.do("clear the cache", chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, network.ClearBrowserCache, cdp.Empty{})
		return err
	}))
}

// watchGarden records, in every page the tab loads, when the garden's picture is
// shown and when every plant is drawn (ms from navigation): window.__shown.
func (p *page) watchGarden() {
	p.t.Helper()
	const script = `window.__shown = {};
		new MutationObserver(() => {
			const m = document.querySelector('.map'), main = document.querySelector('main');
			if (m && m.dataset.image === 'shown' && !__shown.picture) __shown.picture = performance.now();
			if (main && main.dataset.drawn && !__shown.drawn) __shown.drawn = performance.now();
		}).observe(document, {subtree: true, childList: true, attributes: true});`
	p.do("watch the garden page", chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, cdppage.AddScriptToEvaluateOnNewDocument, cdppage.AddScriptToEvaluateOnNewDocumentParams{Source: script})
		return err
	}))
}

// loadGarden navigates to the garden page and waits for picture and plants; it
// returns when each was shown (ms from navigation).
func (p *page) loadGarden(tag string) (picture, drawn float64) {
	p.t.Helper()
	p.do("load the garden page", chromedp.Navigate(p.base+"/?load="+tag+"#/c/1/g/1"))
	deadline := time.Now().Add(slowWait)
	for {
		var shown struct{ Picture, Drawn float64 }
		p.eval(`window.__shown || {}`, &shown)
		if shown.Picture > 0 && shown.Drawn > 0 {
			return shown.Picture, shown.Drawn
		}
		if time.Now().After(deadline) {
			p.fatalf("the garden page did not show picture and plants in %s: %+v", slowWait, shown)
		}
		time.Sleep(slowPoll)
	}
}

// warmDemo fills the demo server's spatial cache and point clouds, so that the
// figures are the link's and the browser's.
func warmDemo(b *testing.B, d *demoServer) {
	b.Helper()
	d.api(b, "GET", d.srv.DemoGardenPath()+"/beds", nil, 200, nil)
	for _, bed := range demoBeds(b, d) {
		d.api(b, "GET", d.srv.DemoGardenPath()+"/beds/"+itoa(bed.id)+"/plants", nil, 200, nil)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := d.srv.WaitCloudsIdle(ctx); err != nil {
		b.Fatal(err)
	}
}

func isPicture(u string) bool { return strings.Contains(u, "/image") }

// BenchmarkSlowLinkGarden: the time from navigation to the garden page showing its
// picture and every plant, over the slow link with a cold browser cache, for the
// PlantMap sample's size (2536 × 1731, a photo-like 8.8 MB PNG) and an orthophoto's
// (12,000 × 9,000 with the same grain: 217 MB, so --max-image is raised to 512 MiB);
// also with the cache of the previous visit (warm), and the bytes of pictures the cold
// visit fetched.
func BenchmarkSlowLinkGarden(b *testing.B) {
	for _, pc := range []struct {
		name string
		w, h int
	}{{"2536x1731", 2536, 1731}, {"12000x9000", 12000, 9000}} {
		b.Run(pc.name, func(b *testing.B) {
			d := startDemo(b, 30*time.Millisecond, func(c *server.Config) { c.MaxImageBytes = 512 << 20 })
			garden := d.srv.DemoGardenPath()
			pic := writePicture(b, b.TempDir(), "field.png", pc.w, pc.h, pngtest.Field(pc.w, pc.h, 24, 1, 16, 1))
			uploadPicture(b, d, garden, pic, demoCorners(b, d))
			waitTiled(b, d, garden)
			warmDemo(b, d)
			p := newBrowser(b).page(b, d.base, 1024, 600)
			p.t = b
			p.login(server.DemoUsername, server.DemoPassword)
			p.watchGarden()
			var cold, warm, picBytes, coldPicture, coldDrawn float64
			n := 0
			for b.Loop() {
				n++
				p.clearCache()
				p.received(func(string) bool { return true })
				p.throttle(true)
				pic, drawn := p.loadGarden(fmt.Sprint("cold", n))
				cold += max(pic, drawn)
				coldPicture += pic
				coldDrawn += drawn
				got, _ := p.received(isPicture)
				picBytes += got
				pic, drawn = p.loadGarden(fmt.Sprint("warm", n))
				warm += max(pic, drawn)
				p.throttle(false)
			}
			b.ReportMetric(cold/float64(n), "ms-to-readable-cold")
			b.ReportMetric(coldPicture/float64(n), "ms-to-picture-cold")
			b.ReportMetric(coldDrawn/float64(n), "ms-to-plants-cold")
			b.ReportMetric(warm/float64(n), "ms-to-readable-warm")
			b.ReportMetric(picBytes/float64(n)/1024, "KiB-pictures-cold")
		})
	}
}

// BenchmarkSlowLinkHome: the home page of 10 gardens, each with a photo-like
// 2536 × 1731 picture:
// the bytes of pictures it fetches with a cold cache, and the time until every
// garden's thumbnail is shown, over the slow link.
func BenchmarkSlowLinkHome(b *testing.B) {
	d := startDemo(b, 30*time.Millisecond)
	pic := writePicture(b, b.TempDir(), "field.png", 2536, 1731, pngtest.Field(2536, 1731, 24, 1, 16, 1))
	corners := demoCorners(b, d)
	gardens := []string{d.srv.DemoGardenPath()}
	for i := 2; i <= 10; i++ {
		var g struct{ ID uint64 }
		d.api(b, "POST", "/companies/1/gardens", map[string]string{"name": fmt.Sprint("Garden ", i)}, 201, &g)
		gardens = append(gardens, "/companies/1/gardens/"+itoa(g.ID))
	}
	for _, g := range gardens {
		uploadPicture(b, d, g, pic, corners)
	}
	for _, g := range gardens {
		waitTiled(b, d, g)
	}
	p := newBrowser(b).page(b, d.base, 1024, 2000) // tall: every card in view
	p.t = b
	p.login(server.DemoUsername, server.DemoPassword)
	var ms, kib float64
	n := 0
	for b.Loop() {
		n++
		p.clearCache()
		p.received(func(string) bool { return true })
		p.throttle(true)
		start := time.Now()
		p.do("load the home page", chromedp.Navigate(p.base+"/?home="+itoa(uint64(n))+"#/"))
		deadline := time.Now().Add(slowWait)
		for {
			var shown int
			p.eval(`[...document.querySelectorAll('.garden-card .thumb img')].filter((i) => i.complete && i.naturalWidth > 0).length`, &shown)
			if shown == len(gardens) {
				break
			}
			if time.Now().After(deadline) {
				p.fatalf("%d of %d thumbnails shown after %s", shown, len(gardens), slowWait)
			}
			time.Sleep(slowPoll)
		}
		var nav float64
		p.eval(`performance.now()`, &nav)
		ms += min(nav, float64(time.Since(start).Milliseconds()))
		got, _ := p.received(isPicture)
		kib += got / 1024
		p.throttle(false)
	}
	b.ReportMetric(ms/float64(n), "ms-to-thumbnails")
	b.ReportMetric(kib/float64(n), "KiB-pictures")
}
