package gitserver

import "testing"

// StartTest starts a server in a temporary directory of tb and closes it
// at cleanup. A server that does not start fails the test.
func StartTest(tb testing.TB) *Server {
	tb.Helper()
	s, err := Start(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// NewTestRepo creates repository name on s with its work tree in a
// temporary directory of tb. A repository that cannot be created fails the
// test.
func (s *Server) NewTestRepo(tb testing.TB, name string) *Repo {
	tb.Helper()
	r, err := s.NewRepo(name, tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	return r
}
