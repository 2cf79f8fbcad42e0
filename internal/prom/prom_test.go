package prom_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"syncd.dev/syncd/internal/prom"
)

func TestRegisterSharesAnExistingSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	first := prom.CounterVec("syncd_test_total", "Test series.", "reason")
	if err := prom.Register(reg, &first); err != nil {
		t.Fatalf("first Register: %v", err)
	}
	second := prom.CounterVec("syncd_test_total", "Test series.", "reason")
	if err := prom.Register(reg, &second); err != nil {
		t.Fatalf("second Register: %v", err)
	}
	if second != first {
		t.Fatalf("second Register kept its own collector; want the one registered first")
	}
	second.WithLabelValues("x").Inc()
	if got := testutil.ToFloat64(first.WithLabelValues("x")); got != 1 {
		t.Errorf("first counter = %v after counting through the second, want 1", got)
	}
}

func TestRegisterRefusesAnotherTypeUnderTheSameName(t *testing.T) {
	reg := prometheus.NewRegistry()
	counter := prom.CounterVec("syncd_test", "Test series.", "reason")
	if err := prom.Register(reg, &counter); err != nil {
		t.Fatalf("Register counter: %v", err)
	}
	gauge := prom.GaugeVec("syncd_test", "Test series.", "reason")
	before := gauge
	if err := prom.Register(reg, &gauge); err == nil {
		t.Fatalf("Register of a gauge under a counter's name succeeded; want an error")
	}
	if gauge != before {
		t.Errorf("a failed Register replaced the collector")
	}
}
