package main

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"

	"syncd.dev/syncd/internal/renderproc"
)

// renderLimitFlags are syncd run's limits on each render (see package
// renderproc).
type renderLimitFlags struct {
	memory      sizeFlag
	time        time.Duration
	output      sizeFlag
	concurrency int
}

func (f *renderLimitFlags) register(fs *pflag.FlagSet) {
	f.memory = sizeFlag(renderproc.DefaultMemory)
	f.output = sizeFlag(renderproc.DefaultOutput)
	fs.Var(&f.memory, renderproc.FlagMemory[2:], "memory one render (a Helm chart or kustomization, in a child process) may use before it is killed and its app fails (e.g. 256Mi, 1Gi)")
	fs.DurationVar(&f.time, renderproc.FlagTime[2:], renderproc.DefaultTime, "how long one render may run before it is killed and its app fails")
	fs.Var(&f.output, renderproc.FlagOutput[2:], "largest rendered output (the objects as JSON) one render may return (e.g. 32Mi)")
	fs.IntVar(&f.concurrency, renderproc.FlagConcurrency[2:], renderproc.DefaultConcurrency, "renders run at once (each in its own child process, each up to --render-memory-limit)")
}

// renderer is a Renderer with the flags' limits.
func (f *renderLimitFlags) renderer() (*renderproc.Renderer, error) {
	return renderproc.New(renderproc.Limits{Memory: int64(f.memory), Time: f.time, Output: int64(f.output), Concurrency: f.concurrency})
}

// sizeFlag is a size in bytes written as a Kubernetes quantity (256Mi,
// 1Gi, 500M or a plain number of bytes).
type sizeFlag int64

func (s *sizeFlag) String() string {
	return resource.NewQuantity(int64(*s), resource.BinarySI).String()
}

func (s *sizeFlag) Set(v string) error {
	q, err := resource.ParseQuantity(v)
	if err != nil {
		return fmt.Errorf("%q is not a size: write it as 256Mi, 1Gi or a number of bytes", v)
	}
	if q.Sign() <= 0 {
		return fmt.Errorf("%q: a size must be positive", v)
	}
	*s = sizeFlag(q.Value())
	return nil
}

func (s *sizeFlag) Type() string { return "size" }
