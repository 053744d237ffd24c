package server

import (
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/gardend/gardend/store"
)

// The garden logbook (issue 17): records of what was seen, done and harvested, and
// tasks. Who may do what (decisions of the issue, stated in docs/logbook.md and the
// OpenAPI descriptions): anyone with a role on the garden reads its logs and creates
// observations, activities and harvests; authors edit and delete their own; a task's
// assignee may set its status; garden and company admins do everything. Others get
// 404, as for the garden; a reader doing an admin's thing gets 403.

const logPath = "/companies/:company_id/gardens/:garden_id/logs"

func (s *Server) logRoutes() []route {
	return []route{
		{method: "POST", path: logPath, handler: s.handleCreateLog},
		{method: "GET", path: logPath, handler: s.handleListLogs},
		{method: "GET", path: logPath + "/:log_id", handler: s.handleGetLog},
		{method: "PUT", path: logPath + "/:log_id", handler: s.handleUpdateLog},
		{method: "DELETE", path: logPath + "/:log_id", handler: s.handleDeleteLog},
		{method: "GET", path: "/tasks", handler: s.handleMyTasks},
	}
}

// Refusals of the logbook's rules.
var (
	errTaskAdminsOnly   = forbidden("only admins of the garden may create tasks")
	errMakeTask         = forbidden("only admins of the garden may make a log a task")
	errAssignAdminsOnly = forbidden("only admins of the garden may assign tasks")
	errAssigneeStatus   = forbidden("as the task's assignee you may change only its status")
	errNotYourLog       = forbidden("only the log's author or an admin of the garden may change it")
	errNotYourLogDelete = forbidden("only the log's author or an admin of the garden may delete it")
	errNotYourLogPhoto  = forbidden("only the log's author or an admin of the garden may add or delete its photos")
)

// authorizeLog is the rule of who may create or change a log, for a caller with
// role rl on the garden; the store applies it in the writing transaction.
func authorizeLog(me *store.User, rl role) store.LogAuthorizer {
	return func(old *store.Log, next store.Log) error {
		if rl >= roleAdmin {
			return nil
		}
		if old == nil {
			if next.Type == store.LogTask {
				return errTaskAdminsOnly
			}
			return nil
		}
		changed := store.ChangedLogFields(*old, next)
		switch {
		case old.AuthorID == me.ID:
			if next.Type == store.LogTask && old.Type != store.LogTask {
				return errMakeTask
			}
			if slices.Contains(changed, "assignee") {
				return errAssignAdminsOnly
			}
			return nil
		case old.Type == store.LogTask && old.AssigneeID == me.ID:
			if slices.ContainsFunc(changed, func(f string) bool { return f != "status" }) {
				return errAssigneeStatus
			}
			return nil
		}
		return errNotYourLog
	}
}

// authorOrAdmin allows what only a log's author and the garden's admins may do.
func authorOrAdmin(me *store.User, rl role, refusal error) func(store.Log) error {
	return func(l store.Log) error {
		if rl >= roleAdmin || l.AuthorID == me.ID {
			return nil
		}
		return refusal
	}
}

// logFromPath resolves {log_id} of the path's garden for a reader of it.
func (s *Server) logFromPath(r *http.Request) (store.Garden, role, uint64, error) {
	g, rl, err := s.gardenFromPath(r)
	if err != nil {
		return g, rl, 0, err
	}
	id, err := pathID(r, "log_id")
	return g, rl, id, err
}

// logNotFound hides whether a log exists in another garden.
func logNotFound(err error, logID uint64) error {
	return hideMissing(err, "log "+idText(logID)+" not found")
}

func (s *Server) readLogBody(r *http.Request, creating bool) (store.LogPatch, error) {
	if !isJSON(r) {
		return store.LogPatch{}, errNotJSON
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return store.LogPatch{}, jsonError(err)
	}
	if len(body) == 0 {
		return store.LogPatch{}, badRequest("body", "the body is empty; send a JSON object")
	}
	return decodeLogPatch(body, creating)
}

