package gitserver

import (
	"context"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/storage/memory"
)

func TestServeCommitAndOutage(t *testing.T) {
	s := StartTest(t)
	r := s.NewTestRepo(t, "app")
	sha, err := r.Commit("first", map[string][]byte{"a/cm.yaml": []byte("kind: ConfigMap\n")})
	if err != nil {
		t.Fatal(err)
	}

	ctx := context.Background()
	remote := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{r.URL}})
	refs, err := remote.ListContext(ctx, &git.ListOptions{})
	if err != nil {
		t.Fatalf("list %s: %v", r.URL, err)
	}
	var got string
	for _, ref := range refs {
		if ref.Name().String() == "refs/heads/main" {
			got = ref.Hash().String()
		}
	}
	if got != sha {
		t.Fatalf("refs/heads/main = %q, want the pushed commit %s", got, sha)
	}

	s.SetDown(true)
	before := s.Requests()
	if _, err := remote.ListContext(ctx, &git.ListOptions{}); err == nil {
		t.Fatal("listing refs of a server that is down succeeded")
	}
	if s.Requests() == before {
		t.Fatal("the failed listing never reached the server")
	}
	s.SetDown(false)
	if _, err := remote.ListContext(ctx, &git.ListOptions{}); err != nil {
		t.Fatalf("after the outage: %v", err)
	}
	if _, err := r.Commit("remove", map[string][]byte{"a/cm.yaml": nil}); err != nil {
		t.Fatal(err)
	}
}
