package alert

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// sink is one configured destination: its queue, its dedupe memory and
// its sender goroutine.
type sink struct {
	n       *Notifier
	name    string
	typ     SinkType
	source  SecretSource
	events  map[string]bool // nil: every event
	render  func(message) ([]byte, error)
	limiter *rate.Limiter // used only by the sender goroutine
	wake    chan struct{} // capacity 1: "the queue may have work"

	mu        sync.Mutex
	queue     []job
	closed    bool
	seq       uint64
	open      map[string]openEntry // dedupe key → what was alerted
	lastSweep time.Time
}

// openEntry remembers an alerted finding until it is resolved, or a
// one-shot event until its window ends.
type openEntry struct {
	seq      uint64
	objKey   string
	pathsKey string
	ev       Event
	expires  time.Time // zero for findings
}

// job is one message waiting to be sent.
type job struct {
	msg message
	key string
	seq uint64 // of the open entry an open message created; 0 for resolved
}

// offer deduplicates ev, whose dedupe key is key, and queues what has to
// be sent.
func (s *sink) offer(ev Event, key string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		s.n.metrics.dropped.WithLabelValues(s.name, ReasonClosed).Inc()
		return
	}
	s.sweep(now)
	if e, ok := s.open[key]; ok && !e.expires.IsZero() && !now.Before(e.expires) {
		delete(s.open, key)
	}
	if !ev.Resolved {
		if _, ok := s.open[key]; ok {
			s.n.metrics.suppressed.WithLabelValues(s.name).Inc()
			return
		}
		s.seq++
		e := openEntry{seq: s.seq, objKey: objectKey(ev), pathsKey: pathsKey(ev), ev: ev}
		if !isFinding(ev.Type) {
			e.expires = now.Add(s.n.opts.OnceWindow)
		}
		s.open[key] = e
		s.push(job{msg: message{sink: s.name, ev: ev, fingerprint: fingerprint(key)}, key: key, seq: e.seq})
		return
	}

	// The exact finding; failing that, the findings on the object with the
	// same field paths (the culprit or class may have been lost by the
	// time the finding cleared); with no fields, every finding of the type
	// on the object.
	var keys []string
	if _, ok := s.open[key]; ok {
		keys = []string{key}
	} else {
		ok, pk := objectKey(ev), pathsKey(ev)
		for k, e := range s.open {
			if e.objKey == ok && (len(ev.Fields) == 0 || e.pathsKey == pk) {
				keys = append(keys, k)
			}
		}
		// In the order they were alerted.
		sort.Slice(keys, func(i, j int) bool { return s.open[keys[i]].seq < s.open[keys[j]].seq })
	}
	if len(keys) == 0 {
		s.n.metrics.suppressed.WithLabelValues(s.name).Inc()
		return
	}
	for _, k := range keys {
		e := s.open[k]
		delete(s.open, k)
		// The resolved message shows what was alerted, when and at which
		// revision it cleared.
		r := e.ev
		r.Resolved = true
		r.Time = ev.Time
		r.Summary = ev.Summary
		if ev.Revision != "" {
			r.Revision = ev.Revision
		}
		s.push(job{msg: message{sink: s.name, ev: r, fingerprint: fingerprint(k)}, key: k})
	}
}

// push queues j, dropping the oldest job when the queue is full. s.mu is
// held.
func (s *sink) push(j job) {
	if len(s.queue) >= s.n.opts.QueueSize {
		old := s.queue[0]
		s.queue = s.queue[1:]
		s.n.metrics.dropped.WithLabelValues(s.name, ReasonQueueFull).Inc()
		s.forgetLocked(old)
	}
	s.queue = append(s.queue, j)
	s.n.metrics.queued.WithLabelValues(s.name).Set(float64(len(s.queue)))
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// forget removes the dedupe entry an unsent open message created, so that
// the next occurrence of the finding is sent again.
func (s *sink) forget(j job) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forgetLocked(j)
}

func (s *sink) forgetLocked(j job) {
	if j.seq == 0 {
		return
	}
	if e, ok := s.open[j.key]; ok && e.seq == j.seq {
		delete(s.open, j.key)
	}
}

// sweep forgets one-shot events whose window has passed, at most once a
// minute. s.mu is held.
func (s *sink) sweep(now time.Time) {
	if now.Sub(s.lastSweep) < time.Minute {
		return
	}
	s.lastSweep = now
	for k, e := range s.open {
		if !e.expires.IsZero() && !now.Before(e.expires) {
			delete(s.open, k)
		}
	}
}

