package redact_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"syncd.dev/syncd/internal/alert"
	"syncd.dev/syncd/internal/redact"
	"syncd.dev/syncd/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, testenv.Options{}, &env) }

// TestServerErrorsScrubbed triggers, on the real API server, errors that
// echo a Secret's or a sensitive field's value, and checks that every
// output an error reaches (command output, /status, Events, alerts, logs)
// keeps the field and the reason but not the value.
func TestServerErrorsScrubbed(t *testing.T) {
	ns := env.Namespace(t)
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	secrets := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).Namespace(ns)
	jobs := dyn.Resource(schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}).Namespace(ns)
	ctx := context.Background()
	apply := func(r dynamic.ResourceInterface, doc string) error {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON([]byte(doc)); err != nil {
			t.Fatal(err)
		}
		_, err := r.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: "syncd-test"})
		return err
	}
	job := `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j"},"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox","env":[{"name":"PASSWORD","value":"%s"}]}]}}}}`
	if err := apply(jobs, strings.Replace(job, "%s", "job-env-first", 1)); err != nil {
		t.Fatal(err)
	}
	if err := apply(secrets, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"type":"Opaque"}`); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		do     func() error
		values []string
		keep   []string // field paths and reasons that stay
	}{
		"an Invalid Secret: a bad data key and a changed (immutable) type": {
			do: func() error {
				return apply(secrets, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"type":"example.com/type-s3cr3t","stringData":{"bad key!":"stringdata-s3cr3t-value"}}`)
			},
			values: []string{"stringdata-s3cr3t-value", "type-s3cr3t"},
			keep:   []string{"Invalid value", "data[bad key!]", "type", "immutable"},
		},
		"a Job whose template changes (immutable) with an env value": {
			do: func() error {
				return apply(jobs, strings.Replace(job, "%s", "job-env-s3cr3t-second", 1))
			},
			values: []string{"job-env-s3cr3t-second", "job-env-first"},
			keep:   []string{"spec.template", "immutable"},
		},
		"a structured-merge-diff type error from a wrongly typed Secret field": {
			do: func() error {
				return apply(secrets, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"t"},"stringData":{"token":{"nested":"typed-s3cr3t-value"}}}`)
			},
			values: []string{"typed-s3cr3t-value"},
			keep:   []string{".stringData.token", "expected string"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := tc.do()
			if err == nil {
				t.Fatal("the API server accepted the object; the test checks nothing")
			}
			raw := err.Error()
			if !containsAny(raw, tc.values) {
				t.Fatalf("the raw error echoes none of the values, so it does not test scrubbing:\n%s", raw)
			}
			t.Logf("raw: %s", raw)
			var logs bytes.Buffer
			slog.New(redact.LogHandler(slog.NewJSONHandler(&logs, nil))).Error("apply failed", "error", err)
			outputs := map[string]string{
				"command":  redact.Error(err),
				"/status":  redact.Error(err),
				"event":    redact.Sprintf("revision abc: %v", err),
				"alert":    alert.Redact(alert.Event{Type: alert.EventError, Summary: redact.Error(err)}).Summary,
				"log line": logs.String(),
			}
			for out, text := range outputs {
				for _, v := range tc.values {
					if strings.Contains(text, v) {
						t.Errorf("%s: contains %q:\n%s", out, v, text)
					}
				}
				for _, k := range tc.keep {
					if !strings.Contains(text, k) {
						t.Errorf("%s: lost %q:\n%s", out, k, text)
					}
				}
			}
			if !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err) && !apierrors.IsInternalError(err) {
				t.Logf("error is %T", err)
			}
		})
	}
}

func containsAny(s string, vs []string) bool {
	for _, v := range vs {
		if strings.Contains(s, v) {
			return true
		}
	}
	return false
}
