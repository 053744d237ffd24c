package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gardend/gardend/server/guidance"
	"github.com/gardend/gardend/store"
)

// Alerts (issue 18): what needs attention, with advice, and a task made of it.
// Readers of a garden read its alerts; garden and company admins make tasks of them.

const alertsPath = "/companies/:company_id/gardens/:garden_id/alerts"

func (s *Server) alertRoutes() []route {
	return []route{
		{method: "GET", path: alertsPath, handler: s.handleGardenAlerts},
		{method: "POST", path: alertsPath + "/:alert_id/task", handler: s.handleAlertTask},
		{method: "GET", path: "/alerts", handler: s.handleMyAlerts},
	}
}

var errAlertTaskAdminsOnly = forbidden("only admins of the garden may make a task of an alert")

type adviceJSON struct {
	Title string   `json:"title"`
	Steps []string `json:"steps"`
}

// alertJSON is an alert as the API answers it.
type alertJSON struct {
	ID      uint64          `json:"id"`
	Company uint64          `json:"company"`
	Garden  uint64          `json:"garden"`
	Bed     uint64          `json:"bed"`
	BedName string          `json:"bed_name"`
	Plant   string          `json:"plant,omitempty"`
	Kind    store.AlertKind `json:"kind"`
	// Level is the aspect's level, or the soil humidity.
	Level  float64    `json:"level"`
	Since  time.Time  `json:"since"`
	Closed *time.Time `json:"closed,omitempty"`
	Advice adviceJSON `json:"advice"`
	Task   *uint64    `json:"task,omitempty"`
}

func newAlertJSON(a store.Alert, g store.Guidance) alertJSON {
	adv := guidance.For(g, a.Species, a.Kind)
	return alertJSON{ID: a.ID, Company: a.Company, Garden: a.Garden, Bed: a.Bed, BedName: a.BedName, Plant: a.Plant,
		Kind: a.Kind, Level: a.Level, Since: a.Since, Closed: a.Closed, Advice: adviceJSON(adv), Task: a.Task}
}

type alertList struct {
	Alerts []alertJSON `json:"alerts"`
}

// maxAlertsListed bounds a listing: the most severe alerts, however many a garden
// (or a site admin's every garden) has; X-Total-Count says how many there are.
const maxAlertsListed = 1000

// alertsJSON adds each alert's advice, reading each garden's guidance once.
func (s *Server) alertsJSON(w http.ResponseWriter, as []store.Alert) (alertList, error) {
	w.Header().Set("X-Total-Count", idText(uint64(len(as))))
	if len(as) > maxAlertsListed {
		as = as[:maxAlertsListed]
	}
	out := alertList{Alerts: make([]alertJSON, len(as))}
	docs := map[uint64]store.Guidance{}
	for i, a := range as {
		g, ok := docs[a.Garden]
		if !ok {
			var err error
			if g, err = s.store.Guidance(a.Garden); err != nil {
				if !errors.Is(err, store.ErrNotFound) {
					return out, err
				}
				g = store.DefaultGuidance() // deleted meanwhile
			}
			docs[a.Garden] = g
		}
		out.Alerts[i] = newAlertJSON(a, g)
	}
	return out, nil
}

func (s *Server) handleGardenAlerts(w http.ResponseWriter, r *http.Request) {
	g, _, err := s.gardenFromPath(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	open := true
	switch st := r.URL.Query().Get("state"); st {
	case "", "open":
	case "closed":
		open = false
	default:
		s.writeError(w, r, badRequest("state", fmt.Sprintf("state %q is not one; use open or closed", st)))
		return
	}
	as, err := s.store.Alerts(g.ID, open)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.alertsJSON(w, as)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, out)
}

// handleMyAlerts answers the open alerts of every garden the caller can read, most
// severe first.
func (s *Server) handleMyAlerts(w http.ResponseWriter, r *http.Request) {
	me := currentUser(r)
	var visible map[uint64]bool
	if !me.SiteAdmin {
		gs, err := s.store.GardensVisibleTo(me.ID)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		visible = make(map[uint64]bool, len(gs))
		for _, g := range gs {
			visible[g.ID] = true
		}
	}
	as, err := s.store.OpenAlerts(visible)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.alertsJSON(w, as)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, out)
}

// alertTaskBody is what POST …/alerts/{id}/task may say: whom to assign and when it
// is due.
type alertTaskBody struct {
	Assignee *string
	At       *time.Time
}

