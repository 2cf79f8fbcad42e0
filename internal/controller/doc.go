// Package controller reconciles syncd's custom resources, the sources
// (GitSource, HelmSource, OCISource) and App (package api/v1alpha1), the
// in-cluster alternative to the apps of a syncd.yaml file.
//
// A Controller watches Apps and the sources with dynamic informers and
// queues App keys on a rate-limited work queue (client-go workqueue);
// several workers take keys, and the queue never hands one key to two
// workers at once, so Apps reconcile in parallel while one App's
// reconciles are serialised. An App edit queues that App only; a
// source edit queues the Apps that reference it.
//
// Each App and its source (Source: one of the three kinds, sources.go)
// are translated into one config.Source (sources[].git, .helm or .oci)
// and one config.App (translate.go), checked with the file config's own validation, and run
// through the same library path as the file's apps: a reconcile.Runner
// renders, applies and prunes it through the shared inventory. Each App
// keeps its own Git cache (CacheDir/apps/<hash>, a keyed hash of its
// namespace, name and UID that no other App can name; cachedir.go), so
// a slow or broken clone of one App never holds another. No source may
// read the local disk (a file URL, a path, another scheme:
// localsource.go).
//
// Sources have a work queue of their own: each is checked (spec and
// Secrets, not the repository) when created or edited, and its status
// says whether Apps can use it (sourcecheck.go). What an App's poll of a
// HelmSource or an OCISource fetched is written to the source's status
// when it changes (fetch.go).
//
// Status conditions have kstatus meaning (api/v1alpha1 ConditionType);
// Events are recorded on Apps; an App whose name collides with a file
// app or another App is refused (names.go) and never prunes.
//
// A push webhook (package webhook) polls a GitSource through the
// controller's Sources and Trigger (push.go): they list the GitSources
// that the Apps this replica runs use, and queue those Apps at once, as
// if the source's interval had come due; a GitSource no such App uses is
// not listed, and a controller that does not run lists none.
//
// Each App has the file daemon's drift watcher (drift.go), pointed at
// the plan it last applied (rendered, in drift mode detect); a suspended
// App keeps it. The Secrets GitSources and Apps name are watched by
// metadata (secrets.go), so their edits queue the users; dependsOn
// holds an App until the Apps it names are ready (depends.go); the
// operator's Tenancy decides cross-namespace sources and the default
// service account (tenancy.go).
//
// The controller does NOT send the file config's alerts for Apps, does
// not watch ConfigMaps, and re-polls an App's source by requeueing the
// App after the source's interval (or at its schedule's next time), not
// through source.Scheduler. See docs/apps.md for what else is not
// implemented.
package controller
