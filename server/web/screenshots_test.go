package web_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gardend/gardend/server"
)

// TestDocScreenshots writes the tour's screenshots (docs/webapp.md) into the
// directory named by GARDEND_DOC_SCREENSHOTS; without it the test does nothing.
//
//	GARDEND_DOC_SCREENSHOTS=$PWD/docs go test ./server/web -run TestDocScreenshots
func TestDocScreenshots(t *testing.T) {
	dir := os.Getenv("GARDEND_DOC_SCREENSHOTS")
	if dir == "" {
		t.Skip("set GARDEND_DOC_SCREENSHOTS to a directory to write the tour's screenshots")
	}
	b := newBrowser(t)
	d := startDemo(t, 30*time.Millisecond)
	p := b.page(t, d.base, 1024, 600)
	shot := func(pg *page, name string) {
		png, err := chromedp.Run(pg.ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p.do("open the app", chromedp.Navigate(d.base+"/"))
	p.waitFor("the login form", `document.querySelector('input[name=username]')`)
	shot(p, "webapp-login.png")
	p.login(server.DemoUsername, server.DemoPassword)
	p.open("#/c/1/g/1")
	p.waitFor("every plant placed", `document.querySelector('main').dataset.settled === 'true'`)
	bed := demoBeds(t, d)[2]
	p.do("select a bed", chromedp.Click(chromedp.CSS(fmt.Sprintf(`.panel-beds tr[data-key="%d"]`, bed.id))))
	p.waitFor("its plants", `document.querySelector('.panel-plants tbody tr')`)
	p.do("tap a plant", chromedp.Click(chromedp.CSS(`circle.plant.hl`)))
	p.waitFor("the tooltip", `!document.querySelector('.map .tip').hidden`)
	p.eval(`scrollTo(0, 0); true`, nil)
	shot(p, "webapp-garden.png")
	p.open("#/")
	p.waitFor("the thumbnail", `document.querySelector('.garden-card .thumb img')`)
	shot(p, "webapp-home.png")
	p.open(fmt.Sprintf("#/c/1/g/1/b/%d/3d", bed.id))
	p.waitFor("the clouds", `+(document.querySelector('.stage') || {dataset: {}}).dataset.drawn > 0`)
	p.do("pick a plant", chromedp.Click(chromedp.CSS(`.plant-list li:nth-child(2) button`)))
	shot(p, "webapp-3d.png")
	p.open("#/c/1/g/1/admin")
	p.waitFor("the picture", `document.querySelector('.preview-map image')`)
	waitAdminLoaded(p)
	p.eval(`document.querySelector('.preview-map').scrollIntoView(); true`, nil)
	time.Sleep(200 * time.Millisecond)
	shot(p, "webapp-admin.png")
	phone := b.page(t, d.base, 390, 844)
	phone.login(server.DemoUsername, server.DemoPassword)
	phone.open("#/c/1/g/1")
	phone.waitFor("drawn", `document.querySelector('main').dataset.drawn`)
	shot(phone, "webapp-phone.png")
	p.checkClean()
	phone.checkClean()
}
