package export_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gardend/gardend/server/export"
	"github.com/gardend/gardend/store"
)

// TestCSVFormulaAfterBlanksAndQuotes: a spreadsheet that trims blanks or quotes on
// import (LibreOffice's "trim spaces", Sheets) runs " =…" and "\"=…" as formulas, and
// some take the full-width signs of East Asian keyboards for the ASCII ones: every
// such text cell starts with an apostrophe, wherever its text comes from (titles,
// bed names, bed uuids).
func TestCSVFormulaAfterBlanksAndQuotes(t *testing.T) {
	at := time.Date(2026, 4, 30, 7, 0, 0, 0, time.UTC)
	hostile := []string{" =1+1", "  +1", "\u00a0@SUM(A1)", "\u3000-1", `"=1+1`, `' =1`, "\n=1", "＝1+1", "＋1", "－1", "＠x", " \"\t=1"}
	harmless := []string{"Tomatoes", "1 kg", " a=b", "\"quoted\" =", "e-mail"}
	src := &source{}
	for i, title := range append(append([]string{}, hostile...), harmless...) {
		src.logs = append(src.logs, store.Log{ID: uint64(i + 1), Type: store.LogObservation, Title: title, At: at, Status: store.LogDone,
			Author: "ann", Created: at, Updated: at})
	}
	logs := readCSV(t, write(t, "logs.csv", src))
	for i, l := range logs {
		title := append(append([]string{}, hostile...), harmless...)[i]
		want := title
		if i < len(hostile) {
			want = "'" + title
		}
		if l["title"] != want {
			t.Errorf("title %q exported as %q, want %q", title, l["title"], want)
		}
	}
	src.beds = []export.Bed{{Bed: store.Bed{ID: 1, UUID: "-A1-B1"}, Name: " =2+2", Err: "down"}}
	beds := readCSV(t, write(t, "beds.csv", src))
	if beds[0]["uuid"] != "'-A1-B1" || beds[0]["name"] != "' =2+2" {
		t.Errorf("beds.csv %v", beds[0])
	}
	if got := export.Disposition(store.Garden{ID: 2, Name: "a\u202Egpj.exe"}, "logs.csv"); strings.Contains(got, "%E2%80%AE") {
		t.Errorf("a right-to-left override in the file name: %s", got)
	}
}
