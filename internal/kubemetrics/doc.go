// Package kubemetrics exports client-go's request metrics as Prometheus
// series of syncd: every request syncd makes to an API server (its own
// and remote clusters'), by status code, method and host; their latency;
// and the time requests waited in the client's rate limiter
// (--kube-qps, --kube-burst).
//
// client-go reports through process-wide hooks (k8s.io/client-go/tools/
// metrics), set once; the series here are process-wide too, and Register
// adds them to a registry (syncd run's /metrics).
package kubemetrics
