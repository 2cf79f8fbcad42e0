package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/client-go/rest"

	"syncd.dev/syncd/internal/egress"
)

// The client-side limit kept for an API server without Priority and
// Fairness (the former default, and Flux's).
const (
	noAPFQPS   = 50
	noAPFBurst = 100
)

// apfProbeTimeout bounds the one request that asks whether the API server
// has Priority and Fairness.
const apfProbeTimeout = 5 * time.Second

// clientRateLimit is the client-side limit connect chose, and why.
type clientRateLimit struct {
	qps    float32 // negative: none
	burst  int
	reason string
	// probeErr is why the request asking for Priority and Fairness got
	// no answer (nil when it got one, or was not sent).
	probeErr error
}

// rateLimit decides the client-side limit: the one --kube-qps sets, or,
// by default, none when the API server has Priority and Fairness and
// noAPFQPS when it has not (or cannot be asked: a limit is the safe side).
func (k *kubeFlags) rateLimit(cfg *rest.Config) clientRateLimit {
	switch {
	case k.qps < 0:
		return clientRateLimit{qps: -1, reason: "none: --kube-qps is negative"}
	case k.qps > 0:
		return clientRateLimit{qps: k.qps, burst: k.burst, reason: "--kube-qps"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), apfProbeTimeout)
	defer cancel()
	on, err := hasPriorityAndFairness(ctx, cfg)
	switch {
	case err != nil:
		return clientRateLimit{qps: noAPFQPS, burst: k.burst, reason: "could not ask the API server whether it has Priority and Fairness, keeping a limit: " + err.Error(), probeErr: err}
	case !on:
		return clientRateLimit{qps: noAPFQPS, burst: k.burst, reason: "the API server has no Priority and Fairness (no " + flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID + " header), keeping a limit"}
	}
	return clientRateLimit{qps: -1, reason: "none: the API server has Priority and Fairness, which paces syncd's requests"}
}

// hasPriorityAndFairness sends one GET /livez/ping (readable by every
// identity, nothing stored is read) and reports whether the response
// carries the flow schema or priority level headers the API server's
// Priority and Fairness filter sets on every request it classifies,
// whatever the status (the filter runs before authorization).
func hasPriorityAndFairness(ctx context.Context, cfg *rest.Config) (bool, error) {
	c := rest.CopyConfig(cfg)
	c.QPS, c.Burst = -1, 0
	egress.OwnRESTTransport(c) // a plain http:// server too, whoever built cfg
	hc, err := rest.HTTPClientFor(c)
	if err != nil {
		return false, err
	}
	base, _, err := rest.DefaultServerUrlFor(c)
	if err != nil {
		return false, err
	}
	u := base.JoinPath("livez", "ping")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return false, err
	}
	if c.UserAgent != "" {
		req.Header.Set("User-Agent", c.UserAgent)
	}
	resp, err := hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return false, fmt.Errorf("GET %s: %w", u.Redacted(), err)
	}
	defer resp.Body.Close()
	h := resp.Header
	return h.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID) != "" || h.Get(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID) != "", nil
}
