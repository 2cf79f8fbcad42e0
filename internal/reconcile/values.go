package reconcile

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/planner"
	"syncd.dev/syncd/internal/source"
)

// valuesMark joins a chart's revision and its values source's in an
// app's revision: "<chart revision>+values@<values commit>". See
// docs/helm.md (revision label).
const valuesMark = "+values@"

// ErrNoRevision is AppRevision's error when a source the app renders
// from has resolved no revision yet. For an app's chart source, its own
// first poll hands the app its work.
var ErrNoRevision = errors.New("the source has resolved no revision yet")

// ValuesSource is the Git source an app reads its values files from
// (helm.valuesSource); "" for none. A poll of it concerns the app as
// much as a poll of the app's own source.
func ValuesSource(app config.App) string {
	if app.Helm == nil {
		return ""
	}
	return app.Helm.ValuesSource
}

// joinValues is the revision an app with helm.valuesSource renders at:
// the chart's revision with the values source's joined to it (Values),
// its SHA naming both. This is the one place that spells an app's
// revision; status, events, alerts, dependsOn and the inventory read
// SHA.
func joinValues(chart, values source.Revision) source.Revision {
	out := chart
	out.Values = &values
	out.SHA = chart.SHA + valuesMark + values.SHA
	return out
}

// AppRevision returns the revision the app renders at once source
// polled.Source resolved polled, holding the trees it names until
// release is called: polled itself for an app without
// helm.valuesSource; for one with it, the chart's and the values'
// revisions joined (joinValues), the one polled did not resolve taken
// from the revision its source has in force. Either source having
// resolved nothing yet is ErrNoRevision: the app has no revision until
// both did, and the first poll of the other hands it its work (a values
// source whose polls fail tells the app why: PollError).
func (r *Runner) AppRevision(app config.App, polled source.Revision) (source.Revision, func(), error) {
	vs := ValuesSource(app)
	chart, release, err := r.holdPart(app.Source, polled)
	if err != nil || vs == "" {
		return chart, release, err
	}
	values, releaseValues, err := r.holdPart(vs, polled)
	if err != nil {
		release()
		return source.Revision{}, nil, err
	}
	return joinValues(chart, values), func() { releaseValues(); release() }, nil
}

// holdPart holds source name's part of an app's revision: polled when
// the poll was that source's, else the revision in force there.
func (r *Runner) holdPart(name string, polled source.Revision) (source.Revision, func(), error) {
	src := r.sources[name]
	if src == nil {
		return source.Revision{}, nil, fmt.Errorf("source %q is not defined", name)
	}
	rev := polled
	if polled.Source != name {
		var ok bool
		if rev, ok = src.Last(); !ok {
			return source.Revision{}, nil, ErrNoRevision
		}
	}
	release, err := src.Hold(rev)
	if err != nil {
		return source.Revision{}, nil, err
	}
	return rev, release, nil
}

// pollValues polls the app's values source (or, with dir, takes dir's
// checkout as its tree: a pull request of the values repository) and
// joins its revision to chart, holding it until release is called.
func (r *Runner) pollValues(ctx context.Context, app config.App, chart source.Revision, dir string) (source.Revision, func(), error) {
	vs := ValuesSource(app)
	if dir != "" {
		tree, err := planner.LocalTree(dir)
		if err != nil {
			return source.Revision{}, nil, fmt.Errorf("app %s: helm.valuesSource %s from --path: %w", app.Name, vs, err)
		}
		return joinValues(chart, source.Revision{Source: vs, SHA: "local:" + dir, Dir: tree.Root}), func() {}, nil
	}
	src := r.sources[vs]
	if src == nil {
		return source.Revision{}, nil, fmt.Errorf("app %s: helm.valuesSource %q is not defined", app.Name, vs)
	}
	rev, _, err := src.Poll(ctx)
	if err != nil {
		return source.Revision{}, nil, fmt.Errorf("app %s: helm.valuesSource %s: %w", app.Name, vs, err)
	}
	release, err := src.Hold(rev)
	if err != nil {
		return source.Revision{}, nil, fmt.Errorf("app %s: helm.valuesSource %s: %w", app.Name, vs, err)
	}
	return joinValues(chart, rev), release, nil
}

// AtRevision prefixes err with the revision it happened at ("revision
// 1a2b3c4d5e6f: …"), short as the caller prints it; with no revision (the
// source failed before one was fetched) it returns err as it is, rather
// than "revision : …".
func AtRevision(short string, err error) error {
	if short == "" {
		return err
	}
	return fmt.Errorf("%s%w", RevisionPrefix(short), err)
}

// RevisionPrefix is what a message about revision short begins with:
// "revision SHORT: ", or nothing before any revision.
func RevisionPrefix(short string) string {
	if short == "" {
		return ""
	}
	return "revision " + short + ": "
}

// ShortSHA shortens a revision for messages: a commit or a chart
// revision to 12 characters, each part of an app's revision joined with
// its values source's (joinValues) alike.
func ShortSHA(sha string) string {
	if chart, values, ok := strings.Cut(sha, valuesMark); ok {
		return ShortSHA(chart) + valuesMark + ShortSHA(values)
	}
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// valuesLabel is what the plan's revision label adds for the values
// source: "+values@<short commit>", nothing without one.
func valuesLabel(rev source.Revision) string {
	if rev.Values == nil {
		return ""
	}
	return valuesMark + ShortSHA(rev.Values.SHA)
}

// checkValuesResolved refuses to render an app with helm.valuesSource
// before that source resolved a revision.
func checkValuesResolved(app config.App, rev source.Revision) error {
	if ValuesSource(app) == "" || rev.Values != nil {
		return nil
	}
	return valuesUnresolved(app, nil)
}

// valuesUnresolved is the error of an app whose values source has not
// resolved a revision, cause the values source's poll error (nil: none
// known).
func valuesUnresolved(app config.App, cause error) error {
	err := fmt.Errorf("app %s: helm.valuesSource %q has not resolved a revision yet, so the values files %v cannot be read: check that source's url, branch and credentials (each failed poll of it is logged as \"source poll failed\"); nothing is applied or pruned until it resolves", app.Name, app.Helm.ValuesSource, app.Helm.ValuesFiles)
	if cause == nil {
		return err
	}
	return fmt.Errorf("%w: %w", err, cause)
}

// PollError is a failed poll's error as an app of it sees it: the
// source's, or, for an app whose values source it is and that has no
// revision of it yet (so the app was never rendered), an error that
// says the app's values files cannot be read until that source resolves.
func (r *Runner) PollError(app config.App, ev source.Event) error {
	if app.Source == ev.Source {
		return ev.Err
	}
	if src := r.sources[ev.Source]; src != nil {
		if _, ok := src.Last(); ok {
			return ev.Err
		}
	}
	return valuesUnresolved(app, ev.Err)
}

// withValuesRoot points the chart's values files at where the app reads
// them: the values source's tree when rev joins one; the chart package
// (dir, the chart's directory: the expanded archive, or --path) for a
// chart of a Helm repository source; the tree's root (the default)
// otherwise: a Git source's repository, an oci source's artifact, whose
// root is the chart's.
func withValuesRoot(opts planner.HelmOptions, app config.App, rev source.Revision, dir string) planner.HelmOptions {
	if rev.Values != nil {
		opts.ValuesRoot, opts.ValuesFrom = rev.Values.Dir, "source "+rev.Values.Source
	} else if ref, ok := ChartRefOf(app); ok {
		opts.ValuesRoot, opts.ValuesFrom = dir, "chart "+ref.Chart
	}
	return opts
}
