package reconcile_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"syncd.dev/syncd/internal/alert"
	"syncd.dev/syncd/internal/reconcile"
)

// TestDaemonDriftAlert: after the daemon applied an app, an out-of-band
// write shows up as a drift finding in the status and as a signed webhook
// alert naming the field, the culprit and desired vs live — without waiting
// for the next poll (the interval is an hour).
func TestDaemonDriftAlert(t *testing.T) {
	ns := env.Namespace(t)
	repo := newRepo(t)
	repo.commit("first", map[string]string{"app/cm.yaml": configMap(ns, "blue")})

	key := []byte("alert-key")
	var mu sync.Mutex
	var got []alert.WebhookPayload
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := alert.VerifyWebhook(key, r.Header, body, time.Now(), 5*time.Minute); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		var p alert.WebhookPayload
		if err := json.Unmarshal(body, &p); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, p)
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "url"), []byte(srv.URL), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "key"), key, 0o600); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "syncd.yaml")
	writeConfig(t, cfgPath, repo.dir, ns, "1h")
	f, err := os.OpenFile(cfgPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprint(f, "alerts:\n- name: hook\n  type: webhook\n  urlFile: url\n  hmacKeyFile: key\n  events: [drift]\n")
	f.Close()

	d := launchDaemon(t, reconcile.DaemonOptions{
		ConfigPath: cfgPath,
		Cluster:    cluster(t),
		Options:    reconcile.Options{CacheDir: t.TempDir()},
	})
	eventually(t, "first reconcile", func() (bool, string) { return d.Ready(), fmt.Sprintf("%+v", d.Status()) })

	_, err = env.Clientset(t).CoreV1().ConfigMaps(ns).Patch(context.Background(), "settings", types.MergePatchType,
		[]byte(`{"data":{"color":"green"}}`), metav1.PatchOptions{FieldManager: "operator"})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "drift finding in status and alert delivered", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		st := d.Status()
		return len(st) == 1 && st[0].Findings == 1 && len(got) > 0, fmt.Sprintf("status=%+v alerts=%+v", st, got)
	})
	mu.Lock()
	defer mu.Unlock()
	p := got[0]
	if p.Type != "drift" || p.App != "web" || p.Object.Name != "settings" || len(p.Fields) != 1 {
		t.Fatalf("alert = %+v", p)
	}
	fd := p.Fields[0]
	if fd.Path != ".data.color" || fd.Desired != "blue" || fd.Live != "green" || fd.Culprit == nil || fd.Culprit.Manager != "operator" || fd.Culprit.Operation != "Update" {
		t.Fatalf("alert field = %+v, want .data.color blue→green by operator (Update)", fd)
	}
}
