package main

import (
	"fmt"
	"io"
	"log/slog"
	"sync"

	"k8s.io/client-go/rest"
)

// apiWarnings handles the warnings the API server sends with a response
// (a CRD schema's unrecognized format, a deprecated API version): each
// distinct warning is reported once per process, through report, so that
// none reaches stderr raw through client-go's default handler (klog).
type apiWarnings struct {
	mu     sync.Mutex
	seen   map[string]bool
	report func(text string)
}

// HandleWarningHeader reports text the first time it is seen. Only code
// 299 is a warning (RFC 7234); client-go passes no other.
func (w *apiWarnings) HandleWarningHeader(code int, _ string, text string) {
	if code != 299 || text == "" || !w.first(text) {
		return
	}
	w.report(text)
}

// first says whether text was not seen before, and remembers it.
func (w *apiWarnings) first(text string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen[text] {
		return false
	}
	w.seen[text] = true
	return true
}

// printWarnings makes the API server's warnings one "warning:" line each
// on out, the way the one-shot commands print their other warnings.
func printWarnings(out io.Writer) rest.WarningHandler {
	return &apiWarnings{seen: map[string]bool{}, report: func(text string) {
		fmt.Fprintf(out, "warning: API server: %s\n", text)
	}}
}

// logWarnings makes the API server's warnings records of log at level
// warn (the daemon's log).
func logWarnings(log *slog.Logger) rest.WarningHandler {
	return &apiWarnings{seen: map[string]bool{}, report: func(text string) {
		log.Warn("API server warning", "warning", text)
	}}
}
