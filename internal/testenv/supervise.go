package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// EventsEnv names a file the harness appends a report to whenever a
// control-plane process dies on its own. hack/test.sh sets it and prints
// the file at the end of the run: a test package that rode out the death
// passes, and go test shows nothing of a passing package's output.
const EventsEnv = "SYNCD_TESTENV_EVENTS"

// maxRestarts is how many times one process of an Env is started again
// after dying on its own: a process that keeps dying is a broken control
// plane, and the tests then fail on it.
const maxRestarts = 3

// reap waits for a process to end. One that ended while still the Env's
// (stopProc forgets a process before it signals it) died on its own: the
// harness reports how it ended and what its log says (lastWords), and
// starts it again with the same arguments (same ports, same data), so
// that one death of the control plane costs the tests running at that
// moment a short outage, not every test after it.
func (e *Env) reap(name string, cmd *exec.Cmd, logFile *os.File, done chan struct{}) {
	_ = cmd.Wait()
	logFile.Close()
	defer close(done) // after the report: whoever waits on done may read it
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopping || e.procs[name] != cmd {
		return
	}
	delete(e.procs, name)
	e.restartLocked(name, cmd.ProcessState)
}

// restartLocked reports a death and starts the process again, at most
// maxRestarts times. e.mu is held.
func (e *Env) restartLocked(name string, state *os.ProcessState) {
	words := e.lastWords(name) // before a new process writes to the log
	again := e.restarts[name] < maxRestarts
	var err error
	if again {
		e.restarts[name]++
		err = e.spawnLocked(name, e.args[name])
	}
	e.report(deathReport(name, state, again, err, words))
}

// lastWords is what the named process's log says of its death: a Go
// crash's first lines (its panic or fatal error, then the stack of the
// goroutine that crashed, where the log's tail would be the stacks of
// every other goroutine), else the log's tail.
func (e *Env) lastWords(name string) string {
	data, err := os.ReadFile(filepath.Join(e.Dir, name+".log"))
	if err != nil {
		return ""
	}
	if crash := goCrash(string(data)); crash != "" {
		return crash
	}
	return tail(string(data))
}

// goCrash returns the first 20 lines of log from the first line that
// starts a Go crash ("panic: " or "fatal error: "), or "" when there is
// none.
func goCrash(log string) string {
	lines := strings.Split(log, "\n")
	for i, line := range lines {
		if strings.HasPrefix(line, "panic: ") || strings.HasPrefix(line, "fatal error: ") {
			return strings.Join(lines[i:min(i+20, len(lines))], "\n")
		}
	}
	return ""
}

// deathReport says which process died, how, what the harness did about
// it, and what its log says of it.
func deathReport(name string, state *os.ProcessState, restarted bool, restartErr error, words string) string {
	did := "started again"
	switch {
	case restartErr != nil:
		did = "not started again: " + restartErr.Error()
	case !restarted:
		did = fmt.Sprintf("not started again: it died %d times already", maxRestarts+1)
	}
	return fmt.Sprintf("%s testenv (%s): %s died on its own (%s); %s; its log says:\n%s\n",
		time.Now().UTC().Format(time.RFC3339), filepath.Base(os.Args[0]), name, state, did, words)
}

// report writes a death report to stderr and appends it to the file
// EventsEnv names, if set.
func (e *Env) report(msg string) {
	fmt.Fprint(os.Stderr, msg)
	path := os.Getenv(EventsEnv)
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %s: %v\n", EventsEnv, err)
		return
	}
	defer f.Close()
	_, _ = f.WriteString(msg)
}
