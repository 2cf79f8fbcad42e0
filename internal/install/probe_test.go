package install

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"syncd.dev/syncd/internal/config"
)

// TestProbeTarget: each source type is probed with the first request its
// fetch sends, without user information.
func TestProbeTarget(t *testing.T) {
	tests := map[string]struct {
		ep   Endpoint
		want target
	}{
		"git https": {Endpoint{Type: GitType, URL: "https://tok:s3cret@git.example.com/org/repo.git"},
			target{http: "https://git.example.com/org/repo.git/info/refs?service=git-upload-pack"}},
		"git scp-like": {Endpoint{Type: GitType, URL: "git@github.com:org/repo.git"}, target{dial: "github.com:22"}},
		"git ssh port": {Endpoint{Type: GitType, URL: "ssh://git@git.example.com:2222/repo.git"}, target{dial: "git.example.com:2222"}},
		"git file":     {Endpoint{Type: GitType, URL: "file:///srv/repo"}, target{skip: "a local path, not checked"}},
		"helm https":   {Endpoint{Type: HelmType, URL: "https://charts.example.com/stable/"}, target{http: "https://charts.example.com/stable/index.yaml"}},
		"helm oci":     {Endpoint{Type: HelmType, URL: "oci://ghcr.io/org/charts"}, target{http: "https://ghcr.io/v2/"}},
		"oci":          {Endpoint{Type: OCIType, URL: "oci://registry.example.com:5000/manifests/web"}, target{http: "https://registry.example.com:5000/v2/"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := probeTarget(tc.ep)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(target{})); diff != "" {
				t.Errorf("probeTarget(%s) (-want +got):\n%s", tc.ep.URL, diff)
			}
		})
	}
}

// TestProbe: a server's answer below 500 passes (the source's
// credentials are not sent), a 5xx and no answer fail, and the line
// shows no password or query.
func TestProbe(t *testing.T) {
	status := map[string]int{"/ok.git/info/refs": 200, "/private.git/info/refs": 401, "/broken.git/info/refs": 503}
	var gotAuth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = append(gotAuth, r.Header.Get("Authorization"))
		w.WriteHeader(status[r.URL.Path])
	}))
	defer srv.Close()
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadURL := "http://" + dead.Addr().String() + "/gone.git"
	dead.Close()
	withUser := strings.Replace(srv.URL, "http://", "http://tok:s3cret@", 1)

	p := NewProber(5 * time.Second)
	got := p.ProbeAll(context.Background(), []Endpoint{
		{Name: "ok", Type: GitType, URL: srv.URL + "/ok.git"},
		{Name: "private", Type: GitType, URL: withUser + "/private.git?token=s3cret"},
		{Name: "broken", Type: GitType, URL: srv.URL + "/broken.git"},
		{Name: "gone", Type: GitType, URL: deadURL},
	})
	var states []State
	for _, r := range got {
		states = append(states, r.State)
		if strings.Contains(r.Detail, "s3cret") {
			t.Errorf("%s: the line shows a secret: %s", r.Check, r)
		}
	}
	if diff := cmp.Diff([]State{Pass, Pass, Fail, Fail}, states); diff != "" {
		t.Errorf("states (-want +got):\n%s\n%v", diff, got)
	}
	if diff := cmp.Diff([]string{"", "", ""}, gotAuth); diff != "" {
		t.Errorf("Authorization headers sent (-want +got):\n%s", diff)
	}
}

// TestConfigEndpoints: every source of a syncd.yaml is probed the way its
// kind is fetched (examples/ hold each kind).
func TestConfigEndpoints(t *testing.T) {
	var got []string
	for _, file := range []string{"helmrepo.yaml", "oci.yaml"} {
		cfg, err := config.Load(filepath.Join("..", "..", "examples", file))
		if err != nil {
			t.Fatal(err)
		}
		for _, ep := range ConfigEndpoints(cfg) {
			got = append(got, fmt.Sprintf("%s %s", ep.Type, ep.URL))
		}
	}
	want := []string{
		"helm https://charts.example.com/stable", "git https://git.example.com/org/platform.git",
		"oci oci://ghcr.io/example/manifests/web", "oci oci://ghcr.io/example/charts/web",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("endpoints (-want +got):\n%s", diff)
	}
}
