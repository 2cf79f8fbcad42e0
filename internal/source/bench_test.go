package source

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"syncd.dev/syncd/internal/egress"
)

// fastImport feeds a fast-import stream to git in the bare repository.
func (u *upstream) fastImport(stream *bytes.Buffer) {
	u.t.Helper()
	cmd := exec.Command("git", "fast-import", "--quiet")
	cmd.Dir = u.bare
	cmd.Env = gitEnv(u.home)
	cmd.Stdin = stream
	if out, err := cmd.CombinedOutput(); err != nil {
		u.t.Fatalf("git fast-import: %v\n%s", err, out)
	}
}

func writeData(b *bytes.Buffer, data string) {
	fmt.Fprintf(b, "data %d\n%s\n", len(data), data)
}

func benchFile(i, version int) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\ndata:\n  version: \"%d\"\n  payload: %s\n", i, version, randomText(200, int64(i*7919+version)))
}

// newBenchUpstream builds a repository of files files and commits commits
// on main.
func newBenchUpstream(b *testing.B, files, commits int) *upstream {
	u := newUpstream(b)
	var s bytes.Buffer
	ts := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	for c := 0; c < commits; c++ {
		fmt.Fprintf(&s, "commit refs/heads/main\ncommitter Bench <bench@example.com> %d +0000\n", ts+int64(c))
		writeData(&s, fmt.Sprintf("commit %d", c))
		if c == 0 {
			for i := 0; i < files; i++ {
				fmt.Fprintf(&s, "M 100644 inline apps/app-%02d/cm-%04d.yaml\n", i%50, i)
				writeData(&s, benchFile(i, 0))
			}
			continue
		}
		for k := 0; k < 3; k++ {
			i := (c*37 + k*1013) % files
			fmt.Fprintf(&s, "M 100644 inline apps/app-%02d/cm-%04d.yaml\n", i%50, i)
			writeData(&s, benchFile(i, c))
		}
	}
	u.fastImport(&s)
	return u
}

// bump adds one commit changing one file on main.
func (u *upstream) bump(n int) {
	u.t.Helper()
	head := u.run(u.bare, "rev-parse", "refs/heads/main")
	var s bytes.Buffer
	fmt.Fprintf(&s, "commit refs/heads/main\ncommitter Bench <bench@example.com> %d +0000\n", time.Now().Unix())
	writeData(&s, fmt.Sprintf("bump %d", n))
	fmt.Fprintf(&s, "from %s\n", head)
	fmt.Fprintf(&s, "M 100644 inline apps/app-%02d/cm-%04d.yaml\n", n%50, n%5000)
	writeData(&s, benchFile(n%5000, 100000+n))
	u.fastImport(&s)
}

const benchFiles, benchCommits = 5000, 2000

func BenchmarkPollUnchanged(b *testing.B) {
	u := newBenchUpstream(b, benchFiles, benchCommits)
	srv := newHTTPServer(b, u, "")
	s := newSource(b, gitSource(srv.url(), "main"))
	start := time.Now()
	poll(b, s)
	b.Logf("first clone: %s, %d bytes", time.Since(start), srv.totalBytes())
	before := srv.totalBytes()
	srv.counts()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, res := poll(b, s); res.Moved != Unchanged {
			b.Fatalf("change %v", res.Moved)
		}
	}
	b.StopTimer()
	refs, posts, _ := srv.counts()
	if refs != b.N || posts != 0 {
		b.Fatalf("%d polls made %d info/refs and %d upload-pack requests", b.N, refs, posts)
	}
	b.ReportMetric(float64(srv.totalBytes()-before)/float64(b.N), "bytes-transferred/op")
}

// BenchmarkPollRestart is the first poll of a process on a cache that an
// earlier process filled: what every one-shot command (syncd apply
// --config, syncd plan) and every start of syncd run does per source. The
// branch is fetched by name: one ref advertisement, no pack.
func BenchmarkPollRestart(b *testing.B) {
	u := newBenchUpstream(b, benchFiles, benchCommits)
	srv := newHTTPServer(b, u, "")
	g, cache := withName(gitSource(srv.url(), "main"), "src"), b.TempDir()
	restart := func() *Source {
		s, err := New(g, Options{CacheDir: cache})
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	want, _ := poll(b, restart())
	srv.counts()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if rev, res := poll(b, restart()); res.Moved != Updated || rev.SHA != want.SHA {
			b.Fatalf("poll = %v %s, want Updated %s", res.Moved, rev.SHA, want.SHA)
		}
	}
	b.StopTimer()
	if refs, posts, _ := srv.counts(); refs != b.N || posts != 0 {
		b.Fatalf("%d first polls made %d info/refs and %d upload-pack requests, want %d and 0", b.N, refs, posts, b.N)
	}
}

func BenchmarkPollNewCommit(b *testing.B) {
	u := newBenchUpstream(b, benchFiles, benchCommits)
	srv := newHTTPServer(b, u, "")
	s := newSource(b, gitSource(srv.url(), "main"))
	poll(b, s)
	full := srv.totalBytes()
	var transferred int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		u.bump(i)
		before := srv.totalBytes()
		b.StartTimer()
		rev, res := poll(b, s)
		b.StopTimer()
		transferred += srv.totalBytes() - before
		if res.Moved != Updated || !strings.HasPrefix(rev.Subject, "bump") {
			b.Fatalf("poll = %v %q", res.Moved, rev.Subject)
		}
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(transferred)/float64(b.N), "bytes-transferred/op")
	b.ReportMetric(float64(full), "first-clone-bytes")
}

// BenchmarkInfoRefsBaseline is one bare info/refs request to the same
// server: the floor under BenchmarkPollUnchanged (it is mostly the CGI
// git http-backend process the test server starts per request).
func BenchmarkInfoRefsBaseline(b *testing.B) {
	u := newBenchUpstream(b, 10, 2)
	srv := newHTTPServer(b, u, "")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		resp, err := egress.Client().Get(srv.url() + "/info/refs?service=git-upload-pack")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}
