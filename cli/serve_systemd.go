package cli

import (
	"context"
	"time"

	"github.com/rs/zerolog"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/server/sdnotify"
)

// notifySystemd tells systemd (a Type=notify unit) that serve is ready once it
// listens, and that it is stopping when ctx ends. With WatchdogSec= set it sends
// WATCHDOG=1 every half period while the server is alive (its database answers), so
// a hung process is restarted. Outside systemd it does nothing. It returns when ctx
// ends.
func notifySystemd(ctx context.Context, srv *server.Server, log zerolog.Logger) {
	n, err := sdnotify.FromEnv()
	if err != nil {
		log.Warn().Err(err).Msg("systemd notification")
	}
	if n == nil {
		return
	}
	interval, watchdog, err := sdnotify.WatchdogInterval()
	if err != nil {
		log.Warn().Err(err).Msg("systemd watchdog")
	}
	notify := func(states ...string) {
		if err := n.Notify(states...); err != nil {
			log.Warn().Err(err).Strs("states", states).Msg("systemd notification")
		}
	}
	select {
	case <-srv.Ready():
		notify(sdnotify.Ready, "STATUS=listening on "+srv.Addr())
	case <-ctx.Done():
		return
	}
	defer notify(sdnotify.Stopping, "STATUS=shutting down")
	if !watchdog {
		<-ctx.Done()
		return
	}
	t := time.NewTicker(interval / 2)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			check, cancel := context.WithTimeout(ctx, interval/4)
			err := srv.Alive(check)
			cancel()
			if err != nil {
				if ctx.Err() == nil {
					log.Error().Err(err).Msg("not alive: the systemd watchdog is not fed")
				}
				continue
			}
			notify(sdnotify.Watchdog)
		}
	}
}
