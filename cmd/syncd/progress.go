package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/term"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/planner"
)

// progressMode is how a one-shot command (apply, plan, run --once) shows
// its progress on stderr.
type progressMode int

const (
	// progressNone shows nothing (--quiet).
	progressNone progressMode = iota
	// progressLines writes one line per finished stage, for CI logs and
	// other readers that are not a terminal.
	progressLines
	// progressTerminal keeps one line up to date in place.
	progressTerminal
)

// progressFlags is the --quiet flag of the commands that show progress.
type progressFlags struct {
	quiet bool
}

func (f *progressFlags) register(fs *pflag.FlagSet) {
	fs.BoolVarP(&f.quiet, "quiet", "q", false, "show no progress on stderr (default: a line kept up to date on a terminal, a line per finished stage otherwise)")
}

// reporter returns the progress reporter of a command writing to stderr.
func (f *progressFlags) reporter(stderr io.Writer, verb string) *progressReporter {
	p := newProgressReporter(stderr, progressModeOf(stderr, f.quiet), verb)
	if p != nil && p.mode == progressTerminal {
		p.width = terminalWidth(stderr)
	}
	return p
}

// terminalWidth is the width of the terminal w is, 0 when unknown.
func terminalWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok {
		return 0
	}
	width, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return 0
	}
	return width
}

// progressModeOf picks the mode for stderr: none when quiet, in place on
// a terminal (not TERM=dumb), else lines.
func progressModeOf(stderr io.Writer, quiet bool) progressMode {
	if quiet {
		return progressNone
	}
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) && os.Getenv("TERM") != "dumb" {
		return progressTerminal
	}
	return progressLines
}

// progressRedraw is how often the terminal line is redrawn at most while
// objects are done, and at least while a stage waits.
const progressRedraw = 200 * time.Millisecond

// progressReporter shows how the apply or dry run of one app at a time
// advances, stage by stage (applier.Progress): on a terminal a line
// "app web: applying namespaced 12/40 objects 3.2s" redrawn in place,
// else "app web: namespaced: 40/40 objects applied in 3.2s" per finished
// stage. A nil *progressReporter shows nothing.
type progressReporter struct {
	w    io.Writer
	mode progressMode
	verb string // "applied" or "dry-run"
	now  func() time.Time
	// every is how often the terminal line is redrawn while nothing
	// happens; 0: only when something happens.
	every time.Duration
	// width is the terminal's width: a longer line is cut, since a line
	// that wraps cannot be redrawn in place. 0: unknown, not cut.
	width int

	mu        sync.Mutex
	app       string
	stage     planner.Stage
	inStage   bool
	objects   int
	done      int
	since     time.Time // the stage's start
	drawn     time.Time // the terminal line's last redraw; zero: none on screen
	stopTimer chan struct{}
}

var _ applier.Progress = (*progressReporter)(nil)

func newProgressReporter(w io.Writer, mode progressMode, verb string) *progressReporter {
	if mode == progressNone {
		return nil
	}
	return &progressReporter{w: w, mode: mode, verb: verb, now: time.Now, every: progressRedraw}
}

// progress returns p as an applier.Progress: nil (no one to tell) when p
// is nil.
func (p *progressReporter) progress() applier.Progress {
	if p == nil {
		return nil
	}
	return p
}

// Start says that app is being rendered and applied (or dry-run); the
// stages that follow are its. An empty app (syncd apply --path, which
// rendered already) shows no app name and no rendering line.
func (p *progressReporter) Start(app string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.app, p.inStage = app, false
	if p.mode != progressTerminal {
		return
	}
	if app != "" {
		p.draw(p.prefix() + "rendering")
	}
	if p.stopTimer == nil && p.every > 0 {
		p.stopTimer = make(chan struct{})
		go p.tick(p.stopTimer)
	}
}

// Stop clears the terminal line, so that the command's output starts on
// a clean line, and stops its redraws.
func (p *progressReporter) Stop() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopTimer != nil {
		close(p.stopTimer)
		p.stopTimer = nil
	}
	if !p.drawn.IsZero() {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.drawn = time.Time{}
	}
}

// StageStarted starts showing stage.
func (p *progressReporter) StageStarted(stage planner.Stage, objects int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stage, p.inStage, p.objects, p.done, p.since = stage, true, objects, 0, p.now()
	p.redraw(true)
}

// ObjectDone counts one more object of the stage done.
func (p *progressReporter) ObjectDone(planner.Stage) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	p.redraw(p.done == p.objects)
}

// StageDone ends the stage: its line in lines mode.
func (p *progressReporter) StageDone(planner.Stage) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inStage = false
	if p.mode == progressLines {
		fmt.Fprintf(p.w, "%s%s: %d/%d objects %s in %s\n", p.prefix(), p.stage, p.done, p.objects, p.verb, p.elapsed())
	}
}

// tick redraws the terminal line until stop is closed, so that the
// elapsed time moves while a stage waits (for health, for CRDs).
func (p *progressReporter) tick(stop chan struct{}) {
	t := time.NewTicker(p.every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			p.mu.Lock()
			if p.inStage {
				p.redraw(true)
			}
			p.mu.Unlock()
		}
	}
}

// redraw draws the stage's line on a terminal, unless the last redraw
// is more recent than progressRedraw and force is false.
func (p *progressReporter) redraw(force bool) {
	if p.mode != progressTerminal {
		return
	}
	if !force && p.now().Sub(p.drawn) < progressRedraw {
		return
	}
	p.draw(fmt.Sprintf("%s%s %s %d/%d objects %s", p.prefix(), p.doing(), p.stage, p.done, p.objects, p.elapsed()))
}

// draw replaces the terminal line with line.
func (p *progressReporter) draw(line string) {
	if p.width > 1 && len(line) >= p.width {
		line = line[:p.width-1]
	}
	fmt.Fprint(p.w, "\r\x1b[K"+line)
	p.drawn = p.now()
}

// prefix names the app, if any.
func (p *progressReporter) prefix() string {
	if p.app == "" {
		return ""
	}
	return "app " + p.app + ": "
}

// doing is the verb of the terminal line.
func (p *progressReporter) doing() string {
	if p.verb == "dry-run" {
		return "dry-running"
	}
	return "applying"
}

// elapsed is the time since the stage started, to a tenth of a second.
func (p *progressReporter) elapsed() time.Duration {
	return p.now().Sub(p.since).Round(100 * time.Millisecond)
}
