package gitserver

import (
	"context"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/storage/memory"
)

func TestSlowDelaysEveryRequest(t *testing.T) {
	s := StartTest(t)
	r := s.NewTestRepo(t, "app")
	sha, err := r.Commit("first", map[string][]byte{"a/cm.yaml": []byte("kind: ConfigMap\n")})
	if err != nil {
		t.Fatal(err)
	}
	slow, err := NewSlow(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = slow.Close() })

	list := func(ctx context.Context) (string, error) {
		remote := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{slow.URL + "/app.git"}})
		refs, err := remote.ListContext(ctx, &git.ListOptions{})
		for _, ref := range refs {
			if ref.Name().String() == "refs/heads/main" {
				return ref.Hash().String(), err
			}
		}
		return "", err
	}
	if got, err := list(context.Background()); err != nil || got != sha {
		t.Fatalf("through the proxy without delay: main = %q, %v; want %s", got, err, sha)
	}

	const delay = 400 * time.Millisecond
	slow.SetDelay(delay)
	start := time.Now()
	if got, err := list(context.Background()); err != nil || got != sha {
		t.Fatalf("through the slow proxy: main = %q, %v; want %s", got, err, sha)
	}
	if took := time.Since(start); took < delay {
		t.Errorf("listing refs through a proxy delaying %s took %s", delay, took)
	}

	// A client that gives up is let go: the held request ends.
	slow.SetDelay(time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := list(ctx); err == nil {
		t.Fatal("listing refs with a 300ms deadline through an hour's delay succeeded")
	}
	deadline := time.Now().Add(5 * time.Second)
	for slow.Held() != 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := slow.Held(); n != 0 {
		t.Errorf("%d requests still held after their client gave up", n)
	}
}

func TestSlowSetDelayReleasesHeldRequests(t *testing.T) {
	s := StartTest(t)
	r := s.NewTestRepo(t, "app")
	if _, err := r.Commit("first", map[string][]byte{"a/cm.yaml": []byte("kind: ConfigMap\n")}); err != nil {
		t.Fatal(err)
	}
	slow, err := NewSlow(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = slow.Close() })
	slow.SetDelay(time.Hour)
	done := make(chan error, 1)
	go func() {
		remote := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{slow.URL + "/app.git"}})
		_, err := remote.ListContext(context.Background(), &git.ListOptions{})
		done <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for slow.Held() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if slow.Held() == 0 {
		t.Fatal("the request never reached the proxy")
	}
	slow.SetDelay(0)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("released request: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("SetDelay(0) did not release the held request")
	}
}
