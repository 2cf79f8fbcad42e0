// Package livecache keeps the one watch cache of an app's live objects
// that every stage reads: one Cache per cluster, holding one informer per
// resource, namespace, selector and user (the identity it lists and
// watches as) of that cluster, shared by the
// inventory (the applier's live reads and no-op skip) and the drift
// watcher (its events and the copies it judges), the way
// controller-runtime's cache is both a reader and an informer source.
//
// The cluster is part of every Key, and a Cache refuses the keys of
// another cluster: an app that moves between clusters, or two apps of one
// name on two clusters, never read one cluster's objects from the other's
// informer. The package cannot tell which cluster a client talks to: the
// holder that names a Key's cluster must pass that cluster's client.
//
// Each informer stores an Object: the object's metadata, typed as a
// metadata-only informer keeps it (managedFields as raw bytes), and its
// other top-level fields but status (which no consumer reads) as JSON,
// decoded when the drift watcher judges the object. The
// transform that makes an Object runs once per event, before the object
// is stored, so the decoded object is dropped at once.
//
// An informer runs while someone holds it (Acquire, Release) or until the
// Cache stops. The package never retries, logs or decides anything on its
// own: a watch error is handed to the holders (OnWatchError), and whether
// a read falls back to the API server is each consumer's call. It does not
// guarantee that a cached copy is the newest: callers that just wrote an
// object compare resourceVersions.
package livecache
