package web_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"

	"github.com/gardend/gardend/server"
)

// TestAdminListsKeepTheNewestAnswer: the admin page's lists (permissions; beds and
// projects) ask the server when the page opens and again after each change. When the
// first answer (the list before the change) reaches the browser after the change's, it
// must not replace it: the browser holds the first answer (Fetch interception at the
// response stage) until the change's list is shown, then lets it through.
func TestAdminListsKeepTheNewestAnswer(t *testing.T) {
	const lateBed = "0badbed0-0000-4000-8000-00000000000a"
	b := newBrowser(t)
	d := startDemo(t, 0)
	d.api(t, "POST", "/register", map[string]string{"username": "late-helper", "password": "helper-password", "first_name": "L", "last_name": "H"}, 201, nil)
	for _, tc := range []struct {
		name, list, form, value, shown string
	}{
		{"permissions", "*/gardens/1/permissions", "#perm-garden ~ form", "late-helper",
			`[...document.querySelectorAll('#perm-garden ~ .table-wrap tbody tr')].some((r) => r.dataset.key === 'late-helper')`},
		{"beds", "*/gardens/1/spatial-projects", "#beds-admin-h ~ details form", lateBed,
			`[...document.querySelectorAll('#beds-admin-h ~ .table-wrap tbody tr')].some((r) => r.dataset.key === '` + lateBed + `')`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := b.page(t, d.base, 1024, 600) // a tab of its own: interception is per tab
			p.login(server.DemoUsername, server.DemoPassword)
			testAdminListKeepsTheNewestAnswer(t, p, tc.list, tc.form, tc.value, tc.shown)
		})
	}
}

func testAdminListKeepsTheNewestAnswer(t *testing.T, p *page, list, form, value, shown string) {
	ctx, cancel := context.WithTimeout(p.ctx, 90*time.Second)
	defer cancel()
	var tab *chromedp.Target
	p.do("intercept the list", chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		tab = t
		_, err := cdp.Call(ctx, t, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{
			{URLPattern: list, RequestStage: fetch.RequestStageResponse},
		}})
		return err
	}))
	paused := make(chan fetch.EventRequestPaused, 16)
	events := cdp.Events(ctx, tab, fetch.RequestPaused) // subscribed from here on
	go func() {
		for ev, err := range events {
			if err != nil {
				return
			}
			paused <- ev
		}
	}()
	next := func(what string) fetch.EventRequestPaused {
		t.Helper()
		select {
		case ev := <-paused:
			if ev.Request.Method != "GET" {
				t.Fatalf("%s: paused %s %s", what, ev.Request.Method, ev.Request.URL)
			}
			return ev
		case <-ctx.Done():
			p.fatalf("%s: no request for the list", what)
		}
		return fetch.EventRequestPaused{}
	}
	release := func(ev fetch.EventRequestPaused) {
		t.Helper()
		if _, err := cdp.Call(ctx, tab, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID}); err != nil {
			t.Fatalf("let the answer through: %v", err)
		}
	}

	p.open("#/c/1/g/1/admin")
	first := next("the page's first list") // answered before the change; held
	p.waitFor("the form", `document.querySelector(`+jsString(form)+`)`)
	// Typed and submitted by the form itself, not by a click: the page is still
	// growing as its other list comes in.
	p.eval(`(() => { const f = document.querySelector(`+jsString(form)+`); f.querySelector('input').value = `+jsString(value)+`; f.requestSubmit(); return true; })()`, nil)
	release(next("the list after the change"))
	p.waitFor("the change in the list", shown)

	release(first)
	// Either the page took the late answer in (data-loaded: both lists have handled
	// their first answer) or it showed it, and the change is gone from the list.
	p.waitFor("the late answer handled", `document.querySelector('main').dataset.loaded === 'true' || !(`+shown+`)`)
	var ok bool
	p.eval(shown, &ok)
	if !ok {
		p.errorf("the list before the change, answered late, replaced the list after it")
	}
	p.checkClean()
}
