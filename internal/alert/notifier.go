package alert

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"

	"syncd.dev/syncd/internal/alertevent"
	"syncd.dev/syncd/internal/egress"
)

// Options tune a Notifier. The zero value gives the documented defaults.
type Options struct {
	// Client sends the requests; default egress.Client: no overall
	// timeout (Timeout bounds each attempt), never http.DefaultTransport.
	Client *http.Client
	// Timeout bounds one attempt (connect, send, read the answer);
	// default 10s.
	Timeout time.Duration
	// Clock tells the time and waits (rate limit, backoff, Retry-After);
	// default the wall clock.
	Clock clock.Clock
	// Registerer receives the syncd_alerts_* metrics; nil leaves them
	// unregistered. Collectors already registered under the same names are
	// reused, so a Notifier rebuilt after a config reload keeps counting.
	Registerer prometheus.Registerer
	// RateLimit is how many alerts per second each sink sends at most;
	// default 1. rate.Inf turns the limit off.
	RateLimit rate.Limit
	// Burst is how many alerts a sink may send at once before RateLimit
	// applies; default 5.
	Burst int
	// MaxRetries is how many times a failed attempt (HTTP 408, 429, 5xx or
	// a network error) is retried; default 4. A negative value disables
	// retries.
	MaxRetries int
	// Backoff spaces retries; default 1s doubling to at most 1m with 20%
	// jitter. Only Duration, Factor, Jitter and Cap are used.
	Backoff wait.Backoff
	// MaxRetryAfter is the longest Retry-After a sink waits for; an alert
	// asked to wait longer fails with reason rate_limited. Default 5m.
	MaxRetryAfter time.Duration
	// QueueSize is how many alerts wait per sink; when the queue is full
	// the oldest is dropped. Default 256.
	QueueSize int
	// OnceWindow is how long one-shot events (sync, prune, handoff) are
	// remembered for deduplication; default 1h.
	OnceWindow time.Duration
	// ReadFile reads URL and HMAC key files; default os.ReadFile. The
	// files are read again for every attempt, so rotated secrets apply
	// without a restart.
	ReadFile func(name string) ([]byte, error)
	// CheckURL, when set, vets the URL before every attempt (and when
	// the sink is built); an error fails the attempt with reason config.
	// The App controller sets it to the egress rules of addresses a
	// tenant chooses (egress.CheckTenantURL). Its error must not quote
	// the URL's path or query.
	CheckURL func(*url.URL) error
	// ErrorHandler, when set, receives a *SendError for every alert given
	// up on. It is called from the sink's goroutine and must not block.
	ErrorHandler func(error)
}

func (o Options) withDefaults() (Options, error) {
	if o.Client == nil {
		o.Client = egress.Client()
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.ReadFile == nil {
		o.ReadFile = os.ReadFile
	}
	err := errors.Join(
		defaultIfZero("Timeout", &o.Timeout, 10*time.Second),
		defaultIfZero("MaxRetryAfter", &o.MaxRetryAfter, 5*time.Minute),
		defaultIfZero("OnceWindow", &o.OnceWindow, time.Hour),
		defaultIfZero("RateLimit", &o.RateLimit, 1),
		defaultIfZero("Burst", &o.Burst, 5),
		defaultIfZero("QueueSize", &o.QueueSize, 256),
	)
	if err != nil {
		return o, err
	}
	switch {
	case o.MaxRetries < 0:
		o.MaxRetries = 0
	case o.MaxRetries == 0:
		o.MaxRetries = 4
	}
	if o.Backoff.Duration < 0 || o.Backoff.Factor < 0 || o.Backoff.Jitter < 0 || o.Backoff.Cap < 0 {
		return o, fmt.Errorf("alert: Options.Backoff must not hold negative values, got %+v", o.Backoff)
	}
	if o.Backoff.Duration == 0 {
		o.Backoff = wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.2, Cap: time.Minute}
	}
	return o, nil
}

