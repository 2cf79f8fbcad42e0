// Package gitserver serves Git repositories over smart HTTP on loopback for
// syncd's tests, benchmarks and demo. It runs the git CLI's own
// git-http-backend through CGI, so clients talk to the real Git protocol
// implementation, and it can be switched "down" to simulate an outage.
//
// It needs the git CLI on PATH. Every git command runs with an isolated
// HOME and fixed identities, so the machine's git configuration (signing,
// hooks, default branch) never leaks in.
package gitserver
