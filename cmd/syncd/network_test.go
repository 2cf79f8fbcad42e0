package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/storage/memory"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"syncd.dev/syncd/internal/egress"
)

// TestForbidDefaultNetworkKeepsSyncdsClients checks that after main's
// forbidDefaultNetwork the default transport refuses, while syncd's own
// clients (go-git, client-go without TLS settings, alert sinks) still
// reach their servers.
func TestForbidDefaultNetworkKeepsSyncdsClients(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.Path)
		mu.Unlock()
		if r.URL.Path == "/version" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"major":"1","minor":"37","gitVersion":"v1.37.2"}`)
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	requested := func(p string) bool {
		mu.Lock()
		defer mu.Unlock()
		for _, s := range seen {
			if strings.HasSuffix(s, p) {
				return true
			}
		}
		return false
	}

	// TestMain installed the block as main does; install it again here so
	// the test holds when run alone with another TestMain.
	t.Setenv("GIT_ALLOW_PROTOCOL", "restored-by-t.Setenv")
	restore, err := egress.Forbid()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(restore)

	if _, err := http.Get(srv.URL + "/default"); err == nil || requested("/default") {
		t.Errorf("http.Get through the default transport: err %v, reached the server %v; want refused", err, requested("/default"))
	}

	plain := &rest.Config{Host: srv.URL}
	if _, err := kubernetes.NewForConfigOrDie(plain).Discovery().ServerVersion(); err == nil {
		t.Errorf("control: client-go without TLS settings reached the server through the default transport; OwnRESTTransport is not needed")
	}
	egress.OwnRESTTransport(plain)
	if v, err := kubernetes.NewForConfigOrDie(plain).Discovery().ServerVersion(); err != nil || v.GitVersion != "v1.37.2" {
		t.Errorf("client-go after OwnRESTTransport: %v, %v; want the server's version", v, err)
	}

	resp, err := egress.Client().Get(srv.URL + "/alert")
	if err != nil {
		t.Errorf("alert client on egress.Client: %v", err)
	} else {
		resp.Body.Close()
	}

	remote := git.NewRemote(memory.NewStorage(), &gitconfig.RemoteConfig{Name: "origin", URLs: []string{srv.URL + "/repo.git"}})
	_, _ = remote.ListContext(context.Background(), &git.ListOptions{})
	if !requested("/repo.git/info/refs") {
		t.Errorf("go-git's HTTP client did not reach the server after forbidDefaultNetwork; requests: %v", seen)
	}
}
