package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/gardend/gardend/server"
)

// TestHistoryFlags: serve's history flags take days or durations, refuse what
// makes no sense naming the flag, and map 0 to "off" in the server's Config.
func TestHistoryFlags(t *testing.T) {
	const day = 24 * time.Hour
	for _, tc := range []struct {
		args      []string
		want      server.HistoryConfig
		wantError string
	}{
		{nil, server.HistoryConfig{ScanInterval: time.Hour, Retention: 730 * day, DemoScanInterval: 10 * time.Minute}, ""},
		{[]string{"--history-retention", "1.5d", "--scan-interval", "90m"}, server.HistoryConfig{ScanInterval: 90 * time.Minute, Retention: 36 * time.Hour, DemoScanInterval: 10 * time.Minute}, ""},
		{[]string{"--history-retention", "8760h", "--scan-interval", "0", "--demo-scan-interval", "0"}, server.HistoryConfig{ScanInterval: -1, Retention: 365 * day, DemoScanInterval: -1}, ""},
		{[]string{"--history-retention", "0"}, server.HistoryConfig{ScanInterval: time.Hour, Retention: -1, DemoScanInterval: 10 * time.Minute}, ""},
		{[]string{"--history-retention", "0d"}, server.HistoryConfig{ScanInterval: time.Hour, Retention: -1, DemoScanInterval: 10 * time.Minute}, ""},
		{[]string{"--history-retention", "two years"}, server.HistoryConfig{}, "history-retention"},
		{[]string{"--history-retention", "NaNd"}, server.HistoryConfig{}, "history-retention"},
		{[]string{"--history-retention", "Infd"}, server.HistoryConfig{}, "history-retention"},
		{[]string{"--history-retention", "-1d"}, server.HistoryConfig{}, "history-retention"},
		{[]string{"--history-retention", "12h"}, server.HistoryConfig{}, "--history-retention 12h0m0s: use at least 1d"},
		{[]string{"--scan-interval", "30s"}, server.HistoryConfig{}, "--scan-interval 30s: use at least 1m"},
		{[]string{"--scan-interval", "-1h"}, server.HistoryConfig{}, "--scan-interval"},
		{[]string{"--demo-scan-interval", "-1m"}, server.HistoryConfig{}, "--demo-scan-interval"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var o historyOptions
			f := pflag.NewFlagSet("serve", pflag.ContinueOnError)
			f.SetOutput(&strings.Builder{})
			o.addFlags(f)
			err := f.Parse(tc.args)
			if err == nil {
				err = o.validate()
			}
			if tc.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantError) {
					t.Fatalf("error %v, want one naming %q", err, tc.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var c server.Config
			o.apply(&c)
			if c.History != tc.want {
				t.Errorf("config %+v, want %+v", c.History, tc.want)
			}
		})
	}
}

// TestDaysString: the default shows as days in --help; other values as durations.
func TestDaysString(t *testing.T) {
	for d, want := range map[days]string{days(730 * 24 * time.Hour): "730d", days(36 * time.Hour): "36h0m0s", 0: "0s"} {
		if got := d.String(); got != want {
			t.Errorf("%v shows as %q, want %q", time.Duration(d), got, want)
		}
	}
}
