package renderproc

import (
	"fmt"
	"time"
)

// Limit names one of a render's limits.
type Limit string

// The limits a render can hit.
const (
	LimitMemory Limit = "memory"
	LimitTime   Limit = "time"
	LimitOutput Limit = "output"
)

// LimitError is a render stopped because it reached a limit.
type LimitError struct {
	Limit Limit
	// Memory, Time or Output is the limit's value.
	Memory int64
	Time   time.Duration
	Output int64
}

// Error says which limit stopped the render and how to raise it.
func (e *LimitError) Error() string {
	switch e.Limit {
	case LimitMemory:
		return fmt.Sprintf("render stopped: it used more than %s of memory (the render memory limit): "+
			"fix the chart or kustomization (a template that loops or recurses without end), or raise %s", mib(e.Memory), FlagMemory)
	case LimitTime:
		return fmt.Sprintf("render stopped: it ran longer than %s (the render time limit): "+
			"fix the chart or kustomization (a template that loops or recurses without end), or raise %s", e.Time, FlagTime)
	default:
		return fmt.Sprintf("render stopped: its output is larger than %s (the render output limit): "+
			"split the app, or raise %s", mib(e.Output), FlagOutput)
	}
}
