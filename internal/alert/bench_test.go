package alert

import (
	"fmt"
	"net/http"
	"testing"
)

// BenchmarkNotify measures what a reconcile pays per event: redaction,
// dedupe and queueing, for four sinks whose provider hangs (so queues stay
// full and every Notify also drops the oldest alert).
func BenchmarkNotify(b *testing.B) {
	rec := newRecorder(b)
	release := make(chan struct{})
	rec.handler = func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		return false
	}
	defer close(release)
	var alerts []Sink
	for _, typ := range []string{string(SinkSlack), string(SinkMSTeams), string(SinkDiscord), string(SinkWebhook)} {
		alerts = append(alerts, testAlert(b, "s-"+typ, SinkType(typ), rec.URL))
	}
	n, err := New(alerts, testOptions(newFakeClock()))
	if err != nil {
		b.Fatal(err)
	}
	evs := make([]Event, 1024)
	for i := range evs {
		evs[i] = driftEvent()
		evs[i].Object.Name = fmt.Sprintf("frontend-%d", i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ev := evs[i%len(evs)]
		n.Notify(ev)
		ev.Resolved = true
		n.Notify(ev)
	}
	b.StopTimer()
	n.cancel()
}

// BenchmarkRender measures building each provider's payload for a typical
// event and for one far over every limit.
func BenchmarkRender(b *testing.B) {
	for _, tc := range []struct {
		name string
		ev   Event
	}{{"typical", driftEvent()}, {"huge", hugeEvent()}} {
		m := message{sink: "s", ev: Redact(tc.ev), fingerprint: fingerprint(dedupeKey(tc.ev))}
		for typ, render := range sinkTypes {
			b.Run(tc.name+"/"+string(typ), func(b *testing.B) {
				b.ReportAllocs()
				var size int
				for i := 0; i < b.N; i++ {
					body, err := render(m)
					if err != nil {
						b.Fatal(err)
					}
					size = len(body)
				}
				b.ReportMetric(float64(size), "bytes/payload")
			})
		}
	}
}
