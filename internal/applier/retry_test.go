package applier

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// conflictInjector answers the first real (not dry-run) apply request with
// a 409 Conflict Status, then lets every request through. It counts the
// real apply requests.
type conflictInjector struct {
	rt     http.RoundTripper
	status metav1.Status

	mu      sync.Mutex
	applies int
}

func (c *conflictInjector) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPatch || req.Header.Get("Content-Type") != string(types.ApplyPatchType) || req.URL.Query().Has("dryRun") {
		return c.rt.RoundTrip(req)
	}
	c.mu.Lock()
	c.applies++
	first := c.applies == 1
	c.mu.Unlock()
	if !first {
		return c.rt.RoundTrip(req)
	}
	body, err := json.Marshal(c.status)
	if err != nil {
		return nil, err
	}
	return &http.Response{
		StatusCode: http.StatusConflict,
		Status:     "409 Conflict",
		Header:     http.Header{"Content-Type": []string{"application/json"}},
		Body:       io.NopCloser(bytes.NewReader(body)),
		Request:    req,
	}, nil
}

func (c *conflictInjector) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.applies
}

// TestSendRetriesOptimisticLock: a 409 without field-manager causes (a
// resourceVersion conflict) is retried and the apply succeeds with one
// retry; a 409 whose causes name another field manager is a field conflict
// and is not retried.
func TestSendRetriesOptimisticLock(t *testing.T) {
	status := func(causes ...metav1.StatusCause) metav1.Status {
		return metav1.Status{
			TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status:   metav1.StatusFailure,
			Code:     http.StatusConflict,
			Reason:   metav1.StatusReasonConflict,
			Message:  `Operation cannot be fulfilled on configmaps "cm": the object has been modified; please apply your changes to the latest version and try again`,
			Details:  &metav1.StatusDetails{Name: "cm", Kind: "configmaps", Causes: causes},
		}
	}
	tests := map[string]struct {
		status      metav1.Status
		wantApplies int
		want        string
		wantData    string
		wantConf    Conflicts
	}{
		"resourceVersion conflict: retried once": {
			status:      status(),
			wantApplies: 2,
			want:        "ConfigMap cm syncd-app configured",
			wantData:    "v2",
		},
		"field-manager conflict: not retried": {
			status:      status(metav1.StatusCause{Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "other"`, Field: ".data.k"}),
			wantApplies: 1,
			want:        "ConfigMap cm syncd-app conflict",
			wantData:    "v1",
			wantConf:    Conflicts{{Manager: "other", Path: ".data.k", Operation: "Apply"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ns := env.Namespace(t)
			doc := func(v string) string {
				return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  k: " + v + "\n"
			}
			plain := newCluster(t, env.Config)
			if cs := plain.apply(t, plain.plan(t, appOf("app", ns), doc("v1")), ApplyOptions{}); !cs.OK() {
				t.Fatalf("create: %v%s", changes(cs), errs(cs))
			}

			inj := &conflictInjector{status: tc.status}
			cfg := rest.CopyConfig(env.Config)
			cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
				inj.rt = rt
				return inj
			})
			c := newCluster(t, cfg)
			cs := c.apply(t, c.plan(t, appOf("app", ns), doc("v2")), ApplyOptions{})
			wantChanges(t, cs, tc.want)
			if got := inj.count(); got != tc.wantApplies {
				t.Errorf("%d apply requests sent, want %d (one 409 answered, then %d)", got, tc.wantApplies, tc.wantApplies-1)
			}
			if diff := cmp.Diff(tc.wantConf, cs.Changes[0].Conflicts); diff != "" {
				t.Errorf("conflicts (-want +got):\n%s", diff)
			}
			if got, _, _ := unstructured.NestedString(plain.get(t, configMaps, ns, "cm").Object, "data", "k"); got != tc.wantData {
				t.Errorf(".data.k = %q, want %q", got, tc.wantData)
			}
		})
	}
}