// defaultIfZero refuses a negative option (naming it) and sets an unset
// one to its default.
func defaultIfZero[T ~int64 | ~float64 | ~int](name string, v *T, def T) error {
	switch {
	case *v < 0:
		return fmt.Errorf("alert: Options.%s must not be negative, got %v", name, *v)
	case *v == 0:
		*v = def
	}
	return nil
}

// Notifier sends events to the alert sinks of a config. Each sink has its
// own bounded queue and goroutine, so a slow or unreachable sink never
// delays Notify or the other sinks.
type Notifier struct {
	opts    Options
	metrics *metrics
	sinks   []*sink

	ctx       context.Context // cancelled when Close gives up draining
	cancel    context.CancelFunc
	closeOnce sync.Once
	wg        sync.WaitGroup
}

// New validates alerts, checks that every URL and HMAC key file can be
// read, and starts one sender goroutine per sink. Call Close to stop them.
func New(alerts []Sink, opts Options) (*Notifier, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	n := &Notifier{opts: opts, metrics: m}
	seen := map[string]int{}
	var errs []error
	ctx, cancel := context.WithTimeout(context.Background(), opts.Timeout)
	defer cancel()
	for i, a := range alerts {
		s, err := newSink(ctx, n, a)
		if err == nil {
			if j, dup := seen[a.Name]; dup {
				err = fmt.Errorf("name is already used by alerts[%d]; give each alert its own name", j)
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("alerts[%d] %q: %w", i, a.Name, err))
			continue
		}
		seen[a.Name] = i
		n.sinks = append(n.sinks, s)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	for _, s := range n.sinks {
		n.wg.Add(1)
		go s.run(n.ctx, &n.wg)
	}
	return n, nil
}

// Check validates one sink and reads its URL and key as every message
// does, without starting anything: the App controller's Ready check of
// an AlertProvider. Its errors are New's for that sink.
func Check(ctx context.Context, a Sink, opts Options) error {
	opts, err := opts.withDefaults()
	if err != nil {
		return err
	}
	_, err = newSink(ctx, &Notifier{opts: opts}, a)
	return err
}

var sinkTypes = map[SinkType]func(message) ([]byte, error){
	SinkSlack:   renderSlack,
	SinkMSTeams: renderTeams,
	SinkDiscord: renderDiscord,
	SinkWebhook: renderWebhook,
}

var knownEvents = alertevent.All()

// newSink validates one alert config and builds its sink.
func newSink(ctx context.Context, n *Notifier, a Sink) (*sink, error) {
	if a.Name == "" {
		return nil, errors.New("name is empty; give the alert a name, it labels metrics and errors")
	}
	render, ok := sinkTypes[a.Type]
	if !ok {
		return nil, fmt.Errorf("type %q is not one of slack, msteams, discord, webhook", a.Type)
	}
	source, err := sourceOf(a, n.opts.ReadFile)
	if err != nil {
		return nil, err
	}
	var events map[string]bool
	for _, e := range a.Events {
		if !slices.Contains(knownEvents, e) {
			return nil, fmt.Errorf("events: %q is not one of %s", e, strings.Join(knownEvents, ", "))
		}
		if events == nil {
			events = map[string]bool{}
		}
		events[e] = true
	}
	s := &sink{
		n:       n,
		name:    a.Name,
		typ:     a.Type,
		source:  source,
		events:  events,
		render:  render,
		limiter: rate.NewLimiter(n.opts.RateLimit, n.opts.Burst),
		open:    map[string]openEntry{},
		wake:    make(chan struct{}, 1),
	}
	if _, err := s.credentials(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Notify hands ev to every sink subscribed to its type and returns at
// once: it never waits for the network. The event is redacted (see
// Redact) and deduplicated per sink; when a sink's queue is full its
// oldest alert is dropped and counted. Notify is safe for concurrent use,
// and after Close it only counts the event as dropped.
func (n *Notifier) Notify(ev Event) {
	if ev.Time.IsZero() {
		ev.Time = n.opts.Clock.Now()
	}
	ev = Redact(ev)
	key := dedupeKey(ev)
	now := n.opts.Clock.Now()
	for _, s := range n.sinks {
		if s.events == nil || s.events[ev.Type] {
			s.offer(ev, key, now)
		}
	}
}

// Inherit makes n resolve the findings old alerted and did not resolve:
// for each sink of n, the open findings of old's sink of the same name
// become its own, as if it had sent them. A driver that builds a new
// Notifier when its config changes calls it before the new one is used,
// so that a finding alerted under the old config is resolved, once, when
// it clears. old's queued alerts and one-shot events are not taken
// over; old may be closed. A nil old is no-op.
func (n *Notifier) Inherit(old *Notifier) {
	if old == nil {
		return
	}
	byName := make(map[string]*sink, len(old.sinks))
	for _, s := range old.sinks {
		byName[s.name] = s
	}
	for _, s := range n.sinks {
		if o := byName[s.name]; o != nil {
			s.inherit(o)
		}
	}
}

// ResolveApp resolves the open findings of app in every sink, with
// summary: those of the given event types, or every one without types.
// A driver calls it when nothing else will resolve them one by one: the
// app is gone (its config entry or object was removed), or the trackers
// that would have resolved them were started afresh.
func (n *Notifier) ResolveApp(app, summary string, types ...string) {
	now := n.opts.Clock.Now()
	for _, s := range n.sinks {
		s.resolveApp(app, summary, types, now)
	}
}

// Close stops accepting events and waits until every queued alert has been
// sent or given up on. When ctx ends first, it aborts the attempts under
// way, counts what is left as dropped with reason "shutdown", and returns
// an error wrapping ctx.Err(). Close may be called more than once.
func (n *Notifier) Close(ctx context.Context) error {
	n.closeOnce.Do(func() {
		for _, s := range n.sinks {
			s.close()
		}
	})
	done := make(chan struct{})
	go func() {
		n.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		n.cancel()
		return nil
	case <-ctx.Done():
		n.cancel()
		<-done
		return fmt.Errorf("alert: close: queued alerts not delivered, counted in syncd_alerts_dropped_total{reason=%q}: %w", ReasonShutdown, ctx.Err())
	}
}

// sleep waits d on the Notifier's clock, or until ctx ends.
func (n *Notifier) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := n.opts.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C():
		return nil
	}
}

// Sink is one chat or webhook destination of alerts.
type Sink struct {
	// Name labels the sink's metrics and errors; unique among sinks.
	Name string
	Type SinkType
	// URLFile holds the webhook URL (it embeds a secret for most
	// providers); it is re-read for every send.
	URLFile string
	// HMACKeyFile holds the key that signs SinkWebhook payloads.
	HMACKeyFile string
	// Secrets, when set, supplies the URL and the HMAC key instead of
	// URLFile and HMACKeyFile (which must then be empty): an
	// AlertProvider's Secret. It is read for every attempt, like the
	// files.
	Secrets SecretSource
	// Events limits the sink to these event types; empty: every event.
	Events []string
}

// SinkType is the kind of destination, which decides the payload.
type SinkType string

// Sink types.
const (
	SinkSlack   SinkType = "slack"
	SinkMSTeams SinkType = "msteams"
	SinkDiscord SinkType = "discord"
	SinkWebhook SinkType = "webhook"
)

// Event types (Event.Type), as package alertevent names them.
const (
	EventDrift    = alertevent.Drift
	EventOverlap  = alertevent.Overlap
	EventConflict = alertevent.Conflict
	EventHandoff  = alertevent.Handoff
	EventPrune    = alertevent.Prune
	EventError    = alertevent.Error
	EventSync     = alertevent.Sync
)