func (s *Server) handleCreateLog(w http.ResponseWriter, r *http.Request) {
	g, rl, err := s.gardenFromPath(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	p, err := s.readLogBody(r, true)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	me := currentUser(r)
	var l store.Log
	created := true
	if key, sent := r.Header[idempotencyKey]; sent {
		// A retry after a lost answer: the log the first try made, not a second one.
		l, created, err = s.store.CreateLogOnce(g.ID, me.ID, strings.Join(key, ","), p, s.logAtHome(authorizeLog(me, rl)))
	} else {
		l, err = s.store.CreateLog(g.ID, me.ID, p, s.logAtHome(authorizeLog(me, rl)))
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/companies/"+idText(g.Company)+"/gardens/"+idText(g.ID)+"/logs/"+idText(l.ID))
	if !created {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	s.writeJSON(w, r, http.StatusCreated, l)
}

// idempotencyKey is the header of a client's key for a POST (as in the IETF draft
// "The Idempotency-Key HTTP Header Field"), canonical form.
const idempotencyKey = "Idempotency-Key"

// logList is a page of logs; Next is the cursor of the next page, null on the last.
type logList struct {
	Logs []store.Log `json:"logs"`
	Next *string     `json:"next"`
}

func (s *Server) handleListLogs(w http.ResponseWriter, r *http.Request) {
	g, _, err := s.gardenFromPath(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	f, names, err := parseLogFilter(r.URL.Query())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	for param, name := range names {
		u, err := s.store.UserByUsername(name)
		if errors.Is(err, store.ErrNotFound) {
			// Nobody of that name wrote or was given a log.
			s.writeJSON(w, r, http.StatusOK, logList{Logs: []store.Log{}})
			return
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if param == "assignee" {
			f.AssigneeID = u.ID
		} else {
			f.AuthorID = u.ID
		}
	}
	page, err := s.store.ListLogs(g.ID, f)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := logList{Logs: page.Logs}
	if page.Next != nil {
		out.Next = new(page.Next.String())
	}
	s.writeJSON(w, r, http.StatusOK, out)
}

func (s *Server) handleGetLog(w http.ResponseWriter, r *http.Request) {
	g, _, id, err := s.logFromPath(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	l, err := s.store.Log(g.ID, id)
	if err != nil {
		s.writeError(w, r, logNotFound(err, id))
		return
	}
	s.writeJSON(w, r, http.StatusOK, l)
}

func (s *Server) handleUpdateLog(w http.ResponseWriter, r *http.Request) {
	g, rl, id, err := s.logFromPath(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	p, err := s.readLogBody(r, false)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	l, err := s.store.UpdateLog(g.ID, id, p, s.logAtHome(authorizeLog(currentUser(r), rl)))
	if err != nil {
		s.writeError(w, r, logNotFound(err, id))
		return
	}
	s.writeJSON(w, r, http.StatusOK, l)
}

func (s *Server) handleDeleteLog(w http.ResponseWriter, r *http.Request) {
	g, rl, id, err := s.logFromPath(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	removed, err := s.store.DeleteLog(g.ID, id, s.logActionAtHome(authorOrAdmin(currentUser(r), rl, errNotYourLogDelete)))
	if err != nil {
		s.writeError(w, r, logNotFound(err, id))
		return
	}
	s.afterRemove(r.Context(), removed)
	writeRawJSON(w, http.StatusOK, []byte("{}"))
}

// handleMyTasks answers the caller's pending tasks (assigned to them) in every garden
// they can read, soonest due first; each carries its company and garden.
func (s *Server) handleMyTasks(w http.ResponseWriter, r *http.Request) {
	me := currentUser(r)
	var visible map[uint64]bool
	if !me.SiteAdmin {
		// The ids only, read a page at a time: a user may see very many gardens.
		visible = map[uint64]bool{}
		for p := (store.Page{Limit: s.cfg.listPageSize()}); ; {
			gs, err := s.store.GardensVisibleToPage(me.ID, p)
			if err != nil {
				s.writeError(w, r, err)
				return
			}
			for _, g := range gs {
				visible[g.ID] = true
			}
			if !p.Full(len(gs)) {
				break
			}
			p.After = gs[len(gs)-1].ID
		}
	}
	tasks, err := s.store.PendingTasks(me.ID, visible)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, struct {
		Tasks []store.Log `json:"tasks"`
	}{tasks})
}
