package alert

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// SendError is an alert a sink gave up on. It never holds the sink's URL.
type SendError struct {
	Sink        string
	Type        string // event type
	Fingerprint string
	// Reason is the "reason" label it was counted under in
	// syncd_alerts_failed_total.
	Reason   string
	Attempts int
	Err      error
}

// Error names the sink, the alert and why it was given up on.
func (e *SendError) Error() string {
	return fmt.Sprintf("alert sink %q: %s alert %s not delivered after %d attempt(s) (%s): %s",
		e.Sink, e.Type, e.Fingerprint, e.Attempts, e.Reason, e.Err.Error())
}

// Unwrap returns the last attempt's error.
func (e *SendError) Unwrap() error { return e.Err }

// StatusError is a provider's answer other than 2xx.
type StatusError struct {
	Code int
	// Body is the start of the answer's body, on one line.
	Body string
	// RetryAfter is the wait the provider asked for, if any.
	RetryAfter time.Duration
}

// Error gives the status, the wait asked for and the start of the body.
func (e *StatusError) Error() string {
	s := fmt.Sprintf("provider answered HTTP %d %s", e.Code, http.StatusText(e.Code))
	if e.RetryAfter > 0 {
		s += fmt.Sprintf(", retry after %s", e.RetryAfter)
	}
	if e.Body != "" {
		s += ": " + e.Body
	}
	return s
}

// deliver sends one job: it waits for the rate limiter, then tries, and
// retries what is worth retrying, until success or MaxRetries.
func (s *sink) deliver(ctx context.Context, j job) {
	body, err := s.render(j.msg)
	if err != nil {
		s.fail(j, ReasonRender, 0, fmt.Errorf("render %s payload: %w", s.typ, err))
		return
	}
	now := s.n.opts.Clock.Now()
	if err := s.n.sleep(ctx, s.limiter.ReserveN(now, 1).DelayFrom(now)); err != nil {
		s.drop(j, ReasonShutdown)
		return
	}
	backoff := s.n.opts.Backoff
	backoff.Steps = s.n.opts.MaxRetries + 1
	for attempt := 1; ; attempt++ {
		reason, err := s.attempt(ctx, body)
		if err == nil {
			s.n.metrics.sent.WithLabelValues(s.name, j.msg.ev.Type).Inc()
			return
		}
		if ctx.Err() != nil {
			s.drop(j, ReasonShutdown)
			return
		}
		if reason == ReasonConfig || reason == ReasonHTTP4xx || attempt > s.n.opts.MaxRetries {
			s.fail(j, reason, attempt, err)
			return
		}
		delay := backoff.Step()
		var se *StatusError
		if errors.As(err, &se) && se.RetryAfter > 0 {
			if se.RetryAfter > s.n.opts.MaxRetryAfter {
				s.fail(j, reason, attempt, fmt.Errorf("%w; that is longer than MaxRetryAfter %s", err, s.n.opts.MaxRetryAfter))
				return
			}
			delay = se.RetryAfter
		}
		s.n.metrics.retries.WithLabelValues(s.name, reason).Inc()
		if err := s.n.sleep(ctx, delay); err != nil {
			s.drop(j, ReasonShutdown)
			return
		}
	}
}

func (s *sink) fail(j job, reason string, attempts int, err error) {
	s.n.metrics.failed.WithLabelValues(s.name, reason).Inc()
	s.forget(j)
	if h := s.n.opts.ErrorHandler; h != nil {
		h(&SendError{Sink: s.name, Type: j.msg.ev.Type, Fingerprint: j.msg.fingerprint, Reason: reason, Attempts: attempts, Err: err})
	}
}

// maxErrorBody is how much of a provider's error answer is kept.
const maxErrorBody = 200

// attempt posts body once and classifies the outcome; reason is "" on
// success.
func (s *sink) attempt(ctx context.Context, body []byte) (reason string, err error) {
	cred, err := s.credentials(ctx)
	if err != nil {
		return ReasonConfig, err
	}
	u := cred.url
	actx, cancel := context.WithTimeout(ctx, s.n.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		// The error would quote the URL.
		return ReasonConfig, errors.New("cannot build a request for the URL in " + cred.urlFrom)
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("User-Agent", "syncd-alert/1")
	if cred.key != nil {
		signRequest(req.Header, cred.key, body, s.n.opts.Clock.Now())
	}
	resp, err := s.n.opts.Client.Do(req)
	if err != nil {
		return ReasonNetwork, hideURL(err, u)
	}
	defer resp.Body.Close()
	head, _ := io.ReadAll(io.LimitReader(resp.Body, 4*maxErrorBody))
	// Drain a little more so the connection can be reused.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return "", nil
	}
	se := &StatusError{Code: resp.StatusCode, Body: fit(oneLine(string(head)), maxErrorBody, nil)}
	if se.Body != "" {
		se.Body = hideURL(errors.New(se.Body), u).Error()
	}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		se.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), s.n.opts.Clock.Now())
		return ReasonRateLimited, se
	case resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode >= 500:
		se.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), s.n.opts.Clock.Now())
		return ReasonHTTP5xx, se
	default:
		return ReasonHTTP4xx, se
	}
}

// parseRetryAfter reads a Retry-After header: seconds (Discord sends
// fractions) or an HTTP date. It returns 0 when absent or unreadable.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs <= 0 || secs > float64(1<<31) {
			return 0
		}
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// hideURL returns err without the URL: *url.Error quotes it whole, and the
// path is the provider's secret.
func hideURL(err error, u *url.URL) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = fmt.Errorf("%s: %w", strings.ToLower(ue.Op), ue.Err)
	}
	msg := err.Error()
	secrets := []string{u.String()}
	if len(u.Path) > 1 {
		secrets = append(secrets, u.Path)
	}
	if u.RawQuery != "" {
		secrets = append(secrets, u.RawQuery)
	}
	hidden := msg
	for _, sec := range secrets {
		hidden = strings.ReplaceAll(hidden, sec, "<url>")
	}
	if hidden != msg {
		return errors.New(hidden)
	}
	return err
}