func readAlertTaskBody(r *http.Request) (alertTaskBody, error) {
	var out alertTaskBody
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return out, jsonError(err)
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		return out, nil // no body: unassigned, due now
	}
	if !isJSON(r) {
		return out, errNotJSON
	}
	m, ok := object(body)
	if !ok {
		return out, badRequest("body", "the body must be a JSON object: {\"assignee\": \"…\", \"at\": \"…\"}, or empty")
	}
	v := &store.ValidationError{}
	if raw, present := m["assignee"]; present && !isNullJSON(raw) {
		var name string
		if err := json.Unmarshal(raw, &name); err != nil {
			v.Add("assignee", "assignee must be a username (a string)")
		} else if name != "" {
			out.Assignee = &name
		}
	}
	if raw, present := m["at"]; present && !isNullJSON(raw) {
		var at string
		err := json.Unmarshal(raw, &at)
		var t time.Time
		if err == nil {
			t, _, err = parseTimeOrDate(at)
		}
		if err != nil {
			v.Add("at", "at must be an ISO 8601 time or date, like 2026-05-01T07:30:00Z or 2026-05-01: when the task is due")
		} else {
			out.At = &t
		}
	}
	return out, v.OrNil()
}

// alertWhat says what an alert is about, for the task's notes.
func alertWhat(a store.Alert) string {
	var what string
	switch a.Kind {
	case store.AlertSoilHumidity:
		what = "soil humidity " + strconv.FormatFloat(a.Level, 'f', -1, 64)
	default:
		what = string(a.Kind) + " level " + strconv.FormatFloat(a.Level, 'f', -1, 64)
	}
	where := a.BedName
	if where == "" {
		where = "bed " + idText(a.Bed)
	}
	if a.Plant != "" {
		where += ", plant " + a.Plant
	}
	return what + " in " + where + " since " + a.Since.Format("2006-01-02 15:04 UTC")
}

// taskOfAlert is the task log an alert becomes: the advice's title and steps.
func taskOfAlert(a store.Alert, adv store.Advice, body alertTaskBody) store.LogPatch {
	title := adv.Title + " — " + a.BedName
	if a.BedName == "" {
		title = adv.Title + " — bed " + idText(a.Bed)
	}
	if r := []rune(title); len(r) > store.MaxLogTitle {
		title = string(r[:store.MaxLogTitle])
	}
	var notes strings.Builder
	notes.WriteString("The robot measured " + alertWhat(a) + ".\n\nWhat to do:\n")
	for i, step := range adv.Steps {
		fmt.Fprintf(&notes, "%d. %s\n", i+1, step)
	}
	n := notes.String()
	if r := []rune(n); len(r) > store.MaxLogNotes {
		n = string(r[:store.MaxLogNotes])
	}
	typ := store.LogTask
	p := store.LogPatch{Type: &typ, Title: &title, Notes: &n, Bed: &a.Bed, Assignee: body.Assignee, At: body.At}
	if a.Plant != "" {
		p.Plant = &a.Plant
	}
	return p
}

// handleAlertTask makes a task log of an alert (admins): the advice as its notes,
// pointing at the bed or plant, optionally assigned and due at a time; the alert then
// names it. An alert whose task still exists gets no second one.
func (s *Server) handleAlertTask(w http.ResponseWriter, r *http.Request) {
	g, rl, err := s.gardenFromPath(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	id, err := pathID(r, "alert_id")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	a, err := s.store.Alert(g.ID, id)
	if err != nil {
		s.writeError(w, r, hideMissing(err, "alert "+idText(id)+" not found"))
		return
	}
	if rl < roleAdmin {
		s.writeError(w, r, errAlertTaskAdminsOnly)
		return
	}
	if err := s.atHome("garden", g.ID); err != nil {
		// The task is a log of the garden: made at its home only (docs/sync.md).
		s.writeError(w, r, err)
		return
	}
	body, err := readAlertTaskBody(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if a.Task != nil {
		s.writeError(w, r, store.AlertHasTask(a.ID, *a.Task))
		return
	}
	doc, err := s.store.Guidance(g.ID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	me := currentUser(r)
	p := taskOfAlert(a, guidance.For(doc, a.Species, a.Kind), body)
	l, err := s.store.CreateLog(g.ID, me.ID, p, authorizeLog(me, rl))
	var v *store.ValidationError
	if errors.As(err, &v) && v.Fields["plant"] != "" && p.Plant != nil {
		// A plant gardend could not keep an id for is not one a log may name: the
		// task points at its bed, the notes name the plant.
		p.Plant = nil
		l, err = s.store.CreateLog(g.ID, me.ID, p, authorizeLog(me, rl))
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if _, err := s.store.SetAlertTask(g.ID, a.ID, l.ID); err != nil {
		// Another task was made for it meanwhile (or the alert went with its bed):
		// this one goes again, so the alert has one.
		if _, derr := s.store.DeleteLog(g.ID, l.ID, nil); derr != nil {
			s.log.Error().Err(derr).Str("request_id", requestID(r)).Uint64("log_id", l.ID).Msg("delete a task its alert did not take")
		}
		s.writeError(w, r, hideMissing(err, "alert "+idText(id)+" not found"))
		return
	}
	w.Header().Set("Location", "/companies/"+idText(g.Company)+"/gardens/"+idText(g.ID)+"/logs/"+idText(l.ID))
	s.writeJSON(w, r, http.StatusCreated, l)
}
