package sitesync

import (
	"testing"

	"github.com/nats-io/nats.go"
)

// TestControlMessage: reports and acknowledgments are taken only as themselves. A
// box may aim a JetStream push consumer of the office's users at another site's
// report or acknowledgment subject; those deliveries, and anything with fields a
// report does not have, are not taken for one.
func TestControlMessage(t *testing.T) {
	user := `{"id":1,"username":"agronomist","first_name":"A","last_name":"G","email":"","date_joined":"2026-01-01T00:00:00Z","password_hash":"h"}`
	for _, tc := range []struct {
		name   string
		data   string
		reply  string
		header nats.Header
		ok     bool
	}{
		{name: "a report", data: `{"backlog_records":3,"backlog_bytes":10,"connects":1,"session":"s"}`, ok: true},
		{name: "an office user's record", data: user},
		{name: "a report delivered by a consumer", data: `{"connects":1,"session":"s"}`, reply: "$JS.ACK.GARDEND_OFFICE.x.1.1.1.1.0"},
		{name: "a report with a stream's header", data: `{"connects":1,"session":"s"}`, header: nats.Header{"Nats-Stream": []string{"GARDEND_OFFICE"}}},
		{name: "two reports in one", data: `{"session":"s"}{"session":"t"}`},
		{name: "not JSON", data: `backlog`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r reportMessage
			err := controlMessage(&nats.Msg{Subject: StatusSubject(3), Data: []byte(tc.data), Reply: tc.reply, Header: tc.header}, &r)
			if (err == nil) != tc.ok {
				t.Errorf("controlMessage = %v (%+v), want ok %v", err, r, tc.ok)
			}
		})
	}
}
