package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/spatial/demo"
	"github.com/gardend/gardend/store"
)

// historyOptions are serve's flags of history, its background reader and the demo's
// robot.
type historyOptions struct {
	scanInterval time.Duration
	retention    days
	demoScan     time.Duration
}

func (o *historyOptions) addFlags(f *pflag.FlagSet) {
	f.DurationVar(&o.scanInterval, "scan-interval", server.DefaultScanInterval,
		"how often every registered bed is read in the background for history and alerts, spread over the interval, by one node of a cluster at a time (0: off; beds are then recorded only when someone views them)")
	o.retention = days(store.DefaultHistoryRetention)
	f.Var(&o.retention, "history-retention", "how long history points, and alerts once closed, are kept, e.g. 730d (0: for good)")
	f.DurationVar(&o.demoScan, "demo-scan-interval", demo.DefaultScanInterval,
		"with --demo: how often the simulated robot scans the demo garden, updating every plant's measurement (0: never)")
}

func (o *historyOptions) validate() error {
	switch {
	case o.scanInterval < 0:
		return fmt.Errorf("--scan-interval %v: use 0 (off) or more", o.scanInterval)
	case o.scanInterval > 0 && o.scanInterval < time.Minute:
		return fmt.Errorf("--scan-interval %v: use at least 1m (each bed costs about 70 calls to the spatial server)", o.scanInterval)
	case o.retention < 0:
		return fmt.Errorf("--history-retention %v: use 0 (for good) or more", time.Duration(o.retention))
	case o.retention > 0 && time.Duration(o.retention) < 24*time.Hour:
		return fmt.Errorf("--history-retention %v: use at least 1d", time.Duration(o.retention))
	case o.demoScan < 0:
		return fmt.Errorf("--demo-scan-interval %v: use 0 (never) or more", o.demoScan)
	}
	return nil
}

func (o *historyOptions) apply(c *server.Config) {
	c.History = server.HistoryConfig{
		ScanInterval:     offIfZero(o.scanInterval),
		Retention:        offIfZero(time.Duration(o.retention)),
		DemoScanInterval: offIfZero(o.demoScan),
	}
}

// offIfZero maps a flag's 0 ("off") to the Config's negative (Config's 0 is "the
// default").
func offIfZero(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// days is a duration flag that also takes whole or decimal days: 730d, 1.5d, 36h.
type days time.Duration

func (d *days) String() string {
	v := time.Duration(*d)
	if v%(24*time.Hour) == 0 && v != 0 {
		return strconv.FormatInt(int64(v/(24*time.Hour)), 10) + "d"
	}
	return v.String()
}

func (d *days) Set(s string) error {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		f, err := strconv.ParseFloat(n, 64)
		if err != nil || !(f >= 0 && f <= 100*365) { // NaN fails both
			return fmt.Errorf("%q: use days like 730d, or a duration like 48h", s)
		}
		*d = days(time.Duration(f * float64(24*time.Hour)))
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q: use days like 730d, or a duration like 48h", s)
	}
	*d = days(v)
	return nil
}

func (d *days) Type() string { return "duration" }
