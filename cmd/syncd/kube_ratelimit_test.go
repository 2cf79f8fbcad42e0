package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// stubAPIServer answers every request with 200 and, when headers is set,
// the Priority and Fairness headers; it counts the requests.
func stubAPIServer(t *testing.T, headers bool) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if r.URL.Path != "/livez/ping" {
			t.Errorf("rate limit probe sent %s %s, want GET /livez/ping", r.Method, r.URL.Path)
		}
		if headers {
			w.Header().Set(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID, "fs-uid")
			w.Header().Set(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID, "pl-uid")
		}
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func TestKubeRateLimit(t *testing.T) {
	withAPF, withAPFReqs := stubAPIServer(t, true)
	without, withoutReqs := stubAPIServer(t, false)
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	limited := clientRateLimit{qps: noAPFQPS, burst: noAPFBurst}
	none := clientRateLimit{qps: -1}
	tests := map[string]struct {
		cfg  func() *rest.Config
		qps  float32
		want clientRateLimit
		// wantReason is a part of the reason logged.
		wantReason string
		reqs       *atomic.Int32 // requests the probe must send: one
		// unanswered says the probe got no answer (probeErr set), which
		// fails connect.
		unanswered bool
	}{
		"test API server (Priority and Fairness on)": {cfg: func() *rest.Config { return rest.CopyConfig(env.Config) }, want: none, wantReason: "has Priority and Fairness"},
		"stub with the headers":                      {cfg: func() *rest.Config { return &rest.Config{Host: withAPF.URL} }, want: none, wantReason: "has Priority and Fairness", reqs: withAPFReqs},
		"stub without the headers":                   {cfg: func() *rest.Config { return &rest.Config{Host: without.URL} }, want: limited, wantReason: "no Priority and Fairness", reqs: withoutReqs},
		"unreachable server":                         {cfg: func() *rest.Config { return &rest.Config{Host: gone.URL} }, want: limited, wantReason: "could not ask", unanswered: true},
		"--kube-qps 20: no probe":                    {cfg: func() *rest.Config { return &rest.Config{Host: gone.URL} }, qps: 20, want: clientRateLimit{qps: 20, burst: noAPFBurst}, wantReason: "--kube-qps"},
		"--kube-qps -1: no probe":                    {cfg: func() *rest.Config { return &rest.Config{Host: gone.URL} }, qps: -1, want: none, wantReason: "negative"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			k := &kubeFlags{qps: tc.qps, burst: noAPFBurst}
			before := int32(0)
			if tc.reqs != nil {
				before = tc.reqs.Load()
			}
			got := k.rateLimit(tc.cfg())
			if !strings.Contains(got.reason, tc.wantReason) {
				t.Errorf("reason %q, want it to say %q", got.reason, tc.wantReason)
			}
			if (got.probeErr != nil) != tc.unanswered {
				t.Errorf("probe error %v, want one: %v", got.probeErr, tc.unanswered)
			}
			got.reason, got.probeErr = "", nil
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(clientRateLimit{})); diff != "" {
				t.Errorf("rate limit (-want +got):\n%s", diff)
			}
			if tc.reqs != nil {
				if n := tc.reqs.Load() - before; n != 1 {
					t.Errorf("the probe sent %d requests, want 1", n)
				}
			}
		})
	}
}

// TestKubeConnectLogsRateLimit: connect against the test API server turns
// the client-side limiter off and says why in the client log.
func TestKubeConnectLogsRateLimit(t *testing.T) {
	var buf bytes.Buffer
	prev := clientLog
	clientLog = slog.New(slog.NewJSONHandler(&buf, nil))
	t.Cleanup(func() { clientLog = prev })
	k := &kubeFlags{config: kubectlFlags(), burst: noAPFBurst}
	k.config.KubeConfig = &env.Kubeconfig
	cl, err := k.connect()
	if err != nil {
		t.Fatal(err)
	}
	if cl.config.QPS >= 0 {
		t.Errorf("QPS = %v against an API server with Priority and Fairness, want negative (no limiter)", cl.config.QPS)
	}
	var line struct {
		Msg    string  `json:"msg"`
		QPS    float64 `json:"qps"`
		Reason string  `json:"reason"`
	}
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("client log %q is not one JSON line: %v", buf.String(), err)
	}
	if line.Msg != "API server client rate limit" || line.QPS != -1 || !strings.Contains(line.Reason, "Priority and Fairness") {
		t.Errorf("client log line = %+v, want the rate limit decision (qps -1) and its reason", line)
	}
}

// TestRunRoutesKlogToJSON: once the daemon routes client logs, client-go's
// klog lines (InfoS, ErrorS, printf style) come out of syncd's JSON handler
// with their level, message and key/value pairs.
func TestRunRoutesKlogToJSON(t *testing.T) {
	var buf bytes.Buffer
	prev := clientLog
	routeClientLogs(slog.New(slog.NewJSONHandler(&buf, nil)))
	t.Cleanup(func() {
		klog.ClearLogger()
		clientLog = prev
	})
	klog.InfoS("successfully acquired lease", "lease", "syncd-system/syncd")
	klog.ErrorS(errors.New("connection refused"), "failed to list", "reflector", "configmaps")
	klog.Infof("printf style %d", 7)
	klog.Flush()

	var got []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q is not JSON: %v", l, err)
		}
		delete(m, "time")
		got = append(got, m)
	}
	want := []map[string]any{
		{"level": "INFO", "msg": "successfully acquired lease", "lease": "syncd-system/syncd"},
		{"level": "ERROR", "msg": "failed to list", "reflector": "configmaps", "err": "connection refused"},
		{"level": "INFO", "msg": "printf style 7"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("klog lines through syncd's handler (-want +got):\n%s", diff)
	}
}