func (s *sink) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// next takes the oldest job; ok is false when the queue is empty, and
// done is true when it is empty and the sink is closed.
func (s *sink) next() (j job, ok, done bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) == 0 {
		return job{}, false, s.closed
	}
	j = s.queue[0]
	s.queue[0] = job{}
	s.queue = s.queue[1:]
	s.n.metrics.queued.WithLabelValues(s.name).Set(float64(len(s.queue)))
	return j, true, false
}

// run sends queued jobs one at a time until the sink is closed and its
// queue empty. When ctx ends, what is left is counted as dropped.
func (s *sink) run(ctx context.Context, wg *sync.WaitGroup) {
	defer wg.Done()
	for {
		j, ok, done := s.next()
		switch {
		case done:
			return
		case !ok:
			select {
			case <-s.wake:
			case <-ctx.Done():
				// Close cancels only after closing the sink; loop to
				// count what is left and see done.
				s.close()
			}
		case ctx.Err() != nil:
			s.drop(j, ReasonShutdown)
		default:
			s.deliver(ctx, j)
		}
	}
}

func (s *sink) drop(j job, reason string) {
	s.n.metrics.dropped.WithLabelValues(s.name, reason).Inc()
	s.forget(j)
}

// credentials reads the sink's URL and, for a webhook sink, its HMAC key,
// and checks them. Errors name the sink and where the value was read
// (a file, a Secret's key), never the URL: it embeds the provider's
// secret.
func (s *sink) credentials(ctx context.Context) (credentials, error) {
	sec, err := s.source.SinkSecrets(ctx)
	if err != nil {
		return credentials{}, fmt.Errorf("alert sink %q: %w", s.name, err)
	}
	raw := string(bytes.TrimSpace(sec.URL))
	if raw == "" {
		return credentials{}, fmt.Errorf("alert sink %q: %s is empty; write the provider's webhook URL into it", s.name, sec.URLFrom)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		// The parse error quotes the URL, so it is not wrapped.
		return credentials{}, fmt.Errorf("alert sink %q: %s does not hold an http(s) URL; write the provider's webhook URL into it", s.name, sec.URLFrom)
	}
	if check := s.n.opts.CheckURL; check != nil {
		if err := check(u); err != nil {
			return credentials{}, fmt.Errorf("alert sink %q: %s: %w", s.name, sec.URLFrom, err)
		}
	}
	c := credentials{url: u, urlFrom: sec.URLFrom}
	if s.typ != SinkWebhook {
		return c, nil
	}
	// Surrounding whitespace (a trailing newline from a mounted Secret)
	// is not part of the key.
	c.key = bytes.TrimSpace(sec.HMACKey)
	if len(c.key) == 0 {
		return credentials{}, fmt.Errorf("alert sink %q: %s is empty; write the shared HMAC key into it", s.name, sec.HMACKeyFrom)
	}
	return c, nil
}

// credentials are a sink's checked URL and HMAC key for one attempt.
type credentials struct {
	url     *url.URL
	urlFrom string // where the URL was read, for errors
	key     []byte // nil unless the sink is a webhook
}

// inherit takes over the findings old alerted and did not resolve (not
// its one-shot events, nor what it has queued), in the order they were
// alerted, so that this sink resolves them when they clear.
func (s *sink) inherit(old *sink) {
	old.mu.Lock()
	entries := make(map[string]openEntry, len(old.open))
	for k, e := range old.open {
		if e.expires.IsZero() {
			entries[k] = e
		}
	}
	old.mu.Unlock()
	keys := make([]string, 0, len(entries))
	for k := range entries {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return entries[keys[i]].seq < entries[keys[j]].seq })
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range keys {
		if _, ok := s.open[k]; ok {
			continue
		}
		e := entries[k]
		s.seq++
		e.seq = s.seq
		s.open[k] = e
	}
}

// resolveApp sends the resolution of every open finding of app of one
// of types (any type when empty), in the order they were alerted, with
// summary, at time at.
func (s *sink) resolveApp(app, summary string, types []string, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	var keys []string
	for k, e := range s.open {
		if e.ev.App == app && e.expires.IsZero() && (len(types) == 0 || slices.Contains(types, e.ev.Type)) {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return s.open[keys[i]].seq < s.open[keys[j]].seq })
	for _, k := range keys {
		r := s.open[k].ev
		delete(s.open, k)
		r.Resolved, r.Time, r.Summary = true, at, summary
		s.push(job{msg: message{sink: s.name, ev: r, fingerprint: fingerprint(k)}, key: k})
	}
}
