package daemon

import (
	"syncd.dev/syncd/internal/alert"
	"syncd.dev/syncd/internal/config"
)

// alertSinks is the config's alerts as the alert stage takes them.
func alertSinks(alerts []config.Alert) []alert.Sink {
	out := make([]alert.Sink, 0, len(alerts))
	for _, a := range alerts {
		out = append(out, alert.Sink{Name: a.Name, Type: alert.SinkType(a.Type), URLFile: a.URLFile, HMACKeyFile: a.HMACKeyFile, Events: a.Events})
	}
	return out
}
